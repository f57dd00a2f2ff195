"""Exact properties of rejection_sample on a Hypothesis corpus, hand-built examples, errors."""

import random

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

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
    parse_output,
    rejection_sample,
    rejection_sample_loop,
    rejection_sample_with_noise,
    validate_inputs,
)
from arctic_ref.spec.rejection import values_checkable_on
from arctic_ref.spec.sampling import apply_top_k
from arctic_ref.testing.sampler.corpus import random_case, random_noise
from arctic_ref.testing.sampler.exact import layout_problem


@given(st.integers(0, 2**31 - 1), st.sampled_from([INTENDED, VLLM_0_9_2, VLLM_0_32]))
def test_e19_loop_equals_vectorised(seed: int, profile: SamplerProfile) -> None:
    """E19: bitwise equality on injected noise, every profile."""
    rng = random.Random(seed)
    case = random_case(rng)
    noise = random_noise(case, profile, rng)
    fast = rejection_sample_with_noise(*case.args(), noise, profile=profile)
    slow = rejection_sample_loop(*case.args(), noise, profile=profile)
    assert torch.equal(fast, slow)
    assert layout_problem(case, fast) == ("", "")


@given(st.integers(0, 2**31 - 1))
def test_e12_identity_of_draw_then_sample(seed: int) -> None:
    rng = random.Random(seed)
    case = random_case(rng, seeded=True)
    torch.manual_seed(seed)
    direct = rejection_sample(*case.args())
    torch.manual_seed(seed)
    args = case.args()
    noise = draw_noise(args[1], case.vocab, args[7])
    assert torch.equal(direct, rejection_sample_with_noise(*case.args(), noise))


def one_row(logits: list[float], drafts: list[int], temperature: float = 1.0) -> tuple:
    n = len(drafts)
    return (
        torch.tensor(drafts),
        [n],
        max(n, 1),
        torch.tensor([n]),
        None,
        torch.tensor([logits] * n, dtype=torch.float32),
        torch.tensor([[7]]),
        SamplingMetadata(
            temperature=torch.tensor([temperature]), all_greedy=temperature < 1e-5, all_random=temperature >= 1e-5
        ),
    )


def test_greedy_writes_the_argmax_and_stops() -> None:
    args = one_row([0.0, 3.0, 1.0], [1, 2, 1], temperature=0.0)
    assert rejection_sample(*args).tolist() == [[1, 1, -1, -1]]
    args = one_row([0.0, 3.0, 1.0], [1, 1], temperature=-1.0)
    assert rejection_sample(*args).tolist() == [[1, 1, 7]]


def test_zero_probability_draft_is_never_accepted_even_at_u_zero() -> None:
    args = list(one_row([0.0, float("-inf"), 1.0], [1]))
    noise = RejectionNoise(uniforms=torch.zeros(1, dtype=torch.float64), exponentials=torch.ones(1, 3))
    out = rejection_sample_with_noise(*args, noise)
    assert out[0, 0].item() != 1
    assert rejection_sample_with_noise(*args, noise, profile=VLLM_0_9_2)[0, 0].item() != 1


@pytest.mark.parametrize(
    ("uniforms", "exponentials", "message"),
    [
        ([1.0], [[1.0]], "uniforms must lie in"),
        ([-0.1], [[1.0]], "uniforms must lie in"),
        ([0.5], [[0.0]], "exponentials must lie in"),
        ([0.5], [[float("inf")]], "exponentials must lie in"),
    ],
)
def test_injected_noise_out_of_range_is_refused(
    uniforms: list[float], exponentials: list[list[float]], message: str
) -> None:
    """u in [0, 1) and E in (0, inf): u = 1 could accept a zero-probability draft, E = 0 divides by zero."""
    with pytest.raises(ValueError, match=message):
        RejectionNoise(uniforms=torch.tensor(uniforms, dtype=torch.float64), exponentials=torch.tensor(exponentials))
    RejectionNoise(uniforms=torch.tensor([0.0, 0.999], dtype=torch.float64), exponentials=torch.tensor([[1e-30, 5.0]]))


def test_errors_name_the_values() -> None:
    args = list(one_row([0.0, 1.0], [1, 0]))
    with pytest.raises(SpecLengthError, match="max_spec_len\\(33\\)"):
        rejection_sample(args[0], args[1], 33, *args[3:])
    bad = list(args)
    bad[0] = torch.tensor([1, 2])
    with pytest.raises(ValueError, match="outside \\[0, 2\\)"):
        rejection_sample(*bad)
    bad = list(args)
    bad[7] = SamplingMetadata(temperature=torch.tensor([1.0]), all_greedy=True, all_random=False)
    with pytest.raises(ValueError, match="all_greedy flag"):
        rejection_sample(*bad)
    bad = list(args)
    bad[5] = torch.full((2, 2), float("nan"))
    with pytest.raises(ValueError, match="NaN"):
        rejection_sample(*bad)


def test_inputs_are_not_mutated() -> None:
    rng = random.Random(3)
    case = random_case(rng, seeded=True)
    args = case.args()
    before = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    rejection_sample(*args)
    for a, b in zip(args, before, strict=True):
        if isinstance(a, torch.Tensor):
            assert torch.equal(a, b)


