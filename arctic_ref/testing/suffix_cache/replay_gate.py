"""The replay gate: the built-in code-edit trace through arctic_ref's cache and yours, every draft
field for field, float32 bit for bit."""

from collections.abc import Callable
from typing import Any

from arctic_ref.suffix.cache import SuffixDecodingCache
from arctic_ref.suffix.simulate import SimulationConfig, replay
from arctic_ref.suffix.workload import code_edit_trace
from arctic_ref.testing.check import Verdict
from arctic_ref.testing.packed_draft import PackedDraft, first_field_difference


def _from_replay(packed: tuple[object, ...]) -> PackedDraft:
    """``simulate.pack_draft``'s tuple (same field order) as a ``PackedDraft``."""
    token_ids, parents, probs, score, match_len = packed
    return PackedDraft(list(token_ids), list(parents), probs, score, match_len)  # type: ignore[call-overload, arg-type]


def cache_replay(make_cache: Callable[[int, int], Any], *, requests: int = 30, tree: bool = False) -> Verdict:
    """The code-edit trace through both caches, one draft at a time."""
    trace = code_edit_trace(requests=requests)
    config = SimulationConfig(use_tree_spec=tree)
    ours = replay(SuffixDecodingCache(config.max_depth, config.max_cached_requests), trace, config, keep_drafts=True)
    theirs = replay(make_cache(config.max_depth, config.max_cached_requests), trace, config, keep_drafts=True)
    for step, (a, b) in enumerate(zip(ours.drafts, theirs.drafts, strict=False)):
        difference = first_field_difference(_from_replay(a), _from_replay(b))
        if difference:
            record = ours.steps[step] if step < len(ours.steps) else None
            where = f"request {record.req_id}, " if record is not None else ""
            return Verdict(
                passed=False,
                compared=f"drafts of the code-edit replay ({requests} requests)",
                detail=f"step {step} ({where}speculate call {step}): {difference}",
                replay=f"arctic_ref.suffix.simulate.replay(cache, code_edit_trace(requests={requests}), "
                f"SimulationConfig(use_tree_spec={tree}), keep_drafts=True), draft {step}",
            )
    if len(ours.drafts) != len(theirs.drafts):
        return Verdict(
            passed=False,
            compared="number of speculate calls in the code-edit replay",
            detail=f"arctic_ref made {len(ours.drafts)}, yours {len(theirs.drafts)}",
        )
    return Verdict(
        passed=True,
        compared=f"{len(ours.drafts)} drafts of the code-edit replay ({requests} requests)",
        count=len(ours.drafts),
    )
