"""vLLM's speculative-decoding plumbing bugs (bugs.md V-11, V-12, V-14), never patches: V-11 and
V-14 as one ``RunnerStages`` value each, given to a running ``ReferenceRunner``; V-12 as a drafter
around ``NgramDrafter``. The runner checks of ``in_runner`` catch the first two: greedy losslessness
(V-11) and D2 in the runner, a row that emitted nothing gets no draft (V-14);
``check_ngram_rows`` catches V-12."""

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from arctic_ref.runner.drafters import NgramDrafter
from arctic_ref.runner.stages import INTENDED_STAGES, RunnerStages
from arctic_ref.spec.drafts import DraftRow


def drafts_one_slot_early(known: Sequence[int], drafts: Sequence[int]) -> list[int]:
    """V-11: the draft ids are written into the token buffer at the wrong offset, here
    ``num_tokens_no_spec − 1``: they overwrite the last sampled token, and the buffer's last slot
    keeps a stale id (0, a zeroed buffer's). A representative wrong offset: the row feeds
    [d1 … dk, 0] where [s, d1 … dk] was meant."""
    if not drafts:
        return [*known]
    return [*known[:-1], *drafts, 0]


def discarded_counted_valid(valid: Sequence[int], discarded: Sequence[int]) -> list[int]:
    """V-14: the valid mask built for padded speculation counts a partial prefill's discarded
    sample as valid, so the drafter drafts that row from a token it never emitted."""
    return list(valid) or list(discarded)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerReplay:
    """One vLLM plumbing bug as an injectable ``RunnerStages`` value."""

    id: str
    upstream: str
    stages: RunnerStages


RUNNER_REPLAYS: Final = (
    RunnerReplay(
        id="V-11",
        upstream="vLLM: draft ids written at the wrong offset of the token buffer",
        stages=replace(INTENDED_STAGES, row_tokens=drafts_one_slot_early),
    ),
    RunnerReplay(
        id="V-14",
        upstream="vLLM: wrong valid mask with padded speculation and chunked prefill",
        stages=replace(INTENDED_STAGES, drafter_sample=discarded_counted_valid),
    ),
)


@dataclass(frozen=True, slots=True)
class MisplacedNgramDrafter:
    """V-12: vLLM's batch n-gram wrote the draft of the i-th request that needs one at slot i of its
    result arrays, and each request then read the slot of its own batch index. With a row without a
    sample in between (a partial prefill), later rows read another row's draft, or an empty slot."""

    inner: NgramDrafter

    def propose(self, rows: Sequence[DraftRow]) -> list[list[int]]:
        drafts = self.inner.propose(rows)
        wanted = [i for i, row in enumerate(rows) if row.sampled]
        slots = [drafts[i] for i in wanted]
        out: list[list[int]] = [[] for _ in rows]
        for i in wanted:
            out[i] = slots[i] if i < len(slots) else []
        return out
