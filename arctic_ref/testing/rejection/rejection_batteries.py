"""The rejection-sampler battery of ``arctic-ref check``: the kit on ``rejection_sample``."""

from arctic_ref.spec.rejection import rejection_sample
from arctic_ref.testing.battery import BatteryResult, Outcome
from arctic_ref.testing.rejection.kit import check_rejection_sampler
from arctic_ref.testing.rejection.report import Status


def rejection_kit() -> BatteryResult:
    """The conformance kit (quick level: 400 exact cases, 50,000 requests per statistical test)."""
    report = check_rejection_sampler(rejection_sample, level="quick", name="rejection_sample")
    failed = report.failed()
    passed = sum(1 for c in report.checks if c.status is Status.PASS)
    worst = min((c.p_value for c in report.checks if c.p_value is not None), default=None)
    return BatteryResult(
        name="rejection sampler conformance kit (quick)",
        outcome=Outcome.FAIL if failed else Outcome.PASS,
        compared=passed,
        figures={
            "checks passed": f"{passed}/{len(report.checks)}",
            "smallest p-value": f"{worst:.3g}" if worst else "-",
        },
        detail=", ".join(failed),
    )
