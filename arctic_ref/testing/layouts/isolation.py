"""docs/runner.md §1.4 item 4: two runners of different layouts on the same ranks (SP2×TP2 with shift,
and TP4), their steps interleaved, each equal to its solo run; and no module-level state of
arctic_ref changes while they run."""

import sys

from arctic_ref.model.config import tiny_config
from arctic_ref.model.weights import random_weights
from arctic_ref.parallel.comm import build_groups
from arctic_ref.parallel.launch import RankInfo
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.runner.drafters import SuffixDrafter
from arctic_ref.runner.engine import EngineConfig, RequestDriver, build_runner, run_requests
from arctic_ref.runner.prompts import builtin_prompts
from arctic_ref.runner.requests import SamplingParams
from arctic_ref.runner.scheduler import SchedulerConfig
from arctic_ref.testing.layouts.rank_figure import RankFigure, holds


def module_state() -> dict[tuple[str, str], tuple[int, tuple[int, ...]]]:
    """(module, global) → (id, ids of a container's items) for every loaded arctic_ref module."""
    state: dict[tuple[str, str], tuple[int, tuple[int, ...]]] = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("arctic_ref") or module is None:
            continue
        for key, value in vars(module).items():
            items: tuple[int, ...] = ()
            if isinstance(value, dict):
                items = tuple(id(v) for pair in value.items() for v in pair)
            elif isinstance(value, (list, set)):
                items = tuple(sorted(id(v) for v in value))
            state[(name, key)] = (id(value), items)
    return state


def check_interleaved_layouts(info: RankInfo) -> tuple[RankFigure, ...]:
    """World 4. Solo runs first, then the two runners stepped alternately on fresh state."""
    model = tiny_config()
    weights = random_weights(model, 0)
    prompts = builtin_prompts(model.vocab_size)
    params = [SamplingParams(max_tokens=16)] * len(prompts)
    scheduler = SchedulerConfig(max_num_batched_tokens=64)
    configs = [
        EngineConfig(model=model, layout=ParallelLayout(4, 2, 2), shift_threshold=16, scheduler=scheduler),
        EngineConfig(model=model, layout=ParallelLayout(4, 4, 1), scheduler=scheduler),
    ]
    groups = [build_groups(c.layout, info.rank) for c in configs]
    solo = [
        run_requests(build_runner(c, weights, g, SuffixDrafter.build(1024)), scheduler, prompts, params)
        for c, g in zip(configs, groups, strict=True)
    ]
    before = module_state()
    drivers = [
        RequestDriver.start(build_runner(c, weights, g, SuffixDrafter.build(1024)), scheduler, prompts, params)
        for c, g in zip(configs, groups, strict=True)
    ]
    active = list(drivers)
    while active:
        active = [d for d in active if d.step()]
    after = module_state()
    changed = sorted(f"{m}.{k}" for k in set(before) | set(after) for m in [k[0]] if before.get(k) != after.get(k))
    return (
        holds("interleaved_equal_solo", all(d.results() == s for d, s in zip(drivers, solo, strict=True))),
        holds("layouts_agree", [r.output_token_ids for r in solo[0]] == [r.output_token_ids for r in solo[1]]),
        holds("unchanged_globals", not changed, f"changed: {changed}"),
    )
