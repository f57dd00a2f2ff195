"""Runs of arctic_ref's own suffix cache against independent oracles: the code-edit replay beside
upstream's C++ cache (identical drafts, and the speed ratios), and every invariant of
docs/suffix-decoding.md §6.1 after a replay with FIFO eviction."""

from arctic_ref.suffix.cache import SuffixDecodingCache
from arctic_ref.suffix.simulate import SimulationConfig, replay, summarize
from arctic_ref.suffix.upstream import UpstreamSuffixDecodingCache
from arctic_ref.suffix.workload import code_edit_trace
from arctic_ref.testing.check import Verdict


def suffix_replay(tree: bool, requests: int) -> Verdict:
    """The code-edit workload through ours and upstream: identical drafts, and the speed ratios."""
    trace = code_edit_trace(requests=requests)
    config = SimulationConfig(use_tree_spec=tree)
    ours_cache = SuffixDecodingCache(config.max_depth, config.max_cached_requests)
    ours = replay(ours_cache, trace, config, keep_drafts=True)
    summary = summarize(ours)
    live = ours_cache._global_tree.count([])
    nodes = ours_cache._global_tree.num_nodes()
    figures = {
        "tokens/step": f"{summary['tokens_per_step']:.2f}",
        "accepted/step": f"{summary['accepted_per_step']:.2f}",
        "nodes/live token": f"{nodes / max(live, 1):.2f}",
    }
    what = "drafts of the code-edit replay, arctic_ref's cache against upstream's"
    if nodes > 2 * live:
        return Verdict(passed=False, compared=what, figures=figures, detail=f"{nodes} nodes > 2 x {live}")
    if UpstreamSuffixDecodingCache is None:
        return Verdict(passed=True, compared=what, figures=figures, skipped="arctic-inference not installed")
    theirs = replay(
        UpstreamSuffixDecodingCache(config.max_depth, config.max_cached_requests), trace, config, keep_drafts=True
    )
    reference = summarize(theirs)
    figures["spec x upstream"] = f"{_ratio(summary['spec_us_per_call'], reference['spec_us_per_call']):.1f}"
    figures["extend x upstream"] = f"{_ratio(summary['update_us_per_token'], reference['update_us_per_token']):.1f}"
    mismatch = next((i for i, (a, b) in enumerate(zip(ours.drafts, theirs.drafts, strict=True)) if a != b), None)
    if mismatch is not None or len(ours.drafts) != len(theirs.drafts):
        return Verdict(
            passed=False,
            compared=what,
            count=len(ours.drafts),
            figures=figures,
            detail=f"first differing draft at step {mismatch}",
        )
    return Verdict(passed=True, compared=what, count=len(ours.drafts), figures=figures)


def _ratio(ours: float | int | None, theirs: float | int | None) -> float:
    return float(ours or 0.0) / float(theirs) if theirs else float("nan")


def suffix_integrity() -> Verdict:
    """Every invariant of §6.1, recomputed by brute force, after a real replay."""
    cache = SuffixDecodingCache(64, 8)
    replay(cache, code_edit_trace(requests=16, seed=1), SimulationConfig())
    problem = cache._global_tree.check_integrity()
    return Verdict(
        passed=not problem,
        compared="the global tree's invariants, recomputed by brute force",
        count=cache._global_tree.count([]),
        figures={"nodes": str(cache._global_tree.num_nodes()), "cached": str(len(cache.cached_requests))},
        detail=problem,
    )
