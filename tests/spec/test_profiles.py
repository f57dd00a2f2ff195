"""The sampler profiles row by row (docs/verification.md, the profile table): each test is one row of
the table, run for every profile, on a hand-built case where the profiles part ways. Everything not
listed there is profile-free, which test_rejection.py's loop ≡ vectorised check covers per profile."""

import pytest
import torch

from arctic_ref.spec import (
    INTENDED,
    VLLM_0_9_2,
    VLLM_0_32,
    RejectionNoise,
    SamplerProfile,
    SamplingMetadata,
    SpecLengthError,
    compute_target_probs,
    draw_noise,
    rejection_sample_loop,
    rejection_sample_with_noise,
)

PROFILES = [INTENDED, VLLM_0_9_2, VLLM_0_32]
IDS = [p.name for p in PROFILES]


def _random_meta(num_reqs: int, **extra: torch.Tensor) -> SamplingMetadata:
    return SamplingMetadata(temperature=torch.ones(num_reqs), all_greedy=False, all_random=True, generators={}, **extra)


def _one_row(logits: list[float], draft: int) -> tuple:
    return (
        torch.tensor([draft]),
        [1],
        1,
        torch.tensor([1]),
        None,
        torch.tensor([logits]),
        torch.tensor([[99]]),
        _random_meta(1),
    )


def _both(args: tuple, noise: RejectionNoise, profile: SamplerProfile) -> list[int]:
    """The vectorised sampler's row, after checking the loop reference agrees."""
    fast = rejection_sample_with_noise(*args, noise, profile=profile)
    assert torch.equal(fast, rejection_sample_loop(*args, noise, profile=profile))
    return [int(t) for t in fast[0].tolist()]


@pytest.mark.parametrize("profile", PROFILES, ids=IDS)
def test_uniforms_are_drawn_in_the_profiles_dtype(profile: SamplerProfile) -> None:
    noise = draw_noise([2], 4, _random_meta(1), profile=profile)
    assert noise is not None
    assert noise.uniforms.dtype == {"intended": torch.float64, "vllm-0.9.2": torch.float32}.get(
        profile.name, torch.float64
    )


@pytest.mark.parametrize("profile", PROFILES, ids=IDS)
def test_acceptance_compares_in_the_profiles_dtype(profile: SamplerProfile) -> None:
    """u a hair above p(d) (less than half a float32 step): a float64 comparison rejects, vLLM
    0.32's CPU kernel rounds u to float32 first, where it equals p(d), and accepts (V-18)."""
    args = _one_row([0.0, 0.0], draft=0)  # p = (0.5, 0.5) exactly
    p = 0.5
    u = p + 2.0**-30  # float32 rounds it to 0.5
    assert float(torch.tensor(u, dtype=torch.float32)) == p
    noise = RejectionNoise(uniforms=torch.tensor([u], dtype=torch.float64), exponentials=torch.ones(1, 2))
    if profile.uniform_dtype == torch.float32:
        noise = RejectionNoise(uniforms=noise.uniforms.float(), exponentials=noise.exponentials)
    row = _both(args, noise, profile)
    accepted = row[0] == 0
    assert accepted == (profile.name != "intended"), row


@pytest.mark.parametrize("profile", PROFILES, ids=IDS)
def test_the_race_divides_or_multiplies_by_the_reciprocal(profile: SamplerProfile) -> None:
    """Draft 2 is rejected; the race runs over p_0 and p_1 with noise E_0, E_1 chosen so that
    p_1/E_1 < p_0/E_0 (token 0 wins) while p_1·(1/E_1) > p_0·(1/E_0) (token 1 wins): vLLM 0.32
    computes ``q.reciprocal()`` once and multiplies, which rounds differently."""
    logits = [0.0, 0.1, -1.0]
    probs = torch.tensor([logits]).softmax(dim=-1, dtype=torch.float32)[0]
    race = torch.tensor([0.7147577404975891, 0.7899294495582581, 1.0])
    assert probs[1] / race[1] < probs[0] / race[0]
    assert probs[1] * race[1].reciprocal() > probs[0] * race[0].reciprocal()
    noise = RejectionNoise(uniforms=torch.tensor([0.99], dtype=profile.uniform_dtype), exponentials=race[None])
    row = _both(_one_row(logits, draft=2), noise, profile)
    assert row[0] == (1 if profile.race == "reciprocal" else 0)


