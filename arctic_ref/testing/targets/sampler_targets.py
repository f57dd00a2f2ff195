"""Checks of a user's rejection sampler (vLLM's ``rejection_sample`` argument list): every check of
the conformance kit (verification.md §5, §6) as its own named check, from one run of the kit."""

from functools import partial
from typing import Literal

from arctic_ref.spec.profile import INTENDED, VLLM_0_9_2, SamplerProfile
from arctic_ref.testing.rejection.check_ids import MEANINGS
from arctic_ref.testing.rejection.kit import check_rejection_sampler
from arctic_ref.testing.rejection.report import ConformanceReport, RejectionSampleFn, Status
from arctic_ref.testing.targets.verdict import RunFailed, SharedRun, TargetCheck, Verdict

Level = Literal["quick", "full"]
ProfileName = Literal["intended", "vllm-0.9.2"]
PROFILES: dict[ProfileName, SamplerProfile] = {"intended": INTENDED, "vllm-0.9.2": VLLM_0_9_2}


def sampler_checks(
    sampler: RejectionSampleFn,
    *,
    level: Level = "quick",
    device: str = "cpu",
    profile: ProfileName = "intended",
    name: str = "yours",
    statistics: bool = True,
) -> list[TargetCheck]:
    """One named check per kit check; the kit runs once, on the first check that is run."""
    shared: SharedRun[None, ConformanceReport] = SharedRun(
        lambda _: check_rejection_sampler(
            sampler, level=level, device=device, profile=PROFILES[profile], name=name, statistics=statistics
        )
    )

    def verdict_of(check_id: str) -> Verdict:
        report = shared.get(None)
        if isinstance(report, RunFailed):
            detail = f"the kit could not run the sampler: {report.message}"
            return Verdict(passed=False, compared=MEANINGS[check_id], detail=detail)
        found = next((c for c in report.checks if c.id == check_id), None)
        if found is None and check_id == "S-DESIGN":  # the kit adds it only when it fails
            return Verdict(passed=True, compared=MEANINGS[check_id], detail="enough samples everywhere")
        if found is None or found.status is Status.SKIP:
            reason = "statistics off (--arctic-ref-no-statistics)" if found is None else found.detail
            return Verdict(passed=True, compared=MEANINGS[check_id], skipped=reason)
        detail = found.detail + (f"; first case: {found.counterexample}" if found.counterexample else "")
        if found.p_value is not None:
            detail = f"p = {found.p_value:.3g} (threshold {found.threshold:.3g}); {detail}"
        return Verdict(
            passed=found.status is not Status.FAIL,
            compared=f"{MEANINGS[check_id]} [{level} level, profile {profile}, device {device}]",
            detail=detail,
            replay=f"check_rejection_sampler(yours, level={level!r}, seed=0) from arctic_ref.testing, check {check_id}",
        )

    return [
        TargetCheck(
            component="sampler", id=check_id, meaning=meaning, run=partial(verdict_of, check_id), seconds=1800.0
        )  # the first check run pays for the whole kit
        for check_id, meaning in MEANINGS.items()
    ]
