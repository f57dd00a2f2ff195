"""Test-wide set-up: Hypothesis profiles and runtime shape checking.

Profiles (choose with HYPOTHESIS_PROFILE): ``dev`` (quick, random), ``ci`` (derandomized, about 200
examples x 40 steps per machine) and ``nightly`` (10x ci). Shape annotations of the tensor packages
are checked at run time through jaxtyping + beartype; the pure-Python suffix package is left
unwrapped because a wrapper per call would dominate its hot loops.
"""

import os
from collections import Counter

import pytest
from hypothesis import settings
from jaxtyping import install_import_hook

install_import_hook(["arctic_ref.spec", "arctic_ref.parallel", "arctic_ref.model"], "beartype.beartype")

from arctic_ref.testing.profiles import register_profiles  # noqa: E402  (after the import hook)

register_profiles()
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


pytest_plugins = ["pytester"]

_COMPARISONS: Counter[str] = Counter()


@pytest.fixture(scope="session")
def comparisons() -> Counter[str]:
    """Tests add how many results they compared with each oracle; the total is printed at the end."""
    return _COMPARISONS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _COMPARISONS:
        parts = ", ".join(f"{name}: {count}" for name, count in sorted(_COMPARISONS.items()))
        terminalreporter.write_line(f"results compared with oracles -- {parts}")
