"""The conformance kit on both of our implementations (clean), and on the mutants (each caught)."""

import pytest
import torch

from arctic_ref.spec import rejection_sample, rejection_sample_loop, rejection_sample_with_noise
from arctic_ref.testing.check import Outcome
from arctic_ref.testing.sampler.kit import Injectable, check_rejection_sampler
from arctic_ref.testing.sampler.mutants import MUTATIONS, MutantLoop
from arctic_ref.testing.sampler.vllm_bugs import VLLM_BUG_SAMPLERS, SamplerBugReplay


def test_vectorised_full_report_is_clean() -> None:
    """Route B (seeded generators, predicted draws) plus every statistical check at full power."""
    report = check_rejection_sampler(rejection_sample, level="full", name="rejection_sample")
    print(report.to_markdown())
    assert report.ok, report.to_markdown()
    assert {i for i, v in report.items() if v.outcome is Outcome.PASS} >= {
        "E1",
        "E8",
        "E12",
        "RNG-ORDER",
        "S1",
        "S2",
        "S3",
        "S4",
        "S5",
    }


def test_vectorised_with_injected_noise_is_clean() -> None:
    candidate = Injectable(rejection_sample_with_noise)
    report = check_rejection_sampler(candidate, with_noise=candidate.inject, level="full", statistics=False)
    assert report.ok, report.to_markdown()
    assert all(v.outcome is Outcome.PASS for i, v in report.items() if i != "RNG-ORDER")


def test_loop_reference_exact_checks_are_clean() -> None:
    """The loop equals the vectorised path bit for bit (E8 here, E19 in test_rejection), so the
    statistical battery of the vectorised run covers it; its own statistical run is in the slow set."""
    candidate = Injectable(rejection_sample_loop)
    report = check_rejection_sampler(
        candidate, with_noise=candidate.inject, level="full", name="loop", statistics=False
    )
    assert report.ok, report.to_markdown()


@pytest.mark.slow
def test_loop_reference_statistics_are_clean() -> None:
    candidate = Injectable(rejection_sample_loop)
    report = check_rejection_sampler(candidate, with_noise=candidate.inject, level="quick", name="loop")
    assert report.ok, report.to_markdown()


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_every_mutant_is_caught(mutation: str) -> None:
    candidate = Injectable(MutantLoop(mutation))  # type: ignore[arg-type]
    report = check_rejection_sampler(candidate, with_noise=candidate.inject, level="quick", statistics=False)
    assert not report.ok, f"mutant {mutation} passed every check"


@pytest.mark.parametrize("replay", VLLM_BUG_SAMPLERS, ids=lambda r: r.id)
def test_every_vllm_bug_replay_is_caught(replay: SamplerBugReplay) -> None:
    """vLLM's bugs of bugs.md, each as an external sampler: the kit fails it on the named checks."""
    report = check_rejection_sampler(replay.sampler, level="quick", statistics=False, name=replay.id)
    failed = set(report.failed())
    assert replay.caught_by <= failed, f"{replay.id}: failed {sorted(failed)}, expected {sorted(replay.caught_by)}"


def test_report_renders() -> None:
    candidate = Injectable(MutantLoop("recover_from_p"))
    report = check_rejection_sampler(candidate, with_noise=candidate.inject, level="quick", statistics=False)
    assert '"ok": false' in report.to_json()
    assert "| E8 | FAIL |" in report.to_markdown()
    assert not report["E8"].passed and "first case" in report["E8"].detail


def _no_bonus(*args: object) -> torch.Tensor:
    """Never emits the bonus token: a row whose drafts are all accepted ends without it."""
    out = rejection_sample(*args)  # type: ignore[arg-type]
    num_draft_tokens = args[1]
    assert isinstance(num_draft_tokens, list)
    for i, n in enumerate(num_draft_tokens):
        if int(out[i, n]) != -1:
            out[i, n] = -1
    return out


def _not_a_tensor(*args: object) -> object:
    return [[1, 2, 3]]


@pytest.mark.parametrize("sampler", [_no_bonus, _not_a_tensor], ids=["no-bonus", "not-a-tensor"])
def test_the_kit_never_hangs_or_raises_on_a_broken_sampler(sampler: object) -> None:
    """A sampler that never emits the bonus once looped for ever in E20's generation; malformed
    output once crashed the statistics (np.bincount). Both are failed checks now, naming the row."""
    report = check_rejection_sampler(sampler, level="quick")  # type: ignore[arg-type]
    failed = set(report.failed())
    assert {"E20", "S1"} <= failed, failed
    s1 = report["S1"]
    assert "MalformedOutput" in s1.detail and ("row" in s1.detail or "not a tensor" in s1.detail), s1.detail
