"""``RunnerStages``: the plumbing stages of the engine step that a bug replay may swap (docs/runner.md §1.2
rule 2 and stage 6), the intended ones by default. A replay is a value given to ``ReferenceRunner``,
never a patch (``arctic_ref.testing.drafting.runner_replays`` holds vLLM's V-11 and V-14)."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass


def row_tokens(known: Sequence[int], drafts: Sequence[int]) -> list[int]:
    """Rule 2: the token buffer a row feeds from: prompt + output (``num_tokens_no_spec`` of them),
    then this step's scheduled drafts, written at offset ``num_tokens_no_spec``."""
    return [*known, *drafts]


def drafter_sample(valid: Sequence[int], discarded: Sequence[int]) -> list[int]:
    """Stage 6's valid mask as the drafter sees it: a row's valid tokens. A partial prefill's
    ``discarded`` sample is never valid (rule 4), so such a row gets no draft."""
    return list(valid)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerStages:
    row_tokens: Callable[[Sequence[int], Sequence[int]], list[int]] = row_tokens
    drafter_sample: Callable[[Sequence[int], Sequence[int]], list[int]] = drafter_sample


INTENDED_STAGES = RunnerStages()
