"""T3 (docs/parallel.md §3.3): BASE and SHIFT steps interleaved on one shared KV cache, threshold 8.
Request A's 13-token prefill runs BASE and its 4 decodes SHIFT; request B (5 tokens) arrives when A
is done and prefills in SHIFT; request C (12 tokens) arrives next, so B's decode shares a BASE step
with C's prefill; then both decode in SHIFT. Logits must match the single-rank baseline (≤ 1e-9)
and greedy tokens be identical."""

from dataclasses import dataclass

from arctic_ref.model.config import tiny_config
from arctic_ref.model.weights import random_weights
from arctic_ref.parallel.comm import RankGroups, SoloComm, build_groups
from arctic_ref.parallel.launch import RankInfo
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.parallel.plan import StepMode
from arctic_ref.runner.engine import EngineConfig, Kernel, RequestDriver, RequestResult, SampleRecord, build_runner
from arctic_ref.runner.requests import SamplingParams
from arctic_ref.runner.scheduler import SchedulerConfig
from arctic_ref.testing.layouts.rank_figure import RankFigure, at_most, holds

THRESHOLD = 8
PROMPTS = (tuple(range(3, 16)), tuple(range(40, 45)), tuple(range(100, 112)))  # A 13, B 5, C 12 tokens
MAX_TOKENS = (5, 3, 3)
EXPECTED_MODES = (StepMode.BASE, *[StepMode.SHIFT] * 5, StepMode.BASE, StepMode.SHIFT, StepMode.SHIFT)


@dataclass(frozen=True, slots=True, kw_only=True)
class CrossModeRun:
    results: tuple[RequestResult, ...]
    records: tuple[SampleRecord, ...]
    modes: tuple[StepMode, ...]


def run_cross_mode(layout: ParallelLayout, groups: RankGroups, kernels: Kernel = "reference") -> CrossModeRun:
    """The T3 schedule on this rank (shift enabled iff ``layout.sp > 1``)."""
    config = tiny_config()
    engine = EngineConfig(
        model=config,
        layout=layout,
        shift_threshold=THRESHOLD if layout.sp > 1 else None,
        scheduler=SchedulerConfig(max_num_batched_tokens=64),
        kernels=kernels,
    )
    runner = build_runner(engine, random_weights(config, 0), groups)
    records: list[SampleRecord] = []
    params = [SamplingParams(max_tokens=m) for m in MAX_TOKENS]
    driver = RequestDriver.start(runner, engine.scheduler, [PROMPTS[0]], [params[0]], records=records)
    modes: list[StepMode] = []

    def step() -> None:
        assert driver.step() and driver.last is not None
        modes.append(driver.last.stats.mode)

    for _ in range(1 + 4):  # A: prefill, then 4 decodes; A is finished after the fifth step
        step()
    driver.add(PROMPTS[1], params[1])
    step()  # B's prefill alone
    driver.add(PROMPTS[2], params[2])
    while driver.step():
        assert driver.last is not None
        modes.append(driver.last.stats.mode)
    return CrossModeRun(results=tuple(driver.results()), records=tuple(records), modes=tuple(modes))


def check_cross_mode(info: RankInfo, kernels: Kernel) -> tuple[RankFigure, ...]:
    """S=2, T=2 with shift against the single-rank baseline computed on this rank."""
    solo = SoloComm(0)
    baseline = run_cross_mode(ParallelLayout(1, 1, 1), RankGroups(rank=0, tp=solo, sp=solo, shift=solo))
    layout = ParallelLayout(info.world_size, 2, info.world_size // 2)
    run = run_cross_mode(layout, build_groups(layout, info.rank), kernels)
    by_key = {(r.prompt_index, r.num_tokens): r for r in baseline.records}
    worst = max(float((r.logits - by_key[(r.prompt_index, r.num_tokens)].logits).abs().max()) for r in run.records)
    return (
        at_most("max_abs", worst, 1e-9),
        holds(
            "tokens_identical",
            [r.output_token_ids for r in run.results] == [r.output_token_ids for r in baseline.results],
        ),
        holds("modes_as_specified", run.modes == EXPECTED_MODES, f"modes {[str(m) for m in run.modes]}"),
        holds("rows_compared", len(run.records) == len(baseline.records) == sum(MAX_TOKENS)),
    )
