"""What the layouts component's checks compute: group tables, KV-head theorem T1, CUDA-graph tables,
padding, and the multi-process layout group (layouts, collectives, exchanges, spec-lossless)."""

from collections.abc import Callable

from arctic_ref.model.config import tiny_config
from arctic_ref.model.weights import random_weights
from arctic_ref.parallel.comm import RankGroups, SoloComm
from arctic_ref.parallel.cudagraph import GraphTables, default_capture_sizes, pad_sp, pad_to
from arctic_ref.parallel.heads import base_kv_heads, kv_head_of_query, query_heads, shift_kv_heads
from arctic_ref.parallel.launch import RankInfo, spawn_ranks
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.parallel.plan import ShiftPolicy, plan_step
from arctic_ref.runner.drafters import SuffixDrafter
from arctic_ref.runner.engine import EngineConfig, SampleRecord, build_runner, run_requests
from arctic_ref.runner.prompts import builtin_prompts
from arctic_ref.runner.requests import SamplingParams
from arctic_ref.runner.scheduler import SchedulerConfig
from arctic_ref.testing.check import Verdict
from arctic_ref.testing.layout_matrix import (
    CHECK_PACKED,
    LAYOUTS,
    LOW_BASELINES,
    LOW_PRECISION,
    LayoutCase,
    LayoutOutcome,
    check_speculative,
    compare,
    run_cases,
)
from arctic_ref.testing.layouts.rank_figure import RankFigure, prefixed
from arctic_ref.testing.layouts.world import run_world


def layout_tables() -> Verdict:
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
        (
            lambda: ParallelLayout(6, 2, 2),
            "world_size(6) != tensor_parallel_size(2) * ulysses_sequence_parallel_size(2); pipeline parallelism is not supported",
        ),
        (lambda: ParallelLayout(1, 0, 1), "tensor_parallel_size must be >= 1 (got 0)"),
        (
            lambda: ParallelLayout(8, 2, 4).validate_model(
                num_attention_heads=12, num_key_value_heads=4, intermediate_size=8
            ),
            "num_attention_heads(12) is not divisible by tp(2) * sp(4) = 8",
        ),
        (
            lambda: ParallelLayout(2, 2, 1).validate_model(
                num_attention_heads=8, num_key_value_heads=3, intermediate_size=8
            ),
            "num_key_value_heads(3) and tensor_parallel_size(2): one must divide the other",
        ),
        (
            lambda: ParallelLayout(3, 1, 3).validate_model(
                num_attention_heads=6, num_key_value_heads=2, intermediate_size=9
            ),
            "kv heads per tp rank(2) and ulysses_sequence_parallel_size(3): one must divide the other",
        ),
        (
            lambda: ParallelLayout(1, 1, 1).validate_model(
                num_attention_heads=8, num_key_value_heads=3, intermediate_size=8
            ),
            "num_attention_heads(8) is not divisible by num_key_value_heads(3)",
        ),
        (
            lambda: ParallelLayout(8, 2, 4).validate_model(
                num_attention_heads=8, num_key_value_heads=8, intermediate_size=348, shift=True
            ),
            "intermediate_size(348) is not divisible by 8 (tp * sp, shift enabled)",
        ),
        (
            lambda: ShiftPolicy(ParallelLayout(2, 2, 1), enabled=True),
            "shift parallelism requires ulysses_sequence_parallel_size > 1 (got 1)",
        ),
        (
            lambda: ParallelLayout(2, 1, 2, native_sequence_parallelism=True),
            "ulysses sequence parallelism (sp=2) cannot be combined with native sequence parallelism",
        ),
        (
            lambda: ShiftPolicy(ParallelLayout(2, 1, 2), enabled=True, threshold=-1),
            "shift_parallel_threshold must be >= 0 (got -1)",
        ),
    ]
    for make, message in messages:
        try:
            make()
            problems.append(f"no error for {message!r}")
        except ValueError as error:
            if str(error) != message:
                problems.append(f"{error} != {message}")
    return Verdict(
        compared="layout: group tables S·T ≤ 16, messages V1-V10",
        count=cases + len(messages),
        passed=not problems,
        detail="; ".join(problems),
        figures={"layouts": str(cases), "messages": str(len(messages))},
    )


def kv_heads_theorem() -> Verdict:
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
    return Verdict(
        compared="heads: KV-cache invariance T1 (base vs shift)",
        count=configs,
        passed=not problems,
        detail="; ".join(problems[:5]),
        figures={"configurations": str(configs)},
    )


def cudagraph_tables() -> Verdict:
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
    return Verdict(
        compared="cudagraph: pad tables, capture plans, runtime examples",
        count=513 + 5,
        passed=not problems,
        detail="; ".join(problems[:5]),
        figures={"sizes": str(len(sizes))},
    )


def padding_neutral() -> Verdict:
    """docs/parallel.md §4.4 invariant on L0 and SP2 (in-process SP is not possible, so L0 with the
    capture tables forcing extra padding): tokens equal, logits within 1e-12, no NaN from the
    NaN-filled cache reaches a real row."""
    model = tiny_config()
    weights = random_weights(model, 0)
    solo = SoloComm(0)
    groups = RankGroups(rank=0, tp=solo, sp=solo, shift=solo)
    prompts = builtin_prompts(model.vocab_size)
    outputs, rows = [], []
    for graphs in (False, True):
        engine = EngineConfig(
            model=model,
            layout=ParallelLayout(1, 1, 1),
            cuda_graphs=graphs,
            scheduler=SchedulerConfig(max_num_batched_tokens=64),
        )
        records: list[SampleRecord] = []
        results = run_requests(
            build_runner(engine, weights, groups, SuffixDrafter.build(1024)),
            engine.scheduler,
            prompts,
            [SamplingParams(max_tokens=16)] * len(prompts),
            records=records,
        )
        outputs.append([r.output_token_ids for r in results])
        rows.append(records)
    worst = max(float((a.logits - b.logits).abs().max()) for a, b in zip(rows[0], rows[1], strict=True))
    finite = all(bool(r.logits.isfinite().all()) for r in rows[1])
    ok = outputs[0] == outputs[1] and worst <= 1e-12 and finite
    return Verdict(
        compared="padding: forced graph padding leaves real rows unchanged",
        count=len(rows[1]),
        passed=ok,
        figures={"max |Δlogits|": f"{worst:.1e}"},
        detail="" if ok else f"tokens equal {outputs[0] == outputs[1]}, finite {finite}",
    )


