"""Hand-built forward steps for tests that call a forward directly (no scheduler): requests with
given row counts, their history advanced in place, and pad rows."""

import torch

from arctic_ref.model.attention import AttentionMetadata
from arctic_ref.model.kv_cache import BLOCK_SIZE
from arctic_ref.model.llama import ForwardInputs


def mixed_step(
    counts: list[int],
    history: dict[int, int],
    vocab: int,
    g: torch.Generator,
    pad: int,
    device: torch.device | str = "cpu",
) -> ForwardInputs:
    """Rows for requests 0, 1, … (``counts[i]`` new tokens of request i after its ``history[i]``
    earlier ones; request i owns blocks 1 + 4i …, so at most 64 tokens each), then ``pad`` pad rows
    (id 0, position 0, slot −1). Random ids from ``g``; ``history`` is advanced."""
    ids, positions, slots, starts, contexts = [], [], [], [0], []
    for req, count in enumerate(counts):
        begin, base = history[req], (1 + 4 * req) * BLOCK_SIZE
        ids += torch.randint(0, vocab, (count,), generator=g).tolist()
        positions += list(range(begin, begin + count))
        slots += [base + p for p in range(begin, begin + count)]
        starts.append(starts[-1] + count)
        contexts.append(torch.arange(base, base + begin + count, device=device))
        history[req] = begin + count
    return ForwardInputs(
        input_ids=torch.tensor(ids + [0] * pad, device=device),
        positions=torch.tensor(positions + [0] * pad, device=device),
        slot_mapping=torch.tensor(slots + [-1] * pad, device=device),
        attention=AttentionMetadata(
            query_start_loc=tuple(starts), seq_lens=tuple(history.values()), context_slots=tuple(contexts)
        ),
    )
