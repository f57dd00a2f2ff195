"""A state machine run as one check: the first failure is reported at once, then shrunk for a
bounded time (docs/suffix-decoding.md §9); the tree and cache machines both run this way."""

from collections.abc import Callable
from typing import Any

from hypothesis import Phase, settings
from hypothesis.database import InMemoryExampleDatabase
from hypothesis.errors import Flaky
from hypothesis.stateful import run_state_machine_as_test

from arctic_ref.testing.check import CheckTimeout, Verdict, describe_exception, time_limit

SHRINK_SECONDS = 60.0
"""How long a failing state machine may shrink its example before the unshrunk one is reported."""


def machine_verdict(make: Callable[[], Any], profile: settings, what: str, check_id: str) -> Verdict:
    """Run the state machine ``make`` builds under ``profile``. A failure is reported as soon as it
    is found: the first run does not shrink; a second run shrinks it for at most ``SHRINK_SECONDS``,
    and the unshrunk example stands if shrinking is cut off or Hypothesis finds the rerun flaky.
    Both runs share a private in-memory example database, so the second starts from the failure
    and neither writes to the user's ``.hypothesis`` folder."""
    compared = f"{what}, {profile.max_examples} runs of up to {profile.stateful_step_count} steps"
    if profile.derandomize:
        compared += ", derandomized"
    examples = InMemoryExampleDatabase()
    fast = settings(
        profile,
        database=examples,
        phases=[p for p in profile.phases if p is not Phase.shrink],
        report_multiple_bugs=False,
    )
    try:
        run_state_machine_as_test(make, settings=fast)  # type: ignore[arg-type]  # any factory works
    except Exception as error:  # the implementation failed (or crashed): that is the verdict
        first = describe_exception(error)
    else:
        return Verdict(passed=True, compared=compared)
    shrunk = settings(profile, database=examples, report_multiple_bugs=False)
    try:
        with time_limit(SHRINK_SECONDS):
            run_state_machine_as_test(make, settings=shrunk)  # type: ignore[arg-type]
    except CheckTimeout:
        detail = f"{first}\n(shrinking stopped after {SHRINK_SECONDS:.0f} s; this is the unshrunk example)"
    except Flaky as error:  # Hypothesis could not replay it consistently: the first failure stands
        detail = f"{first}\n(not shrunk: the rerun was flaky, {type(error).__name__})"
    except Exception as error:  # the same failure, shrunk
        detail = describe_exception(error)
    else:
        detail = f"{first}\n(the failure did not recur when rerun with shrinking: flaky)"
    return Verdict(passed=False, compared=compared, detail=detail, replay=_replay_hint(profile, check_id))


def _replay_hint(profile: settings, check: str) -> str:
    return (
        f"rerun this check alone (-k {check}); Hypothesis profile derandomize={profile.derandomize}, "
        "so a derandomized run fails the same way; the steps are listed above"
    )
