"""The conformance batteries behind ``arctic-ref check``: each runs on embedded defaults and returns
a ``BatteryResult`` row (pass/fail/skip, how much was compared, key figures)."""

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum

import torch

from arctic_ref.model.config import tiny_config
from arctic_ref.model.weights import random_weights
from arctic_ref.parallel.comm import RankGroups, SoloComm
from arctic_ref.parallel.cudagraph import GraphTables, default_capture_sizes, pad_sp, pad_to
from arctic_ref.parallel.heads import base_kv_heads, kv_head_of_query, query_heads, shift_kv_heads
from arctic_ref.parallel.launch import RankInfo, spawn_ranks
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.parallel.plan import ShiftPolicy, plan_step
from arctic_ref.runner.drafters import SpeculatorDrafter, SuffixDrafter, ngram_draft, ngram_draft_longest
from arctic_ref.runner.engine import EngineConfig, SampleRecord, build_runner, run_requests
from arctic_ref.runner.prompts import builtin_prompts
from arctic_ref.runner.requests import SamplingParams
from arctic_ref.runner.scheduler import SchedulerConfig
from arctic_ref.runner.speculator import (
    ArcticSpeculator,
    SpeculatorConfig,
    propose_literal,
    select_hidden_rows,
    speculator_for,
    speculator_weights,
)
from arctic_ref.spec.drafts import INTENDED_RULES, DraftRow, arctic_config
from arctic_ref.spec.rejection import rejection_sample
from arctic_ref.suffix.cache import SuffixDecodingCache
from arctic_ref.suffix.simulate import SimulationConfig, replay, summarize
from arctic_ref.suffix.workload import code_edit_trace
from arctic_ref.testing.conformance import (
    LAYOUTS,
    LayoutCase,
    LayoutOutcome,
    compare,
    run_cases,
    run_world,
)
from arctic_ref.testing.differential import run_differential
from arctic_ref.testing.drafts.in_runner import check_replays_in_runner
from arctic_ref.testing.drafts.replays import BUG_REPLAYS, replay_by_id
from arctic_ref.testing.drafts.selection import check_draft_selection
from arctic_ref.testing.hf import TRANSFORMERS_AVAILABLE, compare_with_transformers
from arctic_ref.testing.oracles import brute_force_ngram
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


def draft_replays_in_runner() -> BatteryResult:
    """Each replay's ``DraftRules`` injected into a running ``ReferenceRunner`` (suffix and hybrid
    drafters): its drafts differ from the intended run's at some step (B4-literal: never), and greedy
    output stays lossless."""
    results = check_replays_in_runner(BUG_REPLAYS)
    problems = [f"{r.replay_id} under {r.drafter} not lossless" for r in results if not r.lossless]
    problems += [f"{r.replay_id} changed drafts ({r.first_difference})" for r in results if not r.must_fail and r.differs]
    caught = {r.replay_id for r in results if r.must_fail and r.differs}
    problems += [f"{r.id} not caught in the runner" for r in BUG_REPLAYS if r.must_fail and r.id not in caught]
    first = {r.replay_id: r.first_difference.split(":")[0] for r in results if r.differs and r.drafter == "hybrid"}
    return BatteryResult(
        name="draft replays in the runner (suffix, hybrid): caught, lossless", compared=len(results),
        outcome=Outcome.FAIL if problems else Outcome.PASS, detail="; ".join(problems),
        figures={"caught": f"{len(caught)}/{sum(r.must_fail for r in BUG_REPLAYS)}",
                 **{f"{rid} at": where for rid, where in first.items()}},
    )  # fmt: skip


def all_batteries() -> list[tuple[str, Callable[[], BatteryResult]]]:
    """Every single-process battery of ``arctic-ref check``, by id, in the order it runs them; the
    multi-process ``layouts`` group (layouts, collectives, exchanges, spec-lossless) runs last."""
    return [
        ("suffix-naive", suffix_vs_naive),
        ("suffix-upstream", suffix_vs_upstream),
        ("suffix-replay-path", lambda: suffix_replay(False, 60)),
        ("suffix-replay-tree", lambda: suffix_replay(True, 20)),
        ("suffix-invariants", suffix_integrity),
        ("rejection-kit", rejection_kit),
        ("draft-selection", draft_selection),
        ("draft-runner", draft_replays_in_runner),
        ("layout", layout_tables),
        ("heads", kv_heads_theorem),
        ("cudagraph", cudagraph_tables),
        ("model-hf", model_vs_transformers),
        ("suffix-runner", suffix_runner_rules),
        ("padding", padding_neutral),
        ("speculator", speculator_checks),
    ]


