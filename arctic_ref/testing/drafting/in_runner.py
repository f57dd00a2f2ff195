"""Bug replays caught end to end: each ``BugReplay``'s ``DraftRules`` is injected into a running
``ReferenceRunner`` (through its drafter, exactly the value the selection suite runs), and the run is
compared step by step with the same run under the intended rules.

Before the first step whose drafts differ, the two runs are identical (same schedule, same tokens),
so that step is where the replay shows; greedy output stays lossless in both (docs/runner.md §6 item 1).
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
from arctic_ref.runner.stages import INTENDED_STAGES, RunnerStages
from arctic_ref.spec.drafts import INTENDED_RULES, DraftRules, DraftStats, arctic_config, suffix_config
from arctic_ref.testing.drafting.replays import BugReplay
from arctic_ref.testing.drafting.runner_replays import RunnerReplay

MAX_MODEL_LEN = 64
GATE = 3
"""``disable_by_batch_size`` of the workload's drafters: steps that schedule all four requests
(``max_num_seqs`` 4) are gated, so D1 and its replays (AI-17) show in the runner."""
LATE_PROMPT = [(7 * i) % 97 + 1 for i in range(40)]
"""A fifth request beside the built-in four: it waits for a free slot (``max_num_seqs`` 4) and is
prefilled in chunks beside three decoding rows, so a gated step has a partial prefill in it."""
RunnerDrafter = Literal["suffix", "hybrid"]
DRAFTERS: tuple[RunnerDrafter, ...] = get_args(RunnerDrafter)
"""The runner drafters every replay runs under."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftTrace:
    """One run: the drafts of every step (per row, in batch order), the outputs, the statistics."""

    drafts: tuple[tuple[tuple[str, tuple[int, ...]], ...], ...]
    outputs: tuple[tuple[int, ...], ...]
    stats: DraftStats
    unsampled_drafts: str = ""
    """The first row that emitted nothing (a partial prefill) but got a draft (D2 in the runner:
    docs/runner.md §2.6), or ""."""


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
    unsampled_drafts: str = ""
    """The replayed run's first row that emitted nothing but got a draft (D2 in the runner), or ""."""

    @property
    def differs(self) -> bool:
        return bool(self.first_difference)

    @property
    def caught_by_rules(self) -> bool:
        """A runner rule fails on the replayed run: greedy output is not lossless, or D2 breaks."""
        return not self.lossless or bool(self.unsampled_drafts)


def replay_drafter(name: RunnerDrafter, rules: DraftRules) -> Drafter | HiddenStateDrafter:
    if name == "suffix":
        return SuffixDrafter(suffix_config(MAX_MODEL_LEN, disable_by_batch_size=GATE), rules)
    if name == "hybrid":
        config = tiny_config()
        speculator = speculator_for(config.hidden_size, config.vocab_size, "mlp", 1, torch.float64)
        return SpeculatorDrafter(
            arctic_config(MAX_MODEL_LEN, hybrid=True, disable_by_batch_size=GATE), speculator, rules
        )
    raise ValueError(f"unknown drafter {name!r}; known: {', '.join(DRAFTERS)}")


