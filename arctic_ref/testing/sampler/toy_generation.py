"""Generation drivers over toy models, for the end-to-end properties of verification:

- E20: greedy generation with any drafter equals plain greedy decoding, token for token (EOS inside an
  accepted run, ``max_tokens`` and ``max_model_len`` included);
- S5: sampled generation with any drafter has exactly the target model's output distribution.

The models are tables of logits indexed by the previous token(s), so exact answers are computable.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import torch
from torch import Tensor

from arctic_ref.spec.metadata import SamplingMetadata
from arctic_ref.spec.profile import MAX_SPEC_LEN
from arctic_ref.spec.sampling import compute_target_probs
from arctic_ref.testing.sampler.malformed import require_well_formed
from arctic_ref.testing.sampler.sampler_fn import RejectionSampleFn

#: A drafter: (contexts [B, L], model table, k, generator) → (drafts [B, k], draft probs [B, k, V] or None).
ToyDrafter = Callable[[Tensor, Tensor, int, torch.Generator], tuple[Tensor, Tensor | None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class NamedDrafter:
    name: str
    k: int
    propose: ToyDrafter


def _model_logits(table: Tensor, contexts: Tensor) -> Tensor:
    """Order-1 Markov model: the logits of the next token are ``table[last token]``."""
    return table[contexts[:, -1]]


def _rollout(table: Tensor, contexts: Tensor, tokens: Tensor) -> Tensor:
    """Target logits after ``contexts`` and after each prefix of ``tokens``: [B, k+1, V]."""
    previous = torch.cat([contexts[:, -1:], tokens], dim=1)
    return table[previous]


def _none(contexts: Tensor, table: Tensor, k: int, g: torch.Generator) -> tuple[Tensor, Tensor | None]:
    return contexts.new_zeros((contexts.shape[0], 0)), None


def _chain(contexts: Tensor, table: Tensor, k: int, pick: Callable[[Tensor], Tensor]) -> Tensor:
    out = []
    last = contexts[:, -1]
    for _ in range(k):
        last = pick(table[last])
        out.append(last)
    return torch.stack(out, dim=1)


def _oracle(contexts: Tensor, table: Tensor, k: int, g: torch.Generator) -> tuple[Tensor, Tensor | None]:
    return _chain(contexts, table, k, lambda logits: logits.argmax(dim=-1)), None


def _adversarial(contexts: Tensor, table: Tensor, k: int, g: torch.Generator) -> tuple[Tensor, Tensor | None]:
    return _chain(contexts, table, k, lambda logits: logits.argmin(dim=-1)), None


def _junk(contexts: Tensor, table: Tensor, k: int, g: torch.Generator) -> tuple[Tensor, Tensor | None]:
    return torch.randint(0, table.shape[1], (contexts.shape[0], k), generator=g), None


def _copier(contexts: Tensor, table: Tensor, k: int, g: torch.Generator) -> tuple[Tensor, Tensor | None]:
    """Suffix-like: continue from the previous occurrence of the last token, else repeat it."""
    rows = []
    for row in contexts.tolist():
        last = row[-1]
        earlier = [i for i, t in enumerate(row[:-1]) if t == last]
        source = row[earlier[-1] + 1 :] if earlier else []
        rows.append((source + [last] * k)[:k])
    return torch.tensor(rows, dtype=torch.int64).reshape(contexts.shape[0], k), None


def _draft_model(contexts: Tensor, table: Tensor, k: int, g: torch.Generator) -> tuple[Tensor, Tensor | None]:
    """d ~ q with q a different (flattened) model, passed along."""
    q_table = torch.softmax(table.flip(-1) * 0.5, dim=-1)
    out, probs = [], []
    last = contexts[:, -1]
    for _ in range(k):
        q = q_table[last]
        last = torch.multinomial(q, 1, generator=g).squeeze(1)
        out.append(last)
        probs.append(q)
    return torch.stack(out, dim=1), torch.stack(probs, dim=1)


GREEDY_DRAFTERS: Final = (
    NamedDrafter(name="none", k=0, propose=_none),
    NamedDrafter(name="oracle argmax", k=4, propose=_oracle),
    NamedDrafter(name="adversarial", k=3, propose=_adversarial),
    NamedDrafter(name="random junk", k=4, propose=_junk),
    NamedDrafter(name="context copier", k=5, propose=_copier),
    NamedDrafter(name="draft model", k=2, propose=_draft_model),
)
SAMPLED_DRAFTERS: Final = (
    NamedDrafter(name="none", k=0, propose=_none),
    NamedDrafter(name="oracle argmax", k=2, propose=_oracle),
    NamedDrafter(name="adversarial", k=2, propose=_adversarial),
    NamedDrafter(name="random junk k=1", k=1, propose=_junk),
    NamedDrafter(name="random junk k=2", k=2, propose=_junk),
    NamedDrafter(name="random junk k=4", k=4, propose=_junk),
    NamedDrafter(name="context copier", k=3, propose=_copier),
    NamedDrafter(name="draft model", k=2, propose=_draft_model),
)


def speculative_step(
    sampler: RejectionSampleFn,
    table: Tensor,
    contexts: Tensor,
    drafts: Tensor,
    draft_probs: Tensor | None,
    meta: SamplingMetadata,
    generator: torch.Generator,
) -> list[list[int]]:
    """One engine step for B requests that each carry k drafts: the bonus from the ordinary sampler
    (argmax for greedy rows, an exponential race on the processed row otherwise), then verification."""
    num_reqs, k = drafts.shape
    vocab = table.shape[1]
    rows = _rollout(table, contexts, drafts)  # [B, k+1, V]
    counts = [k] * num_reqs
    cu = torch.arange(1, num_reqs + 1, dtype=torch.int64) * k
    bonus_logits = rows[:, k, :]
    if meta.all_greedy:
        bonus = bonus_logits.argmax(dim=-1)
    else:
        bonus_probs = compute_target_probs(bonus_logits, torch.arange(1, num_reqs + 1), meta)
        race = bonus_probs / torch.empty_like(bonus_probs).exponential_(generator=generator)
        bonus = race.argmax(dim=-1)
    out = sampler(
        drafts.reshape(-1),
        counts,
        max(k, 1),
        cu,
        None if draft_probs is None else draft_probs.reshape(-1, vocab).to(torch.float32),
        rows[:, :k, :].reshape(-1, vocab).to(torch.float32),
        bonus.unsqueeze(1),
        meta,
    )
    # Every row emits 1..k+1 ids, so the generation loops below end (MalformedOutput otherwise).
    return [[t for t in row if t != -1] for row in require_well_formed(out, counts, vocab).tolist()]


def greedy_generation_matches(
    sampler: RejectionSampleFn,
    drafter: NamedDrafter,
    *,
    seed: int,
    greedy_temperature: float = 0.0,
    vocab: int = 8,
    eos: int = 0,
    max_tokens: int = 12,
    max_model_len: int = 14,
) -> str:
    """ "" if speculative greedy generation equals plain greedy decoding for three prompts."""
    g = torch.Generator().manual_seed(seed)
    table = torch.round(torch.randn(vocab, vocab, generator=g) * 3) / 2  # ties on purpose
    prompts = [[1, 2], [3], [4, 5, 6]]
    meta = SamplingMetadata(
        temperature=torch.full((1,), greedy_temperature), all_greedy=True, all_random=False, top_k=None, top_p=None
    )
    for prompt in prompts:
        plain = list(prompt)
        while len(plain) - len(prompt) < max_tokens and len(plain) < max_model_len:
            plain.append(int(table[plain[-1]].argmax()))
            if plain[-1] == eos:
                break
        spec = list(prompt)
        while (
            len(spec) - len(prompt) < max_tokens
            and len(spec) < max_model_len
            and (len(spec) == len(prompt) or spec[-1] != eos)
        ):
            k = min(drafter.k, MAX_SPEC_LEN, max_model_len - len(spec) - 1)
            context = torch.tensor([spec])
            drafts, probs = drafter.propose(context, table, k, g) if k > 0 else (context.new_zeros((1, 0)), None)
            emitted = speculative_step(sampler, table, context, drafts, probs, meta, g)[0]
            for token in emitted:
                spec.append(token)
                if token == eos or len(spec) - len(prompt) >= max_tokens or len(spec) >= max_model_len:
                    break
        if spec != plain:
            return f"drafter {drafter.name}: prompt {prompt}: speculative {spec[len(prompt) :]} vs greedy {plain[len(prompt) :]}"
    return ""


def sample_sequences(
    sampler: RejectionSampleFn,
    drafter: NamedDrafter,
    table: Tensor,
    prompt: list[int],
    *,
    count: int,
    length: int,
    top_k: int | None,
    seed: int,
) -> tuple[Tensor, float]:
    """``count`` sampled continuations of ``length`` tokens (lockstep batches), and the mean number
    of verification steps each needed."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    produced: list[list[int]] = [[] for _ in range(count)]
    steps = 0
    active = list(range(count))
    while active:
        steps += len(active)
        by_length: dict[int, list[int]] = {}
        for i in active:
            by_length.setdefault(len(produced[i]), []).append(i)
        for group in by_length.values():  # contexts of equal length batch together
            ctx = torch.tensor([prompt + produced[i] for i in group], dtype=torch.int64)
            k = drafter.k
            drafts, probs = drafter.propose(ctx, table, k, g) if k > 0 else (ctx.new_zeros((len(group), 0)), None)
            meta = SamplingMetadata(
                temperature=torch.ones(len(group)),
                all_greedy=False,
                all_random=True,
                top_k=None if top_k is None else torch.full((len(group),), top_k, dtype=torch.int64),
                top_p=None,
            )
            emitted = speculative_step(sampler, table, ctx, drafts, probs, meta, g)
            for i, tokens in zip(group, emitted, strict=True):
                produced[i].extend(tokens)
        active = [i for i in active if len(produced[i]) < length]
    out = torch.tensor([p[:length] for p in produced], dtype=torch.int64)
    return out, steps / count


def exact_sequence_distribution(table: Tensor, prompt: list[int], length: int, top_k: int | None) -> Tensor:
    """P(x₁..x_length | prompt) for every sequence, flattened in base-V order."""
    vocab = table.shape[1]
    meta = SamplingMetadata(
        temperature=torch.ones(vocab),
        all_greedy=False,
        all_random=True,
        top_k=None if top_k is None else torch.full((vocab,), top_k),
        top_p=None,
    )
    step = compute_target_probs(table.to(torch.float32), torch.arange(1, vocab + 1), meta).to(
        torch.float64
    )  # [prev, next]
    dist = step[prompt[-1]]
    for _ in range(length - 1):
        dist = (dist.unsqueeze(1) * step[torch.arange(vocab).repeat(dist.numel() // vocab)]).reshape(-1)
    return dist