def test_parse_output() -> None:
    raw = torch.tensor([[3, 5, -1], [9, 12, 1]], dtype=torch.int32)
    assert parse_output(raw, 10) == [[3, 5], [9, 1]]


@pytest.mark.parametrize("seed", range(20))
def test_bonus_token_ids_may_be_flat_as_vllm_tests_pass_them(seed: int) -> None:
    """vLLM's own tests pass ``bonus_token_ids`` as ``[B]`` (its kernels read it flat): the same
    output as ``[B, 1]``, on the seeded path, the injected-noise path and the loop reference."""
    case = random_case(random.Random(seed), seeded=True)
    args = list(case.args())
    flat = [*args[:6], args[6].reshape(-1), *args[7:]]
    column = rejection_sample(*args)
    case_again = random_case(random.Random(seed), seeded=True)  # fresh generators, same draws
    again = list(case_again.args())
    assert torch.equal(rejection_sample(*again[:6], again[6].reshape(-1), *again[7:]), column)
    profile: SamplerProfile = VLLM_0_9_2 if seed % 2 else INTENDED
    noise = random_noise(case, profile, random.Random(seed))
    assert torch.equal(
        rejection_sample_with_noise(*flat, noise, profile=profile),
        rejection_sample_with_noise(*args, noise, profile=profile),
    )
    assert torch.equal(
        rejection_sample_loop(*flat, noise, profile=profile), rejection_sample_loop(*args, noise, profile=profile)
    )


@pytest.mark.parametrize("shape", [(2, 2), (3,), (1, 2, 1)], ids=["two-columns", "wrong-length", "three-dims"])
def test_other_bonus_shapes_are_rejected_naming_the_shape(shape: tuple[int, ...]) -> None:
    args = list(one_row([0.0, 1.0], [1]))
    args = [*args[:6], torch.zeros(shape, dtype=torch.int64), *args[7:]]
    num_reqs = len(args[1])
    # validate_inputs directly: under the suite's runtime shape checks the annotation refuses first
    with pytest.raises(
        ValueError,
        match=rf"bonus_token_ids must be int \[{num_reqs}, 1\] or \[{num_reqs}\], got torch.int64 \({', '.join(map(str, shape))}",
    ):
        validate_inputs(*args, INTENDED)


def test_placeholder_drafts_raise_where_recent_vllm_rejects_them_silently() -> None:
    """A deliberate difference (README): a −1 (placeholder) draft id is an error here."""
    args = list(one_row([0.0, 1.0], [1]))
    args[0] = torch.tensor([-1])
    with pytest.raises(ValueError, match="outside"):
        rejection_sample(*args)


def test_top_k_of_the_whole_vocabulary_is_a_no_op_even_for_one_token() -> None:
    """k = V keeps every entry, V = 1 included (its no-op rows must not ask topk for 2 of 1)."""
    for vocab in (1, 2, 5):
        x = torch.arange(2 * vocab, dtype=torch.float32).reshape(2, vocab)
        assert torch.equal(apply_top_k(x, torch.full((2,), vocab)), x)
        assert torch.equal(apply_top_k(x, torch.full((2,), vocab + 3)), x)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_intended_profile_computes_in_float32(dtype: torch.dtype) -> None:
    """INTENDED processes low-precision logits in float32 (target_dtype): the same bits as the
    upcast logits; VLLM_0_9_2 keeps the logits' own dtype, so its temperature quotient is rounded."""
    logits = (torch.randn(4, 50, generator=torch.Generator().manual_seed(0)) * 3).to(dtype)
    meta = SamplingMetadata(temperature=torch.tensor([0.7, 1.3]), all_greedy=False, all_random=True)
    cu = torch.tensor([2, 4])
    ours = compute_target_probs(logits, cu, meta, profile=INTENDED)
    assert torch.equal(ours, compute_target_probs(logits.float(), cu, meta, profile=INTENDED))
    assert not torch.equal(compute_target_probs(logits, cu, meta, profile=VLLM_0_9_2), ours)


def test_value_rules_go_inside_the_kernels_only_where_a_value_error_can_be_undone() -> None:
    """The fused path checks values inside its first launch only for random batches with no
    per-request generator, and only when every tensor is already on the logits' device."""
    cpu, meta = torch.device("cpu"), one_row([0.0, 1.0], [1])[-1]
    tensors = (torch.tensor([1]), torch.tensor([1]), None)
    assert values_checkable_on(cpu, tensors, meta)
    greedy = SamplingMetadata(temperature=torch.tensor([0.0]), all_greedy=True, all_random=False)
    assert not values_checkable_on(cpu, tensors, greedy)
    assert not values_checkable_on(cpu, tensors, SamplingMetadata(temperature=None, all_greedy=True, all_random=False))
    seeded = SamplingMetadata(
        temperature=torch.tensor([1.0]), all_greedy=False, all_random=True, generators={0: torch.Generator()}
    )
    assert not values_checkable_on(cpu, tensors, seeded)
    assert not values_checkable_on(cpu, (*tensors, [1]), meta)  # a list is not a tensor on the device
    assert not values_checkable_on(torch.device("meta"), tensors, meta)
