"""The sampler component: the rejection-sampler conformance kit (docs/verification.md §5, §6) as one
named check per kit check, from one run of the kit, on any function with vLLM's ``rejection_sample``
argument list, or on a class with vLLM 0.32's ``RejectionSampler`` interface, built and called as
vLLM's V1 runner does (``vllm_class.py``); on ours (``arctic_ref.spec.rejection_sample``)
also the kit's summary row ``rejection-kit``.

On vLLM 0.32's own class the kit's checks that vLLM's documented differences explain
(``VLLM_0_32_DIFFERENCES``) are known differences: reported, and failures only under
``--arctic-ref-strict``; the strict inputs its kernels would write out of bounds with are not fed."""

from functools import partial
from pathlib import Path
from typing import Final

from arctic_ref.check_options import SAMPLER_CATEGORIES, CheckOptions, SamplerProfileName
from arctic_ref.spec.profile import INTENDED, VLLM_0_9_2, VLLM_0_32, SamplerProfile
from arctic_ref.spec.rejection import rejection_sample
from arctic_ref.testing.check import Check, Outcome, RunFailed, SharedRun, Verdict
from arctic_ref.testing.loading import load_target, require_callable
from arctic_ref.testing.sampler.check_ids import S_DESIGN
from arctic_ref.testing.sampler.kit import check_rejection_sampler
from arctic_ref.testing.sampler.report import ConformanceReport
from arctic_ref.testing.sampler.sampler_fn import RejectionSampleFn
from arctic_ref.testing.sampler.stats import STATISTICS_STOPPED
from arctic_ref.testing.sampler.table import MEANINGS
from arctic_ref.testing.sampler.vllm_class import VllmClassSampler, is_sampler_class

SAMPLER_PROFILES: Final[dict[SamplerProfileName, SamplerProfile]] = {
    "intended": INTENDED,
    "vllm-0.9.2": VLLM_0_9_2,
    "vllm-0.32": VLLM_0_32,
}


def load(value: str, options: CheckOptions, base_dir: Path | None) -> RejectionSampleFn:
    """The sampler ``value`` names: a function as it is, a class built by ``VllmClassSampler``; a
    one-line ``TargetError`` when it is neither a callable nor a class with vLLM 0.32's interface,
    or when the class needs vLLM and vLLM does not import."""
    option = options.option("sampler")
    target = load_target(option, value, base_dir=base_dir)
    if is_sampler_class(target):
        return VllmClassSampler(option, value, target, options.device)
    return require_callable(option, value, target)


def checks(sampler: RejectionSampleFn | None, options: CheckOptions) -> list[Check]:
    """One check per kit check (``MEANINGS``); the kit runs once, on the first check that is run.
    ``None`` checks ours, and adds the summary row ``rejection-kit`` in front."""
    ours = sampler is None
    candidate: RejectionSampleFn = rejection_sample if sampler is None else sampler
    name = "rejection_sample" if ours else "yours"
    level, profile = options.level, options.profile
    known: tuple[str, ...] = ()
    unsafe: dict[str, str] = {}
    if isinstance(candidate, VllmClassSampler):  # vLLM's own class: its differences, its unsafe inputs
        known, unsafe = candidate.known_differences, candidate.unsafe_inputs
    shared: SharedRun[None, ConformanceReport] = SharedRun(
        lambda _: check_rejection_sampler(
            candidate,
            level=level,
            device=options.device,
            profile=SAMPLER_PROFILES[profile],
            name=name,
            statistics=options.statistics,
            categories=tuple(c for c in SAMPLER_CATEGORIES if c not in options.leave_out),
            known_differences=known,
            unsafe_inputs=unsafe,
        )
    )
    group = "rejection-kit" if ours else ""
    listed = [
        Check(
            component="sampler",
            id=check_id,
            meaning=meaning,
            run=partial(_verdict_of, shared, check_id, options),
            seconds=1800.0,  # the first check run pays for the whole kit
            group=group,
        )
        for check_id, meaning in MEANINGS.items()
    ]
    if not ours:
        return listed
    summary = Check(
        component="sampler",
        id="rejection-kit",
        meaning="every check of the conformance kit passes on arctic_ref's rejection_sample",
        title=f"rejection sampler conformance kit ({level})",
        run=partial(_summary, shared),
        seconds=1800.0,
        group=group,
    )
    return [summary, *listed]


def _summary(shared: SharedRun[None, ConformanceReport]) -> Verdict:
    report = shared.get(None)
    if isinstance(report, RunFailed):
        return Verdict(passed=False, detail=report.message)
    failed = report.failed()
    passed = sum(1 for v in report.values() if v.outcome is Outcome.PASS)
    worst = min(report.p_values.values(), default=None)
    return Verdict(
        passed=not failed,
        compared="the kit's checks on arctic_ref's rejection_sample",
        count=passed,
        figures={
            "checks passed": f"{passed}/{len(report)}",
            "smallest p-value": f"{worst:.3g}" if worst else "-",
        },
        detail=", ".join(failed),
    )


def _verdict_of(shared: SharedRun[None, ConformanceReport], check_id: str, options: CheckOptions) -> Verdict:
    """The kit's verdict on ``check_id`` as found (the front door settles a known difference); for a
    check the kit did not run, why."""
    report = shared.get(None)
    meaning = MEANINGS[check_id]
    if isinstance(report, RunFailed):
        return Verdict(passed=False, compared=meaning, detail=f"the kit could not run the sampler: {report.message}")
    found = report.get(check_id)
    if found is not None:
        return found
    stopped = next((v.detail for v in report.values() if v.detail.startswith(STATISTICS_STOPPED)), "")
    if stopped:  # S-DESIGN and S5-SPEED are not reported when the sampler stopped S1–S5
        return Verdict(passed=True, compared=meaning, skipped=f"not run: {stopped}")
    if check_id == S_DESIGN and options.statistics:  # the kit reports it only when it fails
        return Verdict(passed=True, compared=meaning, count=1, detail="enough samples everywhere")
    return Verdict(passed=True, compared=meaning, skipped="statistics off (--arctic-ref-no-statistics)")
