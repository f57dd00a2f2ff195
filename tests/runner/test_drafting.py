"""The runner drafts through ``arctic_ref.spec.drafts`` (one rule set), and every bug replay injected
into a running ``ReferenceRunner`` is caught end to end while greedy output stays lossless."""

from collections.abc import Sequence
from dataclasses import replace

import pytest

from arctic_ref.runner.drafters import NoDrafter, SpeculatorDrafter, SuffixDrafter
from arctic_ref.spec.drafts import INTENDED_RULES, DraftConfig, DraftRow, DraftRules, SuffixQuery, arctic_budgets
from arctic_ref.spec.drafts import suffix_query as intended_query
from arctic_ref.testing.drafting.in_runner import (
    DRAFTERS,
    DraftTrace,
    RunnerDrafter,
    check_replay_in_runner,
    check_runner_replay,
    first_difference,
    replay_drafter,
    trace_drafts,
)
from arctic_ref.testing.drafting.replays import BUG_REPLAYS, BugReplay, replay_by_id
from arctic_ref.testing.drafting.runner_replays import RUNNER_REPLAYS, RunnerReplay


def _recording(calls: list[str]) -> DraftRules:
    """The intended rules, with the suffix and budget stages recording that they ran."""

    def query(row: DraftRow, config: DraftConfig) -> SuffixQuery | None:
        calls.append("suffix_query")
        return intended_query(row, config)

    def budgets(rows: Sequence[DraftRow], config: DraftConfig, chosen: Sequence[bool]) -> list[int]:
        calls.append("arctic_budgets")
        return arctic_budgets(rows, config, chosen)

    return replace(INTENDED_RULES, suffix_query=query, arctic_budgets=budgets)


@pytest.mark.parametrize("name", DRAFTERS)
def test_runner_drafting_runs_the_injected_rules(name: str) -> None:
    """Every stage the runner's drafts come from is the injected ``DraftRules`` value: the recording
    stages run in the runner, and the drafts equal those of the plain intended rules."""
    calls: list[str] = []
    recorded = trace_drafts(replay_drafter(name, _recording(calls)))
    plain = trace_drafts(replay_drafter(name, INTENDED_RULES))
    assert first_difference(plain, recorded) == ""
    assert calls.count("suffix_query") > 10
    assert ("arctic_budgets" in calls) == (name == "hybrid")
    assert recorded.stats.steps == len(recorded.drafts) and recorded.stats.draft_tokens > 0


def test_adapters_refuse_configs_that_are_not_theirs() -> None:
    with pytest.raises(ValueError, match="needs method 'suffix', got 'arctic'"):
        SuffixDrafter(DraftConfig(method="arctic", num_speculative_tokens=3, max_model_len=64))
    hybrid = replay_drafter("hybrid", INTENDED_RULES)
    assert isinstance(hybrid, SpeculatorDrafter)
    with pytest.raises(ValueError, match="needs an Arctic method, got 'suffix'"):
        SpeculatorDrafter(DraftConfig(method="suffix", num_speculative_tokens=3, max_model_len=64), hybrid.speculator)


@pytest.fixture(scope="module")
def shared() -> tuple[DraftTrace, DraftTrace]:
    """The no-draft baseline and the intended hybrid run, shared by the replays."""
    return trace_drafts(NoDrafter()), trace_drafts(replay_drafter("hybrid", INTENDED_RULES))


SHOWN_UNDER_SUFFIX = ("AI-16",)
"""Replays whose drafts change only under suffix decoding alone: AI-16's stray token in a cached
response never lifts a hybrid row's suffix score to k on this workload."""


@pytest.mark.parametrize("replay", BUG_REPLAYS, ids=lambda r: r.id)
def test_each_replay_is_caught_in_the_runner(replay: BugReplay, shared: tuple[DraftTrace, DraftTrace]) -> None:
    """Under the hybrid drafter (suffix decoding alone for ``SHOWN_UNDER_SUFFIX``), a replay that
    must fail changes some step's drafts; the inert one (B4-literal) changes none; greedy output
    equals the no-draft run either way."""
    if replay.id in SHOWN_UNDER_SUFFIX:
        result = check_replay_in_runner(replay, "suffix", baseline=shared[0])
    else:
        result = check_replay_in_runner(replay, "hybrid", baseline=shared[0], intended=shared[1])
    assert result.lossless
    assert result.differs == replay.must_fail, result.first_difference
    assert result.unsampled_drafts == ""


@pytest.mark.parametrize("name", DRAFTERS)
@pytest.mark.parametrize("replay", RUNNER_REPLAYS, ids=lambda r: r.id)
def test_each_runner_replay_breaks_a_runner_rule(replay: RunnerReplay, name: RunnerDrafter) -> None:
    """V-11 (drafts at the wrong offset of the token buffer) breaks greedy losslessness; V-14 (a
    discarded partial-prefill sample counted valid) drafts a row that emitted nothing (D2). The
    intended stages break neither (``test_intended_runs_keep_the_runner_rules``)."""
    result = check_runner_replay(replay, name)
    assert result.caught_by_rules
    if replay.id == "V-11":
        assert not result.lossless
    else:
        assert result.lossless and "emitted nothing but got draft" in result.unsampled_drafts


@pytest.mark.parametrize("name", DRAFTERS)
def test_intended_runs_keep_the_runner_rules(name: RunnerDrafter) -> None:
    """The checks above can pass: the intended stages are lossless and draft no row without a sample,
    on a workload where the gate fires and partial prefills sit beside decoding rows."""
    trace = trace_drafts(replay_drafter(name, INTENDED_RULES))
    assert trace.unsampled_drafts == "" and trace.outputs == trace_drafts(NoDrafter()).outputs
    assert 0 < trace.stats.gated_steps < trace.stats.steps and trace.stats.draft_tokens > 0


def test_b1_is_caught_under_suffix_decoding_alone() -> None:
    result = check_replay_in_runner(replay_by_id("B1"), "suffix")
    assert result.lossless and result.differs
    assert result.replayed.draft_tokens < result.intended.draft_tokens


def test_unknown_replay_and_drafter_are_named() -> None:
    with pytest.raises(ValueError, match="unknown bug replay 'B9'; known: B1, B2"):
        replay_by_id("B9")
    with pytest.raises(ValueError, match="unknown drafter 'eagle'"):
        replay_drafter("eagle", INTENDED_RULES)
