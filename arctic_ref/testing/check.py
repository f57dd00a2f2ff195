"""The kit's one check model: a ``Check`` is a named, time-bounded test of one component's
implementation (ours or yours), and a ``Verdict`` is what it found. ``arctic-ref check``, ``arctic-ref
check --impl`` and the pytest plugin all build ``Check`` values from the component modules
(``arctic_ref.testing.<component>.checks``) and run them with ``run_and_settle``: ``run_check``, which never
raises (a crash, a hang or malformed output is a failed verdict that says what happened), then
``settle``, the one place ``strict`` decides whether a known upstream difference fails."""

import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Generic, TypeVar

from arctic_ref.check_options import Component

Key = TypeVar("Key")
Value = TypeVar("Value")


class Outcome(StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """What one check found."""

    passed: bool
    compared: str = ""
    """What was compared, with what: "drafts of 1,826 speculate calls with arctic_ref's"."""
    count: int = 0
    """How many results were compared with an oracle (the report's ``compared`` column)."""
    figures: Mapping[str, str] = field(default_factory=dict)
    """Named measurements the report prints beside the outcome (acceptance, max |Δ|, speed ratios)."""
    detail: str = ""
    """The first differing case, labelled."""
    replay: str = ""
    """How to replay the failure alone (a seed, a case id, a Hypothesis blob)."""
    known_difference: str = ""
    """An upstream difference id (X1–X7) this failure is explained by: reported, and a failure
    only under ``--arctic-ref-strict``."""
    skipped: str = ""
    """Why the check did not run (then ``passed`` is meaningless and it is reported as skipped)."""

    @property
    def outcome(self) -> Outcome:
        if self.skipped:
            return Outcome.SKIP
        return Outcome.PASS if self.passed else Outcome.FAIL


def settle(verdict: Verdict, strict: bool) -> Verdict:
    """A failure that a catalogued upstream bug explains passes (and says so) unless ``strict``."""
    if verdict.known_difference and not verdict.passed and not strict:
        return replace(verdict, passed=True)
    return verdict


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """One named check. ``component/id`` names it uniquely; ``run`` does the work."""

    component: Component
    id: str
    meaning: str
    """One line: what passing proves."""
    run: Callable[[], Verdict]
    seconds: float = 600.0
    """The time bound."""
    title: str = ""
    """The report's label for the row; ``"<component> <id>"`` when empty."""
    group: str = ""
    """A selection alias shared by checks that run together (``layouts`` selects its four rows)."""

    @property
    def qualified_id(self) -> str:
        return f"{self.component}/{self.id}"

    @property
    def label(self) -> str:
        return self.title or f"{self.component} {self.id}"


CheckRow = tuple[str, str, str, Callable[[], Verdict]]
"""(id, the report's title, what passing proves, run): one of arctic_ref's own checks as a table row."""


def checks_from_rows(component: Component, rows: Sequence[CheckRow]) -> list[Check]:
    """A component's table of checks of arctic_ref's own implementation, as ``Check`` values."""
    return [
        Check(component=component, id=check_id, title=title, meaning=meaning, run=run)
        for check_id, title, meaning, run in rows
    ]


@dataclass(frozen=True, slots=True)
class RunFailed:
    """A shared run's exception, as text."""

    message: str


@dataclass(slots=True)
class SharedRun(Generic[Key, Value]):
    """``run(key)`` computed on first use and kept, for checks that share one expensive run (the
    sampler kit, a spawn per world size). An exception is kept as its text, so every check sharing
    the run reports it; nothing raises."""

    run: Callable[[Key], Value]
    done: dict[Key, Value | RunFailed] = field(default_factory=dict)

    def get(self, key: Key) -> Value | RunFailed:
        if key not in self.done:
            try:
                self.done[key] = self.run(key)
            except Exception as error:  # a crash, or a rank that raised or hung: kept for every check
                self.done[key] = RunFailed(f"{type(error).__name__}: {error}")
        return self.done[key]


class CheckTimeout(BaseException):
    """The implementation did not finish within the check's time bound. A ``BaseException``, so
    neither the implementation's own ``except Exception`` nor Hypothesis (which would take it for a
    failure to shrink) swallows it."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ``CheckTimeout`` in this thread after ``seconds`` (SIGALRM; on the main thread of a
    POSIX process only, elsewhere the bound is not enforced). An outer alarm (pytest-timeout's, say)
    keeps its deadline: this bound is never later than it, and it is re-armed for what is left."""
    usable = hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return
    limit = seconds

    def expire(signum: int, frame: object) -> None:
        raise CheckTimeout(f"did not finish in {limit:.3g} s")

    began = time.monotonic()
    previous = signal.signal(signal.SIGALRM, expire)
    outer_delay, outer_interval = signal.getitimer(signal.ITIMER_REAL)
    if outer_delay > 0:
        limit = min(limit, outer_delay)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_delay > 0:
            signal.setitimer(signal.ITIMER_REAL, max(outer_delay - (time.monotonic() - began), 1e-3), outer_interval)


def run_check(check: Check) -> Verdict:
    """``check.run()`` under its time bound; a timeout or an exception becomes a failed verdict."""
    try:
        with time_limit(check.seconds):
            return check.run()
    except CheckTimeout as error:
        return Verdict(passed=False, compared=check.meaning, detail=str(error))
    except Exception as error:  # the kit never raises: whatever the implementation did is the verdict
        return Verdict(passed=False, compared=check.meaning, detail=describe_exception(error))


def run_and_settle(check: Check, *, strict: bool) -> Verdict:
    """What a front door reports for ``check``: ``run_check``'s verdict, settled (``settle``), so a
    failure a catalogued upstream difference explains passes unless ``strict``. Every front door
    (``arctic-ref check``, ``--impl``, the pytest plugin) runs its checks through here."""
    return settle(run_check(check), strict)


def describe_exception(error: BaseException) -> str:
    """``raised T: message at file:line``, with the exception's notes and, for an exception group
    (Hypothesis reports several distinct failures as one), every sub-failure underneath."""
    notes = "".join(f"\n{note}" for note in getattr(error, "__notes__", ()))
    last = traceback.extract_tb(error.__traceback__)[-1:] if error.__traceback__ else []
    where = f" at {last[0].filename}:{last[0].lineno}" if last else ""
    text = f"raised {type(error).__name__}: {error}{where}{notes}"
    if isinstance(error, BaseExceptionGroup):
        parts = [describe_exception(inner) for inner in error.exceptions]
        text += "".join(f"\n  failure {n}: {part}" for n, part in enumerate(parts, start=1))
    return text


def failure_text(check: Check, verdict: Verdict) -> str:
    """The message of a failed check: what was compared, the first differing case, how to replay."""
    lines = [f"{check.component} {check.id}: {check.meaning}", f"compared: {verdict.compared}"]
    if verdict.known_difference:
        lines.append(f"known upstream difference {verdict.known_difference} (fails only with --arctic-ref-strict)")
    if verdict.detail:
        lines.append(f"first difference: {verdict.detail}")
    if verdict.replay:
        lines.append(f"replay: {verdict.replay}")
    return "\n".join(lines)