@pytest.mark.parametrize("profile", PROFILES, ids=IDS)
def test_greedy_argmax_in_a_mixed_batch(profile: SamplerProfile) -> None:
    """A greedy row whose two largest logits tie, with top-p 0.3: top-p keeps one of the tied
    maxima (the one the ascending sort puts last). INTENDED takes the first maximum of the raw
    logits; vLLM 0.9.2 the argmax of the masked float32 probabilities and vLLM 0.32 that of the
    masked float32 logits: both the survivor."""
    logits = torch.tensor([[2.0, 2.0, 0.0], [0.0, 1.0, 2.0]])
    survivor = int(logits[0].sort().indices[-1])
    meta = SamplingMetadata(
        temperature=torch.tensor([0.0, 1.0]),
        all_greedy=False,
        all_random=False,
        top_p=torch.tensor([0.3, 1.0]),
        generators={},
    )
    args = (torch.tensor([1, 2]), [1, 1], 1, torch.tensor([1, 2]), None, logits, torch.tensor([[7], [8]]), meta)
    noise = RejectionNoise(uniforms=torch.zeros(2, dtype=profile.uniform_dtype) + 0.5, exponentials=torch.ones(2, 3))
    out = rejection_sample_with_noise(*args, noise, profile=profile)
    assert torch.equal(out, rejection_sample_loop(*args, noise, profile=profile))
    expected = 0 if profile.greedy_argmax_on == "logits" else survivor
    assert int(out[0, 0]) == expected
    if survivor == 0:
        pytest.skip("this torch sorts the tie so that the first maximum survives: the row cannot tell")


@pytest.mark.parametrize("profile", PROFILES, ids=IDS)
def test_processing_dtype(profile: SamplerProfile) -> None:
    """bf16 logits: INTENDED and vLLM 0.32 upcast before the temperature, vLLM 0.9.2 divides in bf16."""
    logits = torch.tensor([[0.1, 0.7, 1.3, 2.9]], dtype=torch.bfloat16)
    meta = SamplingMetadata(temperature=torch.tensor([0.7]), all_greedy=False, all_random=True, generators={})
    probs = compute_target_probs(logits, torch.tensor([1]), meta, profile=profile)
    upcast = compute_target_probs(logits.float(), torch.tensor([1]), meta, profile=profile)
    assert torch.equal(probs, upcast) == (profile.target_dtype == torch.float32)


@pytest.mark.parametrize("profile", PROFILES, ids=IDS)
def test_the_spec_length_limit(profile: SamplerProfile) -> None:
    """32 drafts per request for INTENDED and vLLM 0.9.2; vLLM 0.32 raised its MAX_SPEC_LEN to 128.
    Above the limit: ``SpecLengthError``, never a truncation."""
    limit = {"vllm-0.32": 128}.get(profile.name, 32)
    assert profile.max_spec_len_limit == limit
    for n, fails in ((limit, False), (limit + 1, True)):
        args = (
            torch.zeros(n, dtype=torch.int64),
            [n],
            n,
            torch.tensor([n]),
            None,
            torch.zeros(n, 4),
            torch.tensor([[1]]),
            SamplingMetadata(temperature=None, all_greedy=True, all_random=False, generators={}),
        )
        if fails:
            with pytest.raises(SpecLengthError):
                rejection_sample_with_noise(*args, None, profile=profile)
        else:
            assert rejection_sample_with_noise(*args, None, profile=profile).shape == (1, n + 1)


def test_v21_replay_is_caught_by_e5() -> None:
    """V-21's replay: our sampler under ``VLLM_0_32`` (greedy rows of a mixed batch read the masked
    logits) as a candidate checked against ``INTENDED``: the kit's E5 fails on its tied-maxima probe
    and on nothing else; under its own profile it passes."""
    from functools import partial

    from arctic_ref.spec import rejection_sample
    from arctic_ref.testing.sampler.kit import check_rejection_sampler

    replay = partial(rejection_sample, profile=VLLM_0_32)
    survivor = int(torch.tensor([2.0, 2.0, 0.0]).sort().indices[-1])
    if survivor == 0:
        pytest.skip("this torch sorts the tie so that the first maximum survives: the probe cannot tell")
    report = check_rejection_sampler(replay, level="quick", statistics=False)
    assert report.failed() == ["E5", "E15-SPEC-LEN"], report.failed()
    e5 = report["E5"]
    assert e5.detail.startswith("1 of 33 failed; first case: ") and "V-21" in e5.detail, e5.detail
    assert check_rejection_sampler(replay, level="quick", statistics=False, profile=VLLM_0_32).failed() == []
