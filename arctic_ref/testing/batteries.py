"""The conformance batteries behind ``arctic-ref check``: each runs on embedded defaults and returns
a ``BatteryResult`` row (pass/fail/skip, how much was compared, key figures)."""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from arctic_ref.spec.rejection import rejection_sample
from arctic_ref.suffix.cache import SuffixDecodingCache
from arctic_ref.suffix.simulate import SimulationConfig, replay, summarize
from arctic_ref.suffix.workload import code_edit_trace
from arctic_ref.testing.bug_replays import BUG_REPLAYS, check_draft_selection
from arctic_ref.testing.differential import run_differential
from arctic_ref.testing.rejection_kit import check_rejection_sampler
from arctic_ref.testing.rejection_report import Status
from arctic_ref.testing.stateful import reference_trees
from arctic_ref.testing.upstream import UPSTREAM_AVAILABLE, UpstreamSuffixDecodingCache

Progress = Callable[[str], None]


class Outcome(StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"


@dataclass(frozen=True, slots=True, kw_only=True)
class BatteryResult:
    """One row of the report."""

    name: str
    outcome: Outcome
    compared: int
    """How many results were compared with an oracle."""
    figures: dict[str, str] = field(default_factory=dict)
    detail: str = ""
    seconds: float = 0.0


def _timed(run: Callable[[], BatteryResult]) -> BatteryResult:
    began = time.perf_counter()
    result = run()
    return BatteryResult(
        name=result.name,
        outcome=result.outcome,
        compared=result.compared,
        figures=result.figures,
        detail=result.detail,
        seconds=time.perf_counter() - began,
    )


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


def rejection_kit() -> BatteryResult:
    """The conformance kit (quick level: 400 exact cases, 50,000 requests per statistical test)."""
    report = check_rejection_sampler(rejection_sample, level="quick", name="rejection_sample")
    failed = report.failed()
    passed = sum(1 for c in report.checks if c.status is Status.PASS)
    worst = min((c.p_value for c in report.checks if c.p_value is not None), default=None)
    return BatteryResult(
        name="rejection sampler conformance kit (quick)",
        outcome=Outcome.FAIL if failed else Outcome.PASS,
        compared=passed,
        figures={
            "checks passed": f"{passed}/{len(report.checks)}",
            "smallest p-value": f"{worst:.3g}" if worst else "-",
        },
        detail=", ".join(failed),
    )


def draft_selection() -> BatteryResult:
    """Intended rules pass every check; each seed bug replay fails a check named by it."""
    intended = [c for c in check_draft_selection() if not c.passed]
    uncaught = [
        r.id for r in BUG_REPLAYS
        if r.must_fail and not any(not c.passed and r.id in c.replays for c in check_draft_selection(r.rules))
    ]  # fmt: skip
    problems = [f"intended fails {c.id}" for c in intended] + [f"{rid} not caught" for rid in uncaught]
    return BatteryResult(
        name="draft selection and seed bug replays (B1-B4)",
        outcome=Outcome.FAIL if problems else Outcome.PASS,
        compared=len(BUG_REPLAYS),
        figures={"replays caught": str(sum(1 for r in BUG_REPLAYS if r.must_fail) - len(uncaught))},
        detail="; ".join(problems),
    )


def all_batteries() -> list[tuple[str, Callable[[], BatteryResult]]]:
    """Every battery of ``arctic-ref check``, in the order it runs them."""
    return [
        ("suffix vs naive", suffix_vs_naive),
        ("suffix vs upstream", suffix_vs_upstream),
        ("suffix replay (path)", lambda: suffix_replay(False, 60)),
        ("suffix replay (tree)", lambda: suffix_replay(True, 20)),
        ("suffix invariants", suffix_integrity),
        ("rejection sampler kit", rejection_kit),
        ("draft selection", draft_selection),
    ]


def run_batteries(progress: Progress) -> list[BatteryResult]:
    results = []
    batteries = all_batteries()
    for index, (label, battery) in enumerate(batteries, start=1):
        progress(f"[{index}/{len(batteries)}] {label} ...")
        try:
            result = _timed(battery)
        except Exception as error:  # a crashing battery is a failed battery, reported with its error
            result = BatteryResult(
                name=label, outcome=Outcome.FAIL, compared=0, detail=f"{type(error).__name__}: {error}"
            )
        progress(f"[{index}/{len(batteries)}] {label}: {result.outcome} ({result.seconds:.1f} s)")
        results.append(result)
    return results


def format_report(results: list[BatteryResult]) -> str:
    """A plain-text table: one row per battery."""
    rows = [("battery", "result", "compared", "seconds", "figures")]
    for r in results:
        figures = ", ".join(f"{k} {v}" for k, v in r.figures.items())
        rows.append(
            (
                r.name,
                str(r.outcome),
                str(r.compared),
                f"{r.seconds:.1f}",
                figures + (f" | {r.detail}" if r.detail else ""),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = []
    for n, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4])
        if n == 0:
            lines.append("-" * (sum(widths) + 8 + len(row[4])))
    return "\n".join(lines)
