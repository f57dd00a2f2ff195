"""The state-machine checks of a user's tree report a failure as soon as it is found, with the
falsifying steps, and bound the time spent shrinking it (``machine_verdict.machine_verdict``)."""

from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import settings

from arctic_ref.suffix.draft import Draft
from arctic_ref.suffix.tree import SuffixTree
from arctic_ref.testing import machine_verdict
from arctic_ref.testing.suffix_tree.tree_machine import Implementation, SuffixTreeMachine

FAST = settings(max_examples=40, stateful_step_count=20, deadline=None, derandomize=True, database=None)


class _WrongScore(SuffixTree):
    """Adds 1 to the score of every draft: a bug every ``speculate`` shows, so the machine finds it
    in any run whatever examples Hypothesis draws (a subtler bug made this test depend on them)."""

    def speculate(
        self,
        context: Sequence[int] | np.ndarray,
        max_spec_tokens: int,
        max_spec_factor: float,
        max_spec_offset: float,
        min_token_prob: float,
        use_tree_spec: bool,
    ) -> Draft:
        draft = super().speculate(
            context, max_spec_tokens, max_spec_factor, max_spec_offset, min_token_prob, use_tree_spec
        )
        draft.score += 1.0
        return draft


def _machine() -> SuffixTreeMachine:
    reference = Implementation(name="arctic_ref", make_tree=SuffixTree)
    yours = Implementation(name="yours", make_tree=_WrongScore, rejects_bad_input=False)
    return SuffixTreeMachine([reference, yours])


def test_a_failing_machine_reports_its_steps() -> None:
    verdict = machine_verdict.machine_verdict(_machine, FAST, "drafts", "tree-machine")
    assert not verdict.passed
    assert "state." in verdict.detail  # the falsifying steps, from Hypothesis's notes
    assert "-k tree-machine" in verdict.replay


def test_shrinking_is_cut_off_and_the_unshrunk_failure_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machine_verdict, "SHRINK_SECONDS", 1e-3)
    verdict = machine_verdict.machine_verdict(_machine, FAST, "drafts", "tree-machine")
    assert not verdict.passed
    assert "shrinking stopped after" in verdict.detail and "state." in verdict.detail


def test_a_passing_machine_passes() -> None:
    reference = Implementation(name="arctic_ref", make_tree=SuffixTree)
    again = Implementation(name="again", make_tree=SuffixTree)
    verdict = machine_verdict.machine_verdict(lambda: SuffixTreeMachine([reference, again]), FAST, "d", "tree-machine")
    assert verdict.passed and "40 runs" in verdict.compared