def layout_conformance(progress: Callable[[str], None]) -> list[Verdict]:
    """L0–L8 in float64, float32 and bfloat16 on L3 and L7, collectives, exchanges, KV invariance and
    shift-logit order: one spawn per world size (1, 2, 4)."""
    solo = run_cases(RankInfo(0, 1, "gloo"), (LAYOUTS[0], *LOW_BASELINES))
    assert solo is not None
    outcomes = {(o.case.label, o.case.dtype): o for o in solo}
    speculative = check_speculative(tuple(r.output_token_ids for r in outcomes[("L0", "float64")].results))
    spec_solo = run_cases(RankInfo(0, 1, "gloo"), tuple(c for c in speculative if c.world_size == 1))
    assert spec_solo is not None
    outcomes |= {(o.case.label, o.case.dtype): o for o in spec_solo}
    checks: tuple[RankFigure, ...] = ()
    for world in (2, 4):
        progress(f"    spawning {world} ranks (gloo) ...")
        cases = tuple(c for c in (*LAYOUTS, *speculative, *CHECK_PACKED, *LOW_PRECISION) if c.world_size == world)
        result = spawn_ranks(run_world, cases, world_size=world, timeout_s=600)[0]
        assert result is not None  # rank 0 returns its outcome
        outcomes |= {(o.case.label, o.case.dtype): o for o in result.layouts}
        checks += prefixed(f"world{world}", result.checks)
    comparisons = [
        compare(outcomes[("L0", o.case.dtype)], o)
        for key, o in outcomes.items()
        if "+" not in key[0] and key[0] != "L0"
    ]
    failed = [c for c in comparisons if c.failed]
    f64 = [c for c in comparisons if c.dtype == "float64"]
    layouts = Verdict(
        compared="layouts: L1-L8 vs L0 (f64), L3/L7 f32+bf16, L3/L6 packed",
        count=sum(c.compared_rows for c in comparisons),
        passed=not failed,
        figures={
            "f64 max|Δ|": f"{max(c.max_abs for c in f64):.1e}",
            "diverged": str(sum(not c.identical_tokens for c in comparisons)),
            "min margin": f"{min(c.min_margin for c in f64):.1e}",
            **{f"{c.layout} {c.dtype} max|Δ|": f"{c.max_abs:.1e}" for c in comparisons if c.dtype != "float64"},
        },
        detail="; ".join(f"{c.layout} {c.dtype}: {c.first_divergence}" for c in failed),
    )
    counts = _collective_problems(outcomes)
    collectives = Verdict(
        compared="collectives: counts per step and mode",
        count=4 + len(CHECK_PACKED),
        passed=not counts,
        detail="; ".join(counts),
    )
    bad_checks = [
        f"{f.name} {f.value:g} (want {f.bound}){' ' + f.detail if f.detail else ''}" for f in checks if not f.passed
    ]
    raw = [f for f in checks if f.name.endswith("raw_vs_baseline_max_abs")]
    exchanges = Verdict(
        compared="exchanges, volumes, kv-invariance T2, cross-mode T3, logits-order, no-globals (world 2, 4)",
        count=len(checks),
        passed=not bad_checks,
        detail=", ".join(bad_checks),
        figures={"raw gather caught": str(bool(raw) and all(f.passed for f in raw))},
    )
    lossless = _spec_lossless(outcomes, speculative)
    return [layouts, collectives, exchanges, lossless]


def _spec_lossless(outcomes: dict[tuple[str, str], LayoutOutcome], cases: tuple[LayoutCase, ...]) -> Verdict:
    """docs/runner.md §6 item 1: every drafter on L0, L3, L6 gives L0's greedy tokens (float64), with drafts."""
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
    return Verdict(
        compared="spec-lossless: 7 drafters on L0, L3, L6",
        count=len(cases),
        passed=not problems,
        detail="; ".join(problems),
        figures={
            "suffix acc": f"{accepted / drafts:.2f} ({accepted}/{drafts})" if drafts else "-",
            "mean emitted per verify step": f"{(accepted + verify_steps) / verify_steps:.2f}" if verify_steps else "-",
        },
    )


def _collective_problems(outcomes: dict[tuple[str, str], LayoutOutcome]) -> list[str]:
    layers = 4
    expected = {
        "L1": {("all_reduce", "tp"): 1 + 2 * layers, ("all_gather", "tp"): 1},
        "L2": {("all_to_all", "sp"): 2 * layers, ("all_gather", "sp"): 1},
        "L3": {
            ("all_reduce", "tp"): 1 + 2 * layers,
            ("all_to_all", "sp"): 2 * layers,
            ("all_gather", "sp"): 1,
            ("all_gather", "tp"): 1,
        },
        "L7": {("all_reduce", "shift"): 1 + 2 * layers, ("all_gather", "shift"): 1},
    }
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
