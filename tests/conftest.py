"""Test-wide set-up: Hypothesis profiles and runtime shape checking.

Profiles (choose with HYPOTHESIS_PROFILE): ``dev`` (quick, random), ``ci`` (derandomized, about 200
examples x 40 steps per machine) and ``nightly`` (10x ci). Shape annotations of the tensor packages
are checked at run time through jaxtyping + beartype; the pure-Python suffix package is left
unwrapped because a wrapper per call would dominate its hot loops.
"""

import os
from collections import Counter
from collections.abc import Callable, Generator
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.statistics import collector
from jaxtyping import install_import_hook

install_import_hook(["arctic_ref.spec", "arctic_ref.parallel", "arctic_ref.model"], "beartype.beartype")

from arctic_ref.testing.profiles import register_profiles  # noqa: E402  (after the import hook)

register_profiles()
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


pytest_plugins = ["pytester"]

_COMPARISONS: Counter[str] = Counter()
_EXAMPLES: Counter[str] = Counter()
"""Hypothesis test cases run, by status over every phase (``valid``: passed through the test body)."""


@pytest.fixture(scope="session")
def comparisons() -> Counter[str]:
    """Tests add how many results they compared with each oracle; the total is printed at the end."""
    return _COMPARISONS


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Count the Hypothesis test cases of every test: ``@given`` ones and state machines run inside a test
    alike. Hypothesis hands each run's statistics to ``collector``; the one it held (its pytest plugin's,
    for ``--hypothesis-show-statistics``) is called on as before."""
    outer: Callable[[Any], None] | None = collector.value

    def note(stats: dict[str, Any]) -> None:
        for key, phase in stats.items():
            if key.endswith("-phase") and isinstance(phase, dict):
                _EXAMPLES.update(case.get("status", "unknown") for case in phase.get("test-cases", []))
        if outer is not None:
            outer(stats)

    with collector.with_value(note):
        yield


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _EXAMPLES:
        profile = settings.get_current_profile_name()
        terminalreporter.write_line(
            f"hypothesis test cases run ({profile} profile) -- passed: {_EXAMPLES['valid']}, "
            f"rejected by assume/filters: {_EXAMPLES['invalid'] + _EXAMPLES['overrun']}, "
            f"failing: {_EXAMPLES['interesting']} (wanted by the tests that prove a mutant or replay is caught)"
        )
    if _COMPARISONS:
        parts = ", ".join(f"{name}: {count}" for name, count in sorted(_COMPARISONS.items()))
        terminalreporter.write_line(f"results compared with oracles -- {parts}")
