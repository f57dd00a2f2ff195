"""Communication volume and counts of real steps against docs/parallel.md §2.4 and §5.3: every step's
``CountingComm`` log (elements and bytes per (op, group)) equals ``comm_volume`` exactly, in BASE and
SHIFT steps, and the per-family call counts agree with torch's own ``CommDebugMode``."""

from collections import Counter

from torch.distributed.tensor.debug import CommDebugMode

from arctic_ref.model.config import tiny_config
from arctic_ref.model.weights import random_weights
from arctic_ref.parallel.comm import CommCall, build_groups, counting
from arctic_ref.parallel.launch import RankInfo
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.parallel.plan import StepMode
from arctic_ref.parallel.volume import comm_volume
from arctic_ref.runner.engine import EngineConfig, RequestDriver, build_runner
from arctic_ref.runner.requests import SamplingParams
from arctic_ref.runner.scheduler import SchedulerConfig
from arctic_ref.testing.layouts.rank_figure import RankFigure, holds

FAMILIES = {"all_reduce": "allreduce", "all_to_all": "alltoall", "all_gather": "allgather"}


def _by_key(calls: list[CommCall]) -> tuple[Counter[tuple[str, str]], Counter[tuple[str, str]]]:
    elements: Counter[tuple[str, str]] = Counter()
    sent: Counter[tuple[str, str]] = Counter()
    for call in calls:
        elements[(call.op, call.group)] += call.elements_sent
        sent[(call.op, call.group)] += call.bytes_sent
    return elements, sent


def check_volumes(info: RankInfo, sizes: tuple[int, int]) -> tuple[RankFigure, ...]:
    """S×T = world, shift threshold 8: a 13- and a 5-token prefill (BASE), then decodes (SHIFT)."""
    sp, tp = sizes
    layout = ParallelLayout(info.world_size, tp, sp)
    groups, log = counting(build_groups(layout, info.rank))
    config = tiny_config()
    engine = EngineConfig(
        model=config, layout=layout, shift_threshold=8, scheduler=SchedulerConfig(max_num_batched_tokens=64)
    )
    runner = build_runner(engine, random_weights(config, 0), groups)
    driver = RequestDriver.start(
        runner, engine.scheduler, [list(range(3, 16)), list(range(20, 25))], [SamplingParams(max_tokens=3)] * 2
    )
    volumes_equal, bytes_equal, modes = True, True, set()
    with CommDebugMode() as debug:  # type: ignore[no-untyped-call]
        while True:
            before = len(log)
            if not driver.step():
                break
            out = driver.last
            assert out is not None
            elements, sent = _by_key(log[before:])
            expected = comm_volume(
                layout,
                config,
                num_tokens=out.stats.num_input_tokens,
                num_logits=out.sample_logits.shape[0],
                mode=out.stats.mode,
            )
            volumes_equal &= elements == expected
            bytes_equal &= sent == Counter({k: v * 8 for k, v in expected.items()})  # float64
            modes.add(out.stats.mode)
    ours: Counter[str] = Counter(FAMILIES[call.op] for call in log)
    torch_counts: Counter[str] = Counter()
    for op, count in debug.get_comm_counts().items():
        family = next((f for f in FAMILIES.values() if f in str(op)), str(op))
        torch_counts[family] += count
    return (
        holds("volumes_equal_formulas", volumes_equal),
        holds("bytes_equal_formulas", bytes_equal),
        holds("both_modes_seen", modes == {StepMode.BASE, StepMode.SHIFT}),
        holds("comm_debug_mode_agrees", ours == torch_counts and sum(ours.values()) > 0, f"{ours} vs {torch_counts}"),
    )