def run_batteries(progress: Progress, only: frozenset[str] | None = None) -> list[BatteryResult]:
    """The selected batteries (all by default); unknown ids → ValueError naming them."""
    unknown = sorted((only or frozenset()) - set(BATTERY_IDS))
    if unknown:
        raise ValueError(f"unknown batteries {unknown}; known: {', '.join(BATTERY_IDS)}")
    results = []
    batteries = [(label, battery) for label, battery in all_batteries() if only is None or label in only]
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
    if only is not None and "layouts" not in only:
        return results
    progress("[+] layouts, collectives, exchanges, spec-lossless (multi-process, world 1, 2, 4) ...")
    try:
        group = layout_conformance(progress)
    except Exception as error:  # a crashing battery is a failed battery
        group = [
            BatteryResult(name="layouts", outcome=Outcome.FAIL, compared=0, detail=f"{type(error).__name__}: {error}")
        ]
    progress(f"[+] layouts: {', '.join(str(r.outcome) for r in group)} ({group[0].seconds:.1f} s)")
    return results + group


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


def layout_tables() -> BatteryResult:
    """Group tables for all S·T ≤ 16 (consistency of TP/SP/shift groups and shift ranks), the worked
    examples, and the validation messages V1–V10."""
    problems, cases = [], 0
    for p in range(1, 17):
        for tp in (t for t in range(1, p + 1) if p % t == 0):
            layout = ParallelLayout(p, tp, p // tp)
            cases += 1
            shift = layout.shift_group()
            if sorted(shift) != list(range(p)) or any(shift[layout.shift_rank(g)] != g for g in range(p)):
                problems.append(f"shift group of S{p // tp}xT{tp}")
            if any(layout.coords(layout.rank_of(s, t)) != (s, t) for s in range(p // tp) for t in range(tp)):
                problems.append(f"coords of S{p // tp}xT{tp}")
    worked = ParallelLayout(8, 2, 4)
    if tuple(worked.shift_rank(g) for g in range(8)) != (0, 4, 1, 5, 2, 6, 3, 7):
        problems.append("S4xT2 shift ranks")
    messages: list[tuple[Callable[[], object], str]] = [
        (lambda: ParallelLayout(6, 2, 2), "world_size(6) != tensor_parallel_size(2) * ulysses_sequence_parallel_size(2); pipeline parallelism is not supported"),
        (lambda: ParallelLayout(1, 0, 1), "tensor_parallel_size must be >= 1 (got 0)"),
        (lambda: ParallelLayout(8, 2, 4).validate_model(num_attention_heads=12, num_key_value_heads=4, intermediate_size=8), "num_attention_heads(12) is not divisible by tp(2) * sp(4) = 8"),
        (lambda: ParallelLayout(2, 2, 1).validate_model(num_attention_heads=8, num_key_value_heads=3, intermediate_size=8), "num_key_value_heads(3) and tensor_parallel_size(2): one must divide the other"),
        (lambda: ParallelLayout(3, 1, 3).validate_model(num_attention_heads=6, num_key_value_heads=2, intermediate_size=9), "kv heads per tp rank(2) and ulysses_sequence_parallel_size(3): one must divide the other"),
        (lambda: ParallelLayout(1, 1, 1).validate_model(num_attention_heads=8, num_key_value_heads=3, intermediate_size=8), "num_attention_heads(8) is not divisible by num_key_value_heads(3)"),
        (lambda: ParallelLayout(8, 2, 4).validate_model(num_attention_heads=8, num_key_value_heads=8, intermediate_size=348, shift=True), "intermediate_size(348) is not divisible by 8 (tp * sp, shift enabled)"),
        (lambda: ShiftPolicy(ParallelLayout(2, 2, 1), enabled=True), "shift parallelism requires ulysses_sequence_parallel_size > 1 (got 1)"),
        (lambda: ParallelLayout(2, 1, 2, native_sequence_parallelism=True), "ulysses sequence parallelism (sp=2) cannot be combined with native sequence parallelism"),
        (lambda: ShiftPolicy(ParallelLayout(2, 1, 2), enabled=True, threshold=-1), "shift_parallel_threshold must be >= 0 (got -1)"),
    ]  # fmt: skip
    for make, message in messages:
        try:
            make()
            problems.append(f"no error for {message!r}")
        except ValueError as error:
            if str(error) != message:
                problems.append(f"{error} != {message}")
    return BatteryResult(name="layout: group tables S·T ≤ 16, messages V1-V10", compared=cases + len(messages),
                         outcome=Outcome.FAIL if problems else Outcome.PASS, detail="; ".join(problems),
                         figures={"layouts": str(cases), "messages": str(len(messages))})  # fmt: skip


def kv_heads_theorem() -> BatteryResult:
    """T1: base and shift head sets per GPU, and the GQA map, over every valid configuration."""
    configs, problems = 0, []
    for p in range(1, 17):
        for tp in (t for t in range(1, p + 1) if p % t == 0):
            layout = ParallelLayout(p, tp, p // tp)
            for heads in range(1, 65):
                for kv in (k for k in range(1, heads + 1) if heads % k == 0):
                    try:
                        layout.validate_model(
                            num_attention_heads=heads, num_key_value_heads=kv, intermediate_size=p, shift=True
                        )
                    except ValueError:
                        continue
                    configs += 1
                    for rank in range(p):
                        held = shift_kv_heads(layout, rank, kv)
                        if base_kv_heads(layout, rank, kv) != held or any(
                            kv_head_of_query(q, heads, kv) not in held for q in query_heads(layout, rank, heads)
                        ):
                            problems.append(f"H{heads} K{kv} S{p // tp} T{tp} rank {rank}")
    return BatteryResult(name="heads: KV-cache invariance T1 (base vs shift)", compared=configs,
                         outcome=Outcome.FAIL if problems else Outcome.PASS, detail="; ".join(problems[:5]),
                         figures={"configurations": str(configs)})  # fmt: skip


def cudagraph_tables() -> BatteryResult:
    """Pad-table properties over n ≤ 4·512, capture plans and the runtime examples of §4.3."""
    sizes = default_capture_sizes(512)
    problems = []
    for n in range(0, 513):
        p = pad_to(n, sizes)
        if p < n or pad_to(p, sizes) != p or (n and p not in sizes) or (n and pad_to(n - 1, sizes) > p):
            problems.append(f"pad_to({n})")
    for sp in (2, 4):
        for n in range(1, 4 * 512 + 1, 7):
            if -(-n // sp) <= 512 and (pad_sp(n, sizes, sp) % sp or pad_sp(n, sizes, sp) < n):
                problems.append(f"pad_sp({n}, {sp})")
    tables = GraphTables.build(sizes, sp=2, threshold=64, max_num_batched_tokens=512)
    if len(tables.base) != 28 or len(tables.shift) != 11 or set(tables.base) & set(tables.shift):
        problems.append(f"capture plan S=2 thr=64: {len(tables.base)} base, {len(tables.shift)} shift")
    solo = SoloComm(0)
    groups = RankGroups(rank=0, tp=solo, sp=solo, shift=solo)
    policy = ShiftPolicy(ParallelLayout(2, 1, 2), enabled=True, threshold=64)
    wide = GraphTables.build(sizes, sp=2, threshold=64, max_num_batched_tokens=2048)
    for n, padded, graph in ((3, 4, 4), (61, 64, 64), (64, 64, 64), (65, 80, 80), (1025, 1026, None)):
        plan = plan_step(n, policy=policy, graphs=wide, groups=groups)
        if (plan.num_input_tokens, plan.graph_size) != (padded, graph):
            problems.append(f"n={n}: {plan.num_input_tokens}, {plan.graph_size}")
    return BatteryResult(name="cudagraph: pad tables, capture plans, runtime examples", compared=513 + 5,
                         outcome=Outcome.FAIL if problems else Outcome.PASS, detail="; ".join(problems[:5]),
                         figures={"sizes": str(len(sizes))})  # fmt: skip


def model_vs_transformers() -> BatteryResult:
    """runner.md §3.7 on tiny (untied, vocab 509, chunked prefill): logits within 1e-9 of HF."""
    if not TRANSFORMERS_AVAILABLE:
        return BatteryResult(name="model-hf: tiny vs transformers", outcome=Outcome.SKIP, compared=0,
                             detail="transformers is not installed")  # fmt: skip
    worst, compared = compare_with_transformers(vocab=509, budget=7)
    return BatteryResult(name="model-hf: tiny vs transformers (float64, chunks of 7)", compared=compared,
                         outcome=Outcome.PASS if worst <= 1e-9 else Outcome.FAIL,
                         figures={"max |Δlogits|": f"{worst:.1e}"})  # fmt: skip


def layout_conformance(progress: Progress) -> list[BatteryResult]:
    """L0–L8 in float64, float32 and bfloat16 on L3 and L7, collectives, exchanges, KV invariance and
    shift-logit order: one spawn per world size (1, 2, 4)."""
    began = time.perf_counter()
    low = tuple(
        replace(case, dtype=d) for case in LAYOUTS if case.name in ("L3", "L7") for d in ("float32", "bfloat16")
    )
    solo = run_cases(
        RankInfo(0, 1, "gloo"), (LAYOUTS[0], *(replace(LAYOUTS[0], dtype=d) for d in ("float32", "bfloat16")))
    )
    assert solo is not None
    outcomes = {(o.case.label, o.case.dtype): o for o in solo}
    reference = tuple(r.output_token_ids for r in outcomes[("L0", "float64")].results)
    speculative = tuple(
        replace(case, drafter=d, reference=reference)
        for case in LAYOUTS if case.name in ("L0", "L3", "L6")
        for d in ("ngram", "suffix", "oracle", "junk", "arctic-mlp", "arctic-lstm", "hybrid")
    )  # fmt: skip
    spec_solo = run_cases(RankInfo(0, 1, "gloo"), tuple(c for c in speculative if c.world_size == 1))
    assert spec_solo is not None
    outcomes |= {(o.case.label, o.case.dtype): o for o in spec_solo}
    packed = tuple(replace(case, kernels="packed") for case in LAYOUTS if case.name in ("L3", "L6"))
    checks: dict[str, float] = {}
    for world in (2, 4):
        progress(f"    spawning {world} ranks (gloo) ...")
        cases = tuple(c for c in (*LAYOUTS, *speculative, *packed) if c.world_size == world) + (
            low if world == 4 else ()
        )
        result = spawn_ranks(run_world, cases, world_size=world, timeout_s=600)[0]
        outcomes |= {(o.case.label, o.case.dtype): o for o in result.layouts}
        checks |= {f"world{world}.{k}": v for k, v in result.checks.items()}
    comparisons = [
        compare(outcomes[("L0", o.case.dtype)], o)
        for key, o in outcomes.items()
        if "+" not in key[0] and key[0] != "L0"
    ]
    failed = [c for c in comparisons if c.failed]
    f64 = [c for c in comparisons if c.dtype == "float64"]
    layouts = BatteryResult(
        name="layouts: L1-L8 vs L0 (f64), L3/L7 f32+bf16, L3/L6 packed", compared=sum(c.compared_rows for c in comparisons),
        outcome=Outcome.FAIL if failed else Outcome.PASS,
        figures={"f64 max|Δ|": f"{max(c.max_abs for c in f64):.1e}",
                 "diverged": str(sum(not c.identical_tokens for c in comparisons)),
                 "min margin": f"{min(c.min_margin for c in f64):.1e}",
                 **{f"{c.layout} {c.dtype} max|Δ|": f"{c.max_abs:.1e}" for c in comparisons if c.dtype != "float64"}},
        detail="; ".join(f"{c.layout} {c.dtype}: {c.first_divergence}" for c in failed),
        seconds=time.perf_counter() - began,
    )  # fmt: skip
    counts = _collective_problems(outcomes)
    collectives = BatteryResult(name="collectives: counts per step and mode", compared=4 + len(packed),
                                outcome=Outcome.FAIL if counts else Outcome.PASS, detail="; ".join(counts))  # fmt: skip
    bad_checks = [
        k
        for k, v in checks.items()
        if (v != 1.0 and not k.endswith("max_abs"))
        or (k.endswith("max_abs") and "raw_vs_baseline" not in k and v > 1e-9)
    ]
    bad_checks += [k for k, v in checks.items() if "raw_vs_baseline" in k and v <= 1e-3]
    exchanges = BatteryResult(name="exchanges, volumes, kv-invariance T2, cross-mode T3, logits-order, no-globals (world 2, 4)", compared=len(checks),
                              outcome=Outcome.FAIL if bad_checks else Outcome.PASS, detail=", ".join(bad_checks),
                              figures={"raw gather caught": str(all(v > 1e-3 for k, v in checks.items() if "raw_vs_baseline" in k))})  # fmt: skip
    lossless = _spec_lossless(outcomes, speculative)
    return [layouts, collectives, exchanges, lossless]


def _spec_lossless(outcomes: dict[tuple[str, str], LayoutOutcome], cases: tuple[LayoutCase, ...]) -> BatteryResult:
    """runner.md §6 item 1: every drafter on L0, L3, L6 gives L0's greedy tokens (float64), with drafts."""
    problems, drafts, accepted, verify_steps = [], 0, 0, 0
    base = outcomes[("L0", "float64")]
    for case in cases:
        outcome = outcomes[(case.label, "float64")]
        result = compare(base, outcome)
        made = sum(r.num_draft_tokens for r in outcome.results)
        if result.failed or not result.identical_tokens or made == 0:
            problems.append(f"{case.label}: drafts {made}, {result.first_divergence}")
        if case.drafter == "suffix":
            drafts += made
            accepted += sum(r.num_accepted_tokens for r in outcome.results)
            verify_steps += sum(r.num_verify_steps for r in outcome.results)
    return BatteryResult(
        name="spec-lossless: 7 drafters on L0, L3, L6", compared=len(cases),
        outcome=Outcome.FAIL if problems else Outcome.PASS, detail="; ".join(problems),
        figures={"suffix acc": f"{accepted / drafts:.2f} ({accepted}/{drafts})" if drafts else "-",
                 "mean emitted per verify step": f"{(accepted + verify_steps) / verify_steps:.2f}" if verify_steps else "-"},
    )  # fmt: skip


def _collective_problems(outcomes: dict[tuple[str, str], LayoutOutcome]) -> list[str]:
    layers = 4
    expected = {
        "L1": {("all_reduce", "tp"): 1 + 2 * layers, ("all_gather", "tp"): 1},
        "L2": {("all_to_all", "sp"): 2 * layers, ("all_gather", "sp"): 1},
        "L3": {("all_reduce", "tp"): 1 + 2 * layers, ("all_to_all", "sp"): 2 * layers, ("all_gather", "sp"): 1, ("all_gather", "tp"): 1},
        "L7": {("all_reduce", "shift"): 1 + 2 * layers, ("all_gather", "shift"): 1},
    }  # fmt: skip
    problems = []
    for name, per_step in expected.items():
        outcome = outcomes[(name, "float64")]
        steps = len({r.step for r in outcome.records})
        if dict(outcome.collectives) != {k: v * steps for k, v in per_step.items()}:
            problems.append(f"{name}: {dict(outcome.collectives)}")
    for (label, dtype), outcome in outcomes.items():  # the fused forward's structure: the same calls
        if outcome.case.kernels != "reference":
            reference = outcomes[(outcome.case.name, dtype)]
            if outcome.collectives != reference.collectives:
                problems.append(f"{label}: {dict(outcome.collectives)} vs {dict(reference.collectives)}")
    return problems


def _draft_row(req: str, tokens: list[int], prompt: int, sampled: list[int]) -> DraftRow:
    return DraftRow(req_id=req, token_ids=tokens, num_prompt_tokens=prompt, sampled=sampled)


def suffix_runner_rules() -> BatteryResult:
    """runner.md §2.1 (lazy start, stop when absent, evict on return) and §2.2 (pattern, max_spec),
    with the seed's doubled-pattern bug (#132) as a fixture that must be caught."""
    problems = []
    drafter = SuffixDrafter.build(1024)
    cache = drafter.cache
    drafter.propose([_draft_row("a", [1, 2, 3], 3, [])])
    if "a" in cache.active_requests:
        problems.append("partial prefill started the request")
    drafter.propose([_draft_row("a", [1, 2, 3, 4], 3, [4]), _draft_row("b", [5, 6, 7], 2, [7])])
    drafter.propose([_draft_row("b", [5, 6, 7, 8], 2, [8])])
    if "a" in cache.active_requests or "a" not in cache.cached_requests:
        problems.append("absent request not stopped")
    drafter.propose([_draft_row("a", [1, 2, 3, 4, 9], 3, [9])])
    if "a" not in cache.active_requests:
        problems.append("returning request not restarted")
    near_end = SuffixDrafter.build(12)
    near_end.propose([_draft_row("c", [1, 2, 3, 1, 2, 3, 1, 2, 3], 3, [3])])
    long = near_end.propose([_draft_row("c", [1, 2, 3, 1, 2, 3, 1, 2, 3, 1], 3, [1])])[0]
    if len(long) > 12 - 10 - 1:
        problems.append(f"draft {long} reaches past max_model_len - 1")
    history = [1, 2, 3, 4, 5, 1, 2, 3, 9, 9, 1, 2, 3]
    rows = [_draft_row("r", history[:k], 3, [history[k - 1]]) for k in range(4, len(history) + 1)]
    intended, buggy = SuffixDrafter.build(1024), SuffixDrafter.build(1024, rules=replay_by_id("B1").rules)
    if [intended.propose([r])[0] for r in rows] == [buggy.propose([r])[0] for r in rows]:
        problems.append("the #132 doubled-pattern fixture is not caught")
    return BatteryResult(name="suffix-runner: cache rules, pattern, max_spec, #132 fixture", compared=6,
                         outcome=Outcome.FAIL if problems else Outcome.PASS, detail="; ".join(problems))  # fmt: skip


def padding_neutral() -> BatteryResult:
    """parallel.md §4.4 invariant on L0 and SP2 (in-process SP is not possible, so L0 with the
    capture tables forcing extra padding): tokens equal, logits within 1e-12, no NaN from the
    NaN-filled cache reaches a real row."""
    model = tiny_config()
    weights = random_weights(model, 0)
    solo = SoloComm(0)
    groups = RankGroups(rank=0, tp=solo, sp=solo, shift=solo)
    prompts = builtin_prompts(model.vocab_size)
    outputs, rows = [], []
    for graphs in (False, True):
        engine = EngineConfig(model=model, layout=ParallelLayout(1, 1, 1), cuda_graphs=graphs,
                              scheduler=SchedulerConfig(max_num_batched_tokens=64))  # fmt: skip
        records: list[SampleRecord] = []
        results = run_requests(build_runner(engine, weights, groups, SuffixDrafter.build(1024)), engine.scheduler, prompts,
                               [SamplingParams(max_tokens=16)] * len(prompts), records=records)  # fmt: skip
        outputs.append([r.output_token_ids for r in results])
        rows.append(records)
    worst = max(float((a.logits - b.logits).abs().max()) for a, b in zip(rows[0], rows[1], strict=True))
    finite = all(bool(r.logits.isfinite().all()) for r in rows[1])
    ok = outputs[0] == outputs[1] and worst <= 1e-12 and finite
    return BatteryResult(name="padding: forced graph padding leaves real rows unchanged", compared=len(rows[1]),
                         outcome=Outcome.PASS if ok else Outcome.FAIL, figures={"max |Δlogits|": f"{worst:.1e}"},
                         detail="" if ok else f"tokens equal {outputs[0] == outputs[1]}, finite {finite}")  # fmt: skip


def speculator_checks() -> BatteryResult:
    """runner.md §2.4–2.5, §2.3: batched speculators ≡ the literal per-row loop (float64), the
    hidden-row example, the seed's batch-wide cut and hybrid blanking caught by their checks, and
    both n-gram rules against a brute-force matcher."""
    problems, compared = [], 0
    g = torch.Generator().manual_seed(0)
    for config in (SpeculatorConfig(kind="mlp"), SpeculatorConfig(kind="mlp", tie_weights=True),
                   SpeculatorConfig(kind="lstm", tie_weights=True)):  # fmt: skip
        speculator = ArcticSpeculator(config, speculator_weights(config, 1))
        hidden = torch.randn(16, config.input_dim, dtype=torch.float64, generator=g)
        tokens = torch.randint(0, config.vocab_size, (16,), generator=g)
        compared += 16
        if speculator.propose(hidden, tokens, 3).tolist() != propose_literal(speculator, hidden, tokens.tolist(), 3):
            problems.append(f"{config.kind} tied={config.tie_weights}: batched != literal")
    if select_hidden_rows(torch.zeros(8, 4), [3, 0, 2], [[1, 2], [3], [4, 5, 6]]) != [1, 4, 7]:
        problems.append("hidden-row example")
    rows = [_draft_row("a", list(range(98)), 2, [7]), _draft_row("b", list(range(10)), 2, [8]),
            _draft_row("c", list(range(12)), 2, [])]  # fmt: skip
    hidden = torch.randn(3, 128, dtype=torch.float64, generator=g)
    speculator = speculator_for(128, 512, "mlp", 1, torch.float64)
    lengths = {
        replay: [len(d) for d in SpeculatorDrafter(arctic_config(100), speculator, rules).propose_with_hidden(rows, hidden, [0, 0, 0])]
        for replay, rules in (("intended", INTENDED_RULES), ("B3-runner", replay_by_id("B3-runner").rules))
    }  # fmt: skip
    if lengths["intended"] != [1, 3, 0] or lengths["B3-runner"] == lengths["intended"]:
        problems.append(f"per-row cut or its batch-wide fixture: {lengths}")
    hybrid = arctic_config(1024, hybrid=True)
    repeated = _draft_row("r", [7, 8, 9, 10] * 6, 23, [10])  # the prompt repeats: its suffix score reaches k
    rows = [repeated, _draft_row("s", [501, 502, 503, 504], 2, [504]), _draft_row("t", list(range(12)), 2, [])]
    hidden = torch.randn(3, 128, dtype=torch.float64, generator=g)
    per_row, blanked = (
        SpeculatorDrafter(hybrid, speculator, rules).propose_with_hidden(rows, hidden, [0, 0, 0])
        for rules in (INTENDED_RULES, replay_by_id("B2").rules)
    )
    if not per_row[0] or not per_row[1] or blanked[1] or per_row[0] != blanked[0]:
        problems.append(f"hybrid per-row choice or its blanking fixture: {per_row} vs {blanked}")
    rng = random.Random(0)
    for _ in range(500):
        tokens_list = [rng.randrange(3) for _ in range(rng.randrange(1, 25))]
        lo = rng.randrange(1, 4)
        hi = lo + rng.randrange(3)
        compared += 2
        for rule, overlap in ((ngram_draft, False), (ngram_draft_longest, True)):
            if rule(tokens_list, 3, lo, hi) != brute_force_ngram(tokens_list, 3, lo, hi, overlap=overlap):
                problems.append(f"{rule.__name__}({tokens_list}, {lo}..{hi})")
    return BatteryResult(name="speculator: batched = literal, hidden rows, fixtures, n-gram rules", compared=compared,
                         outcome=Outcome.FAIL if problems else Outcome.PASS, detail="; ".join(problems[:5]))  # fmt: skip


BATTERY_IDS = (*(label for label, _ in all_batteries()), "layouts")
"""The ids ``--only`` accepts: ``all_batteries()`` in order, then the multi-process group."""
