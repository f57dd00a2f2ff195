"""The kit's check model (``arctic_ref.testing.check``): a check that does not finish within its bound fails
with what happened, an outer alarm (pytest-timeout's) keeps its deadline, a shared run runs once,
an exception is described with its notes, and the report keeps one line per row."""

import signal
import time

import pytest

from arctic_ref.check_options import CheckOptions
from arctic_ref.testing.check import (
    Check,
    CheckTimeout,
    RunFailed,
    SharedRun,
    Verdict,
    run_check,
    time_limit,
)
from arctic_ref.testing.check_report import format_report
from arctic_ref.testing.front_door import CheckRun, component_checks
from arctic_ref.testing.sampler.table import CATEGORIES


def _spin(seconds: float) -> Verdict:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return Verdict(passed=True, compared="nothing")


def test_a_check_past_its_bound_fails_saying_so() -> None:
    check = Check(component="sampler", id="E1", meaning="spins", run=lambda: _spin(5.0), seconds=0.2)
    began = time.monotonic()
    verdict = run_check(check)
    assert time.monotonic() - began < 2.0
    assert not verdict.passed and verdict.detail == "did not finish in 0.2 s"


def test_a_raising_check_fails_with_the_exception() -> None:
    def boom() -> Verdict:
        raise KeyError("x")

    verdict = run_check(Check(component="drafter", id="bounds", meaning="raises", run=boom))
    assert not verdict.passed and verdict.detail.startswith("raised KeyError: 'x'")


def test_an_outer_alarm_keeps_its_deadline() -> None:
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30.0)
        with time_limit(5.0):
            pass
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 25.0 < remaining <= 30.0  # re-armed for what is left
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(CheckTimeout, match=r"did not finish in 0\.3"), time_limit(5.0):  # the earlier deadline wins
            _spin(2.0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert fired == []


def test_a_shared_run_runs_once_per_key_and_keeps_its_failure() -> None:
    calls: list[int] = []

    def run(key: int) -> int:
        calls.append(key)
        if key < 0:
            raise RuntimeError(f"rank {key} hung")
        return key * 10

    shared: SharedRun[int, int] = SharedRun(run)
    assert [shared.get(2), shared.get(2), shared.get(3)] == [20, 20, 30]
    assert shared.get(-1) == RunFailed("RuntimeError: rank -1 hung") == shared.get(-1)
    assert calls == [2, 3, -1]


def test_an_exception_group_lists_every_sub_failure() -> None:
    """Hypothesis reports several distinct failures as one group: each is named, with its notes."""
    inner = ValueError("node [1, 2]: count 3, expected 2")
    inner.add_note("state.extend(seq_id=0, tokens=[1, 2])")
    group = ExceptionGroup("Hypothesis found 2 distinct failures.", [inner, KeyError("parent")])
    verdict = run_check(Check(component="suffix-tree", id="tree-machine", meaning="m", run=lambda: _raise(group)))
    assert "failure 1: raised ValueError: node [1, 2]: count 3, expected 2" in verdict.detail
    assert "state.extend(seq_id=0, tokens=[1, 2])" in verdict.detail
    assert "failure 2: raised KeyError: 'parent'" in verdict.detail


def _raise(error: BaseException) -> Verdict:
    raise error


def test_the_report_table_keeps_one_line_per_row_and_prints_failures_below() -> None:
    check = Check(component="sampler", id="E3", meaning="prefix", run=lambda: Verdict(passed=True))
    failed = Verdict(passed=False, compared="rows", detail="first line\nsecond line")
    table = format_report([CheckRun(check=check, verdict=failed, seconds=0.5, source="sampler=x:y")])
    rows = [line for line in table.splitlines() if line.startswith("sampler=x:y")]
    assert len(rows) == 1 and "(more below)" in rows[0] and "second line" not in rows[0]
    assert "second line" in table.split(rows[0], 1)[1]


def test_leaving_out_the_strict_category_skips_its_checks_through_the_front_door() -> None:
    """``--arctic-ref-leave-out strict`` (``--leave-out strict``): the strict checks are reported as
    skipped, the others run."""
    options = CheckOptions(leave_out=("strict",), statistics=False, option_prefix="--impl ")
    checks = {c.id: c for c in component_checks("sampler", "arctic_ref.spec:rejection_sample", options)}
    for check_id, category in CATEGORIES.items():
        if check_id.startswith("E15"):
            verdict = run_check(checks[check_id])
            assert bool(verdict.skipped) == (category == "strict"), (check_id, verdict)
            assert verdict.passed
