"""Shift-model CUDA-graph capture with SP > 1 (docs/parallel.md §4.2), and bug AI-14 as a replay: HEAD's
shift capture calls a method the model no longer has. A rank function for ``spawn_ranks`` over NCCL
(``gpu_tests/test_cuda_graphs.py``; skipped with fewer than two GPUs)."""

import dataclasses

import torch

from arctic_ref.model.config import tiny_config
from arctic_ref.model.weights import random_weights
from arctic_ref.parallel.comm import build_groups
from arctic_ref.parallel.launch import RankInfo
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.parallel.plan import StepMode, StepPlan, plan_step
from arctic_ref.runner.engine import EngineConfig, build_runner
from arctic_ref.runner.graphs import CapturedForward
from arctic_ref.runner.runner import ReferenceRunner
from arctic_ref.runner.scheduler import SchedulerConfig

SHIFT_THRESHOLD = 16


@dataclasses.dataclass(slots=True)
class RemovedShiftCapture(ReferenceRunner):
    """AI-14 (HEAD): capturing the shift model calls a removed method (AttributeError)."""

    def graph_for(self, plan: StepPlan) -> CapturedForward:
        if plan.mode is StepMode.SHIFT:
            getattr(self.models[plan.mode], "capture_shift_model")()  # noqa: B009 - removed: typed access would not compile
        return ReferenceRunner.graph_for(self, plan)


def capture_every_size(info: RankInfo, replay_ai14: bool) -> dict[str, int] | None:
    """Build an SP = world runner with shift mode and graphs on this rank's GPU, then capture the
    graph of every base and shift size; rank 0 returns how many of each mode were captured."""
    layout = ParallelLayout(info.world_size, 1, info.world_size)
    groups = build_groups(layout, info.rank)
    engine = EngineConfig(
        model=tiny_config(),
        layout=layout,
        shift_threshold=SHIFT_THRESHOLD,
        device=f"cuda:{info.rank}",
        cuda_graphs=True,
        scheduler=SchedulerConfig(max_num_batched_tokens=64, max_model_len=512),
    )
    runner = build_runner(engine, random_weights(engine.model, 0), groups)
    if replay_ai14:
        runner = RemovedShiftCapture(**{f.name: getattr(runner, f.name) for f in dataclasses.fields(runner)})
    counts = {"base": 0, "shift": 0}
    for size in sorted({*runner.graphs.base, *runner.graphs.shift}):
        plan = plan_step(size, policy=runner.policy, graphs=runner.graphs, groups=groups)
        runner.graph_for(plan)
        counts["shift" if plan.mode is StepMode.SHIFT else "base"] += 1
    torch.cuda.synchronize()
    return counts if info.rank == 0 else None
