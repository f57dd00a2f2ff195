"""The Hypothesis profiles of the project and the kit: ``dev`` (quick, random), ``ci`` (derandomized,
about 200 examples x 40 steps per machine; the kit's default, so a check fails the same way every
run) and ``nightly`` (10x ci, random)."""

from hypothesis import HealthCheck, settings

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]


def register_profiles() -> None:
    """Register the three profiles with Hypothesis (idempotent); loading one is the caller's choice."""
    settings.register_profile(
        "dev", max_examples=30, stateful_step_count=25, deadline=None, suppress_health_check=_SLOW_OK
    )
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
