"""Bug replays caught end to end: each ``BugReplay``'s ``DraftRules`` is injected into a running
``ReferenceRunner`` (through its drafter, exactly the value the selection suite runs), and the run is
compared step by step with the same run under the intended rules.

Before the first step whose drafts differ, the two runs are identical (same schedule, same tokens),
so that step is where the replay shows; greedy output stays lossless in both (runner.md §6 item 1).
The workload is built to reach every stage: suffix decoding and the hybrid (suffix beside the MLP
speculator), a 64-token ``max_model_len`` that rows run into (per-row budgets), chunked prefill
with 16 tokens per step (partial-prefill rows beside decoding ones), and a repeating prompt (rows
whose suffix score reaches k).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

import torch

from arctic_ref.model.config import tiny_config
from arctic_ref.model.weights import random_weights
from arctic_ref.parallel.comm import RankGroups, SoloComm
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.runner.drafters import Drafter, HiddenStateDrafter, NoDrafter, SpeculatorDrafter, SuffixDrafter
from arctic_ref.runner.engine import EngineConfig, RequestDriver, build_runner
from arctic_ref.runner.prompts import builtin_prompts
from arctic_ref.runner.requests import SamplingParams
from arctic_ref.runner.scheduler import SchedulerConfig
from arctic_ref.runner.speculator import speculator_for
from arctic_ref.spec.drafts import INTENDED_RULES, DraftRules, DraftStats, arctic_config, suffix_config
from arctic_ref.testing.drafts.replays import BugReplay

MAX_MODEL_LEN = 64
RunnerDrafter = Literal["suffix", "hybrid"]
DRAFTERS: tuple[RunnerDrafter, ...] = get_args(RunnerDrafter)
"""The runner drafters every replay runs under."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftTrace:
    """One run: the drafts of every step (per row, in batch order), the outputs, the statistics."""

    drafts: tuple[tuple[tuple[str, tuple[int, ...]], ...], ...]
    outputs: tuple[tuple[int, ...], ...]
    stats: DraftStats


@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerReplayResult:
    """One replay under one drafter, against the intended rules on the same workload."""

    replay_id: str
    drafter: RunnerDrafter
    must_fail: bool
    first_difference: str
    """Where the drafts first differ ("" when they never do)."""
    lossless: bool
    """Both runs give the no-draft greedy output."""
    intended: DraftStats
    replayed: DraftStats

    @property
    def differs(self) -> bool:
        return bool(self.first_difference)


def replay_drafter(name: RunnerDrafter, rules: DraftRules) -> Drafter | HiddenStateDrafter:
    if name == "suffix":
        return SuffixDrafter(suffix_config(MAX_MODEL_LEN), rules)
    if name == "hybrid":
        config = tiny_config()
        speculator = speculator_for(config.hidden_size, config.vocab_size, "mlp", 1, torch.float64)
        return SpeculatorDrafter(arctic_config(MAX_MODEL_LEN, hybrid=True), speculator, rules)
    raise ValueError(f"unknown drafter {name!r}; known: {', '.join(DRAFTERS)}")


def trace_drafts(drafter: Drafter | HiddenStateDrafter) -> DraftTrace:
    """The workload of this module under one drafter (greedy, float64, tiny model, L0)."""
    model = tiny_config()
    scheduler = SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=16, max_model_len=MAX_MODEL_LEN)
    engine = EngineConfig(model=model, layout=ParallelLayout(1, 1, 1), scheduler=scheduler)
    solo = SoloComm(0)
    runner = build_runner(engine, random_weights(model, 0), RankGroups(rank=0, tp=solo, sp=solo, shift=solo), drafter)
    prompts = builtin_prompts(model.vocab_size)
    driver = RequestDriver.start(runner, scheduler, prompts, [SamplingParams(max_tokens=MAX_MODEL_LEN)] * len(prompts))
    steps = []
    while driver.step():
        assert driver.last is not None
        steps.append(tuple(zip(driver.last.req_ids, driver.last.spec_token_ids, strict=True)))
    stats = drafter.stats if isinstance(drafter, SuffixDrafter | SpeculatorDrafter) else DraftStats()
    return DraftTrace(drafts=tuple(steps), outputs=tuple(r.output_token_ids for r in driver.results()), stats=stats)


def first_difference(intended: DraftTrace, replayed: DraftTrace) -> str:
    """ "step s, request r: intended [...] vs replayed [...]" at the first differing draft, or ""."""
    for step, (mine, theirs) in enumerate(zip(intended.drafts, replayed.drafts, strict=False)):
        for (req, a), (_, b) in zip(mine, theirs, strict=False):
            if a != b:
                return f"step {step}, {req}: intended {list(a)} vs replayed {list(b)}"
        if len(mine) != len(theirs):
            return f"step {step}: {len(mine)} rows vs {len(theirs)}"
    if len(intended.drafts) != len(replayed.drafts):
        return f"{len(intended.drafts)} steps vs {len(replayed.drafts)}"
    return ""


def check_replay_in_runner(
    replay: BugReplay, drafter: RunnerDrafter, *, baseline: DraftTrace | None = None, intended: DraftTrace | None = None
) -> RunnerReplayResult:
    """Run ``replay.rules`` and the intended rules under ``drafter``; pass in ``baseline`` (no
    drafts) and ``intended`` to share them between replays."""
    base = baseline or trace_drafts(NoDrafter())
    mine = intended or trace_drafts(replay_drafter(drafter, INTENDED_RULES))
    theirs = trace_drafts(replay_drafter(drafter, replay.rules))
    return RunnerReplayResult(
        replay_id=replay.id,
        drafter=drafter,
        must_fail=replay.must_fail,
        first_difference=first_difference(mine, theirs),
        lossless=mine.outputs == base.outputs and theirs.outputs == base.outputs,
        intended=mine.stats,
        replayed=theirs.stats,
    )


def check_replays_in_runner(
    replays: tuple[BugReplay, ...], progress: Callable[[str], None] | None = None
) -> list[RunnerReplayResult]:
    """Every replay under every drafter of ``DRAFTERS``, sharing the baseline and intended runs."""
    baseline = trace_drafts(NoDrafter())
    out = []
    for name in DRAFTERS:
        intended = trace_drafts(replay_drafter(name, INTENDED_RULES))
        for replay in replays:
            if progress is not None:
                progress(f"    {replay.id} under {name} ...")
            out.append(check_replay_in_runner(replay, name, baseline=baseline, intended=intended))
    return out
