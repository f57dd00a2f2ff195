"""The suffix-decoding batteries of ``arctic-ref check``: the tree against the naive oracle and
upstream, the code-edit replay, the invariants after eviction."""

from arctic_ref.suffix.cache import SuffixDecodingCache
from arctic_ref.suffix.simulate import SimulationConfig, replay, summarize
from arctic_ref.suffix.workload import code_edit_trace
from arctic_ref.testing.battery import BatteryResult, Outcome
from arctic_ref.testing.suffix.differential import run_differential
from arctic_ref.testing.suffix.machines import reference_trees
from arctic_ref.testing.suffix.upstream import UPSTREAM_AVAILABLE, UpstreamSuffixDecodingCache


def suffix_vs_naive(seed: int = 0) -> BatteryResult:
    report = run_differential(reference_trees(with_upstream=False), seed=seed, trials=120, steps=40)
    return BatteryResult(
        name="suffix tree vs naive oracle (random ops)",
        outcome=Outcome.FAIL if report.failures else Outcome.PASS,
        compared=report.speculate_calls,
        figures={"trials": str(report.trials), "ops": str(report.operations)},
        detail=report.failures[0] if report.failures else "",
    )


def suffix_vs_upstream(seed: int = 0) -> BatteryResult:
    name = "suffix tree vs upstream C++ (random ops)"
    if not UPSTREAM_AVAILABLE:
        return BatteryResult(name=name, outcome=Outcome.SKIP, compared=0, detail="arctic-inference not installed")
    impls = [impl for impl in reference_trees() if impl.name != "naive"]
    report = run_differential(impls, seed=seed, trials=400, steps=40)
    return BatteryResult(
        name=name,
        outcome=Outcome.FAIL if report.failures else Outcome.PASS,
        compared=report.speculate_calls,
        figures={"trials": str(report.trials), "ops": str(report.operations)},
        detail=report.failures[0] if report.failures else "",
    )


def suffix_replay(tree: bool, requests: int) -> BatteryResult:
    """The code-edit workload through ours and upstream: identical drafts, and the speed ratios."""
    mode = "tree" if tree else "path"
    name = f"suffix cache code-edit replay ({mode} drafts, {requests} requests)"
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
    if nodes > 2 * live:
        return BatteryResult(
            name=name, outcome=Outcome.FAIL, compared=0, figures=figures, detail=f"{nodes} nodes > 2 x {live}"
        )
    if UpstreamSuffixDecodingCache is None:
        return BatteryResult(
            name=name, outcome=Outcome.SKIP, compared=0, figures=figures, detail="arctic-inference not installed"
        )
    theirs = replay(
        UpstreamSuffixDecodingCache(config.max_depth, config.max_cached_requests), trace, config, keep_drafts=True
    )
    reference = summarize(theirs)
    figures["spec x upstream"] = f"{_ratio(summary['spec_us_per_call'], reference['spec_us_per_call']):.1f}"
    figures["extend x upstream"] = f"{_ratio(summary['update_us_per_token'], reference['update_us_per_token']):.1f}"
    mismatch = next((i for i, (a, b) in enumerate(zip(ours.drafts, theirs.drafts, strict=True)) if a != b), None)
    if mismatch is not None or len(ours.drafts) != len(theirs.drafts):
        return BatteryResult(
            name=name,
            outcome=Outcome.FAIL,
            compared=len(ours.drafts),
            figures=figures,
            detail=f"first differing draft at step {mismatch}",
        )
    return BatteryResult(name=name, outcome=Outcome.PASS, compared=len(ours.drafts), figures=figures)


def _ratio(ours: float | int | None, theirs: float | int | None) -> float:
    return float(ours or 0.0) / float(theirs) if theirs else float("nan")


def suffix_integrity() -> BatteryResult:
    """Every invariant of §6.1, recomputed by brute force, after a real replay."""
    cache = SuffixDecodingCache(64, 8)
    replay(cache, code_edit_trace(requests=16, seed=1), SimulationConfig())
    problem = cache._global_tree.check_integrity()
    return BatteryResult(
        name="suffix tree invariants after replay with FIFO eviction",
        outcome=Outcome.FAIL if problem else Outcome.PASS,
        compared=cache._global_tree.count([]),
        figures={"nodes": str(cache._global_tree.num_nodes()), "cached": str(len(cache.cached_requests))},
        detail=problem,
    )
