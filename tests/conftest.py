"""Test-wide set-up: Hypothesis profiles and runtime shape checking.

Profiles (choose with HYPOTHESIS_PROFILE): ``dev`` (quick, random), ``ci`` (derandomized, about 200
examples x 40 steps per machine) and ``nightly`` (10x ci). Shape annotations of the tensor packages
are checked at run time through jaxtyping + beartype; the pure-Python suffix package is left
unwrapped because a wrapper per call would dominate its hot loops.
"""

import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, settings
from jaxtyping import install_import_hook

install_import_hook(["arctic_ref.spec", "arctic_ref.parallel", "arctic_ref.model"], "beartype.beartype")

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile("dev", max_examples=30, stateful_step_count=25, deadline=None, suppress_health_check=_SLOW_OK)
settings.register_profile(
    "ci",
    max_examples=200,
    stateful_step_count=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=_SLOW_OK,
    print_blob=True,
)
settings.register_profile(
    "nightly", max_examples=2000, stateful_step_count=40, deadline=None, suppress_health_check=_SLOW_OK
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


_COMPARISONS: Counter[str] = Counter()


@pytest.fixture(scope="session")
def comparisons() -> Counter[str]:
    """Tests add how many results they compared with each oracle; the total is printed at the end."""
    return _COMPARISONS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _COMPARISONS:
        parts = ", ".join(f"{name}: {count}" for name, count in sorted(_COMPARISONS.items()))
        terminalreporter.write_line(f"results compared with oracles -- {parts}")
