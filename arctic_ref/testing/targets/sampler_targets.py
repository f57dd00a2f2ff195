"""Checks of a user's rejection sampler (vLLM's ``rejection_sample`` argument list): every check of
the conformance kit (verification.md §5, §6) as its own named check, from one run of the kit."""

from functools import partial
from typing import Literal

from arctic_ref.spec.profile import INTENDED, VLLM_0_9_2, SamplerProfile
from arctic_ref.testing.rejection.kit import check_rejection_sampler
from arctic_ref.testing.rejection.report import ConformanceReport, RejectionSampleFn, Status
from arctic_ref.testing.targets.verdict import RunFailed, SharedRun, TargetCheck, Verdict

Level = Literal["quick", "full"]
ProfileName = Literal["intended", "vllm-0.9.2"]
PROFILES: dict[ProfileName, SamplerProfile] = {"intended": INTENDED, "vllm-0.9.2": VLLM_0_9_2}

MEANINGS = {
    "E1": "output shape [B, max_spec_len+1], int32, on the logits' device",
    "E2": "rows left-packed, 1 <= L <= n+1, -1 after the prefix",
    "E3": "the accepted prefix equals the drafts; a rejected draft is not re-emitted",
    "E4": "all drafts accepted <=> the row ends with the bonus token",
    "E5": "greedy rows follow the argmax rule, independent of noise and other rows",
    "E6": "a zero-probability draft is never accepted; probability 1 always is",
    "E7": "a recovered id is in the vocabulary with positive residual probability",
    "E8": "acceptance and recovery equal the closed-form rule bit for bit (known randomness)",
    "E9": "one-hot draft_probs give the output of draft_probs=None",
    "E10": "permuting or splitting the batch permutes or splits the output",
    "E11": "greedy and draft-less rows advance no generator",
    "E12": "a seeded row draws n uniforms then V exponentials, as on a clone",
    "E13": "a seeded row depends only on its own inputs and generator",
    "E14": "no argument is mutated",
    "E15": "input validation (its own category: deselect with -k 'not E15' if you validate elsewhere)",
    "E16": "temperatures below 1e-5 are greedy, 1e-5 is random",
    "E17": "temperature -> top-k (ties kept) -> top-p (maximum kept) on hand-built rows",
    "E18": "parse_output returns exactly the emitted lists",
    "E20": "greedy speculative generation equals plain greedy decoding, with six drafters",
    "RNG-ORDER": "per-request generators advance in vLLM's order (predicted on clones)",
    "S1": "per position, conditional on emission, tokens follow the target (chi-square, family alpha 1e-4)",
    "S2": "acceptance rate inside a 5-sigma band at every position; mean emitted length matches",
    "S3": "conditional on rejection, the recovered token follows the residual (chi-square)",
    "S4": "the exponential race alone follows w / sum(w) (chi-square)",
    "S5": "drafts never change the output distribution (exact 216-sequence GOF, chi-square)",
    "S5-SPEED": "an oracle drafter needs fewer verification steps than no drafter",
    "S-DESIGN": "every tested (position, branch) got enough conditional samples",
}


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
        lambda _: check_rejection_sampler(sampler, level=level, device=device, profile=PROFILES[profile], name=name,
                                          statistics=statistics)
    )  # fmt: skip

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
        TargetCheck(component="sampler", id=check_id, meaning=meaning, run=partial(verdict_of, check_id),
                    seconds=1800.0)  # the first check run pays for the whole kit
        for check_id, meaning in MEANINGS.items()
    ]  # fmt: skip