def trace_drafts(drafter: Drafter | HiddenStateDrafter, stages: RunnerStages = INTENDED_STAGES) -> DraftTrace:
    """The workload of this module under one drafter (greedy, float64, tiny model, L0), with the
    runner's plumbing ``stages`` (a runner bug replay, or the intended ones)."""
    model = tiny_config()
    scheduler = SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=16, max_model_len=MAX_MODEL_LEN)
    engine = EngineConfig(model=model, layout=ParallelLayout(1, 1, 1), scheduler=scheduler)
    solo = SoloComm(0)
    runner = build_runner(
        engine, random_weights(model, 0), RankGroups(rank=0, tp=solo, sp=solo, shift=solo), drafter, stages=stages
    )
    prompts = [*builtin_prompts(model.vocab_size), LATE_PROMPT]
    driver = RequestDriver.start(runner, scheduler, prompts, [SamplingParams(max_tokens=MAX_MODEL_LEN)] * len(prompts))
    steps = []
    unsampled = ""
    while driver.step():
        out = driver.last
        assert out is not None
        steps.append(tuple(zip(out.req_ids, out.spec_token_ids, strict=True)))
        bad = [
            (r, d)
            for r, s, d in zip(out.req_ids, out.sampled_token_ids, out.spec_token_ids, strict=True)
            if d and not s
        ]
        if bad and not unsampled:
            unsampled = f"step {len(steps) - 1}, {bad[0][0]}: emitted nothing but got draft {list(bad[0][1])}"
    stats = drafter.stats if isinstance(drafter, SuffixDrafter | SpeculatorDrafter) else DraftStats()
    return DraftTrace(
        drafts=tuple(steps),
        outputs=tuple(r.output_token_ids for r in driver.results()),
        stats=stats,
        unsampled_drafts=unsampled,
    )


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


def _compare(
    replay_id: str,
    drafter: RunnerDrafter,
    must_fail: bool,
    theirs: DraftTrace,
    *,
    baseline: DraftTrace | None,
    intended: DraftTrace | None,
) -> RunnerReplayResult:
    """A replayed run against the intended run and the no-draft baseline (each traced here unless
    given), with the replayed run's D2 finding."""
    base = baseline or trace_drafts(NoDrafter())
    mine = intended or trace_drafts(replay_drafter(drafter, INTENDED_RULES))
    return RunnerReplayResult(
        replay_id=replay_id,
        drafter=drafter,
        must_fail=must_fail,
        first_difference=first_difference(mine, theirs),
        lossless=mine.outputs == base.outputs and theirs.outputs == base.outputs,
        intended=mine.stats,
        replayed=theirs.stats,
        unsampled_drafts=theirs.unsampled_drafts,
    )


def check_replay_in_runner(
    replay: BugReplay, drafter: RunnerDrafter, *, baseline: DraftTrace | None = None, intended: DraftTrace | None = None
) -> RunnerReplayResult:
    """Run ``replay.rules`` and the intended rules under ``drafter``; pass in ``baseline`` (no
    drafts) and ``intended`` to share them between replays."""
    theirs = trace_drafts(replay_drafter(drafter, replay.rules))
    return _compare(replay.id, drafter, replay.must_fail, theirs, baseline=baseline, intended=intended)


def check_runner_replay(
    replay: RunnerReplay,
    drafter: RunnerDrafter,
    *,
    baseline: DraftTrace | None = None,
    intended: DraftTrace | None = None,
) -> RunnerReplayResult:
    """Run the intended rules under ``drafter`` with ``replay.stages`` in the runner; the result's
    ``caught_by_rules`` says whether losslessness or D2 caught it (every runner replay must fail)."""
    theirs = trace_drafts(replay_drafter(drafter, INTENDED_RULES), replay.stages)
    return _compare(replay.id, drafter, True, theirs, baseline=baseline, intended=intended)


def check_replays_in_runner(
    replays: tuple[BugReplay, ...],
    progress: Callable[[str], None] | None = None,
    runner_replays: tuple[RunnerReplay, ...] = (),
) -> list[RunnerReplayResult]:
    """Every replay (draft rules, then runner stages) under every drafter of ``DRAFTERS``, sharing
    the baseline and intended runs."""
    baseline = trace_drafts(NoDrafter())
    out = []
    for name in DRAFTERS:
        intended = trace_drafts(replay_drafter(name, INTENDED_RULES))
        for replay in replays:
            if progress is not None:
                progress(f"    {replay.id} under {name} ...")
            out.append(check_replay_in_runner(replay, name, baseline=baseline, intended=intended))
        for stages in runner_replays:
            if progress is not None:
                progress(f"    {stages.id} under {name} ...")
            out.append(check_runner_replay(stages, name, baseline=baseline, intended=intended))
    return out
