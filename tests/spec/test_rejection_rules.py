"""Each input rule of docs/verification.md §1.2 on its own, and the boundaries of the acceptance rule.

A rule written as ``a or b`` is only tested when some input breaks ``a`` alone and another breaks
``b`` alone: every fault below changes one thing of a valid batch. The boundary examples pin the
comparisons (``u <= ratio`` accepts; a draft of zero target or zero proposal probability never does;
the recovery race skips tokens of zero residual, however small the others' scores) on both the
vectorised sampler and the loop reference.
"""

import math
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
import torch
from jaxtyping import config as jaxtyping_config
from torch import Tensor

from arctic_ref.spec import (
    INTENDED,
    VLLM_0_9_2,
    RejectionNoise,
    SamplingMetadata,
    SpecLengthError,
    compute_target_probs,
    draw_noise,
    parse_output,
    rejection_sample,
    rejection_sample_loop,
    rejection_sample_with_noise,
)
from arctic_ref.spec.sampling import apply_top_k, row_temperatures, sample_tokens

VOCAB = 4


def valid_batch() -> dict[str, Any]:
    """Two random requests with 2 and 1 drafts, V = 4: passes every rule."""
    return {
        "draft_token_ids": torch.tensor([1, 2, 3]),
        "num_draft_tokens": [2, 1],
        "max_spec_len": 2,
        "cu_num_draft_tokens": torch.tensor([2, 3], dtype=torch.int32),
        "draft_probs": torch.full((3, VOCAB), 0.25),
        "target_logits": torch.zeros(3, VOCAB),
        "bonus_token_ids": torch.tensor([[0], [1]]),
        "sampling_metadata": SamplingMetadata(
            temperature=torch.tensor([1.0, 0.5]),
            all_greedy=False,
            all_random=True,
            top_k=torch.tensor([2, VOCAB]),
            top_p=torch.tensor([1.0, 0.5]),
        ),
    }


def _meta(**changes: Any) -> Callable[[dict[str, Any]], None]:
    def change(batch: dict[str, Any]) -> None:
        batch["sampling_metadata"] = replace(batch["sampling_metadata"], **changes)

    return change


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(batch: dict[str, Any]) -> None:
        batch[key] = value

    return change


FAULTS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "counts-a-tensor": (_set("num_draft_tokens", torch.tensor([2, 1])), "non-empty list of ints"),
    "counts-empty": (_set("num_draft_tokens", []), "non-empty list of ints"),
    "counts-nested": (_set("num_draft_tokens", [[2], [1]]), "ints >= 0"),
    "counts-floats": (_set("num_draft_tokens", [2.0, 1.0]), "ints >= 0"),
    "counts-negative": (_set("num_draft_tokens", [4, -1]), "ints >= 0"),
    "max-spec-len-bool": (_set("max_spec_len", True), "max_spec_len must be an int"),
    "max-spec-len-float": (_set("max_spec_len", 2.0), "max_spec_len must be an int"),
    "max-spec-len-short": (_set("max_spec_len", 1), r"max\(num_draft_tokens\)\(2\) > max_spec_len\(1\)"),
    "draft-ids-float": (_set("draft_token_ids", torch.tensor([1.0, 2.0, 3.0])), "draft_token_ids must be"),
    "draft-ids-length": (_set("draft_token_ids", torch.tensor([1, 2])), r"draft_token_ids must be int32/int64 \[3\]"),
    "logits-float64": (_set("target_logits", torch.zeros(3, VOCAB, dtype=torch.float64)), "target_logits must be"),
    "logits-3d": (_set("target_logits", torch.zeros(3, VOCAB, 1)), "target_logits must be"),
    "logits-rows": (_set("target_logits", torch.zeros(4, VOCAB)), r"target_logits must be .* \[3, V\]"),
    "draft-probs-float64": (_set("draft_probs", torch.full((3, VOCAB), 0.25, dtype=torch.float64)), "draft_probs must"),
    "draft-probs-shape": (
        _set("draft_probs", torch.full((3, VOCAB + 1), 0.2)),
        r"draft_probs must be float32 \[3, 4\]",
    ),
    "cu-float": (_set("cu_num_draft_tokens", torch.tensor([2.0, 3.0])), "cu_num_draft_tokens must be int"),
    "cu-length": (_set("cu_num_draft_tokens", torch.tensor([2, 3, 3])), r"cu_num_draft_tokens must be int \[2\]"),
    "cu-values": (
        _set("cu_num_draft_tokens", torch.tensor([1, 2])),
        r"cu_num_draft_tokens\[0\]\(1\) != cumsum\(num_draft_tokens\)\[0\]\(2\)",
    ),
    "cu-second-value": (
        _set("cu_num_draft_tokens", torch.tensor([2, 4])),
        r"cu_num_draft_tokens\[1\]\(4\) != cumsum\(num_draft_tokens\)\[1\]\(3\)",
    ),
    "bonus-float": (_set("bonus_token_ids", torch.tensor([[0.0], [1.0]])), "bonus_token_ids must be int"),
    "no-temperature-not-greedy": (_meta(temperature=None, all_random=False), "temperature None means all greedy"),
    "no-temperature-all-random": (
        _meta(temperature=None, all_greedy=True, all_random=True),
        "temperature None means all greedy",
    ),
    "temperature-length": (_meta(temperature=torch.tensor([1.0])), r"temperature must be \[2\]"),
    "generator-past-the-batch": (_meta(generators={2: torch.Generator()}), r"generators for requests \[2\]"),
    "generator-negative": (_meta(generators={-1: torch.Generator()}), r"generators for requests \[-1\]"),
    "draft-id-negative": (_set("draft_token_ids", torch.tensor([1, -1, 3])), r"outside \[0, 4\)"),
    "draft-id-vocab": (_set("draft_token_ids", torch.tensor([1, 4, 3])), r"in \[1, 4\] outside \[0, 4\)"),
    "all-random-flag": (_meta(all_random=False), "all_random flag"),
    "top-k-zero": (_meta(top_k=torch.tensor([0, VOCAB])), r"top_k of a random request outside \[1, 4\]"),
    "top-k-past-vocab": (_meta(top_k=torch.tensor([2, VOCAB + 1])), r"top_k of a random request outside \[1, 4\]"),
    "top-p-zero": (_meta(top_p=torch.tensor([0.0, 1.0])), r"top_p of a random request outside \(0, 1\]"),
    "top-p-above-one": (_meta(top_p=torch.tensor([1.5, 1.0])), r"top_p of a random request outside \(0, 1\]"),
    "temperature-infinite": (_meta(temperature=torch.tensor([math.inf, 0.5])), "non-finite temperature"),
}


@pytest.fixture
def no_annotation_checks() -> Iterator[None]:
    """The test session checks annotations at run time (conftest); a user's process need not, so our
    own rules must hold alone. The type-level faults below never reach them while the checker runs."""
    before = jaxtyping_config.jaxtyping_disable
    jaxtyping_config.update("jaxtyping_disable", True)
    try:
        yield
    finally:
        jaxtyping_config.update("jaxtyping_disable", before)


@pytest.mark.parametrize("fault", FAULTS)
def test_each_rule_alone_rejects(fault: str, no_annotation_checks: None) -> None:
    change, message = FAULTS[fault]
    batch = valid_batch()
    rejection_sample(**valid_batch())  # the batch without the fault passes
    change(batch)
    with pytest.raises(ValueError, match=message):
        rejection_sample(**batch)


@pytest.mark.parametrize("fault", FAULTS)
def test_each_rule_alone_rejects_under_the_annotation_checker(fault: str) -> None:
    batch = valid_batch()
    FAULTS[fault][0](batch)
    with pytest.raises((ValueError, TypeError)):
        rejection_sample(**batch)


def test_the_boundaries_of_the_rules_pass() -> None:
    """The largest accepted values: max_spec_len at the profile's limit, top_k = V, top_p = 1, a
    generator for the last request, an all-greedy batch without temperatures."""
    batch = valid_batch()
    batch["max_spec_len"] = INTENDED.max_spec_len_limit
    batch["sampling_metadata"] = replace(
        batch["sampling_metadata"],
        top_k=torch.tensor([VOCAB, 1]),
        top_p=torch.tensor([1.0, 1.0]),
        generators={1: torch.Generator().manual_seed(0)},
    )
    out = rejection_sample(**batch)
    assert out.shape == (2, INTENDED.max_spec_len_limit + 1)
    with pytest.raises(SpecLengthError):
        rejection_sample(**batch | {"max_spec_len": INTENDED.max_spec_len_limit + 1})
    greedy = valid_batch() | {
        "sampling_metadata": SamplingMetadata(temperature=None, all_greedy=True, all_random=False)
    }
    assert rejection_sample(**greedy).shape == (2, 3)


def _one_draft(logits: list[float], draft: int, draft_probs: list[float] | None) -> dict[str, Any]:
    return {
        "draft_token_ids": torch.tensor([draft]),
        "num_draft_tokens": [1],
        "max_spec_len": 1,
        "cu_num_draft_tokens": torch.tensor([1]),
        "draft_probs": None if draft_probs is None else torch.tensor([draft_probs]),
        "target_logits": torch.tensor([logits]),
        "bonus_token_ids": torch.tensor([[9]]),
        "sampling_metadata": SamplingMetadata(temperature=torch.tensor([1.0]), all_greedy=False, all_random=True),
    }


def _noise(uniform: float, exponentials: list[float]) -> RejectionNoise:
    return RejectionNoise(
        uniforms=torch.tensor([uniform], dtype=torch.float64), exponentials=torch.tensor([exponentials])
    )


SAMPLERS = {"vectorised": rejection_sample_with_noise, "loop": rejection_sample_loop}


@pytest.mark.parametrize("sampler", SAMPLERS)
@pytest.mark.parametrize("profile", [INTENDED, VLLM_0_9_2], ids=["intended", "vllm"])
def test_a_uniform_equal_to_the_ratio_accepts(sampler: str, profile: Any) -> None:
    """Two equal logits: p = 1/2 exactly, no draft probabilities, so the ratio is 1/2; u = 1/2 accepts."""
    batch = _one_draft([0.0, 0.0], 1, None)
    out = SAMPLERS[sampler](**batch, noise=_noise(0.5, [1.0, 1.0]), profile=profile)
    assert out.tolist() == [[1, 9]]
    out = SAMPLERS[sampler](**batch, noise=_noise(math.nextafter(0.5, 1.0), [1.0, 1.0]), profile=profile)
    assert out.tolist() == [[0, -1]]


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_a_draft_of_zero_target_probability_is_refused_whatever_its_proposal(sampler: str) -> None:
    batch = _one_draft([0.0, -math.inf, 0.0], 1, [0.2, 0.6, 0.2])
    out = SAMPLERS[sampler](**batch, noise=_noise(0.0, [1.0, 1.0, 2.0]))
    assert out.tolist() == [[0, -1]]


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_a_draft_of_zero_proposal_probability_is_refused(sampler: str) -> None:
    """q(d) = 0 refuses even at u = 0; the residual max(p - q, 0) is then positive at d alone, so the
    recovery writes d itself — and the row ends there (no bonus 9), unlike an acceptance."""
    batch = _one_draft([0.0, 0.0, 0.0], 1, [0.5, 0.0, 0.5])
    out = SAMPLERS[sampler](**batch, noise=_noise(0.0, [2.0, 1.0, 1.0]))
    assert out.tolist() == [[1, -1]]


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_a_degenerate_residual_races_over_the_target(sampler: str) -> None:
    """Draft probabilities above the target everywhere (they need not sum to 1): the residual is all
    zero, so the race runs over p itself. E makes token 2 win there; token 0 would win a race of −1s."""
    batch = _one_draft([0.0, 0.0, 0.0], 1, [0.9, 0.9, 0.9])
    out = SAMPLERS[sampler](**batch, noise=_noise(0.9, [4.0, 2.0, 1.0]))
    assert out.tolist() == [[2, -1]]


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_the_race_skips_zero_residual_tokens_even_when_every_score_underflows(sampler: str) -> None:
    """p = (1, 3.7e-44): the draft (token 0, q = 2) is rejected at u = 0.9; the residual is (0, 3.7e-44) and
    3.7e-44 / 1e10 underflows to 0 in float32, tying the −1 of token 0 only if zero residuals scored 0."""
    batch = _one_draft([0.0, -100.0], 0, [2.0, 0.0])
    out = SAMPLERS[sampler](**batch, noise=_noise(0.9, [1.0, 1e10]))
    assert out.tolist() == [[1, -1]]


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_noise_supplied_to_an_all_greedy_batch_is_unused(sampler: str) -> None:
    batch = _one_draft([0.0, 3.0, 1.0], 1, None)
    batch["sampling_metadata"] = SamplingMetadata(temperature=torch.tensor([0.0]), all_greedy=True, all_random=False)
    out = SAMPLERS[sampler](**batch, noise=_noise(0.99, [1.0, 1.0, 1.0]))
    assert out.tolist() == [[1, 9]]


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_a_nan_in_a_greedy_row_of_a_mixed_batch_raises(sampler: str) -> None:
    batch = _one_draft([0.0, 1.0], 1, None)
    batch |= {
        "draft_token_ids": torch.tensor([1, 1]),
        "num_draft_tokens": [1, 1],
        "cu_num_draft_tokens": torch.tensor([1, 2]),
        "bonus_token_ids": torch.tensor([[9], [9]]),
        "target_logits": torch.tensor([[0.0, 1.0], [math.nan, 1.0]]),
        "sampling_metadata": SamplingMetadata(temperature=torch.tensor([1.0, 0.0]), all_greedy=False, all_random=False),
    }
    noise = RejectionNoise(uniforms=torch.tensor([0.5, 0.5], dtype=torch.float64), exponentials=torch.ones(2, 2))
    with pytest.raises(ValueError, match="NaN"):
        SAMPLERS[sampler](**batch, noise=noise)


@pytest.mark.parametrize("sampler", SAMPLERS)
@pytest.mark.parametrize(
    ("uniforms", "exponentials"), [(4, (2, 4)), (3, (1, 4)), (3, (2, 3))], ids=["uniforms", "exp-rows", "exp-vocab"]
)
def test_noise_of_the_wrong_shape_is_refused(sampler: str, uniforms: int, exponentials: tuple[int, int]) -> None:
    """T = 3 uniforms and a [B = 2, V = 4] block of exponentials fit; each other shape alone is refused."""
    batch = valid_batch()
    batch["sampling_metadata"] = replace(batch["sampling_metadata"], top_k=None, top_p=None)
    noise = RejectionNoise(
        uniforms=torch.full((uniforms,), 0.5, dtype=torch.float64), exponentials=torch.ones(exponentials)
    )
    with pytest.raises(ValueError, match="noise shapes"):
        SAMPLERS[sampler](**batch, noise=noise)
    fitting = RejectionNoise(uniforms=torch.full((3,), 0.5, dtype=torch.float64), exponentials=torch.ones(2, VOCAB))
    SAMPLERS[sampler](**batch, noise=fitting)


def test_top_k_of_the_whole_vocabulary_with_top_p_of_one_keeps_every_token() -> None:
    """The top-k-then-top-p path (sorted ascending, top-k threshold at index V − k): k = V puts the
    threshold at the smallest value, so no token is masked; p = 1 masks none either."""
    logits = torch.tensor([[0.5, -1.0, 2.0, 0.0, -3.0]])
    meta = SamplingMetadata(
        temperature=torch.tensor([1.0]),
        all_greedy=False,
        all_random=True,
        top_k=torch.tensor([5]),
        top_p=torch.tensor([1.0]),
    )
    probs = compute_target_probs(logits, torch.tensor([1]), meta)
    assert torch.equal(probs, logits.softmax(dim=-1))
    assert (probs > 0).all()


def test_top_k_of_no_rows_is_no_rows_even_for_one_token() -> None:
    assert apply_top_k(torch.zeros(0, 1), torch.zeros(0, dtype=torch.int64)).shape == (0, 1)


def _probs(
    logits: list[list[float]], top_k: list[int] | None, top_p: list[float] | None, temperature: list[float]
) -> Tensor:
    greedy = [t < 1e-5 for t in temperature]
    meta = SamplingMetadata(
        temperature=torch.tensor(temperature),
        all_greedy=all(greedy),
        all_random=not any(greedy),
        top_k=None if top_k is None else torch.tensor(top_k),
        top_p=None if top_p is None else torch.tensor(top_p),
    )
    return compute_target_probs(torch.tensor(logits), torch.arange(1, len(logits) + 1), meta)


def test_top_k_of_one_with_top_p_keeps_only_the_largest() -> None:
    assert _probs([[0.0, 1.0, 3.0, 2.0]], [1], [1.0], [1.0]).tolist() == [[0.0, 0.0, 1.0, 0.0]]


def test_a_tiny_top_p_keeps_only_the_largest() -> None:
    """Sorted ascending, every cumulative sum but the last is ≤ 1 − p; the last position is never masked."""
    assert _probs([[0.0, 1.0, 3.0, 2.0]], None, [0.01], [1.0]).tolist() == [[0.0, 0.0, 1.0, 0.0]]


def test_top_p_masks_a_cumulative_sum_equal_to_one_minus_p() -> None:
    """Four equal logits: cumulative sums 1/4, 1/2, 3/4, 1 (exact); p = 1/2 masks the sums ≤ 1/2, so two
    tokens keep probability 1/2 each."""
    probs = _probs([[0.0, 0.0, 0.0, 0.0]], None, [0.5], [1.0])
    assert sorted(probs[0].tolist()) == [0.0, 0.0, 0.5, 0.5]


def test_a_greedy_row_may_carry_any_top_k() -> None:
    """top_k is only checked for random requests; a greedy row's k = 0 or k > V is clamped, not an error."""
    probs = _probs([[0.0, 1.0, 2.0], [0.0, 1.0, 2.0], [2.0, 1.0, 0.0]], [0, 7, 2], [0.9, 0.9, 1.0], [0.0, 0.0, 1.0])
    assert probs.shape == (3, 3)
    assert probs[2].tolist() == _probs([[2.0, 1.0, 0.0]], [2], None, [1.0])[0].tolist()


def test_rows_without_temperatures_use_one() -> None:
    meta = SamplingMetadata(temperature=None, all_greedy=True, all_random=False)
    temps = row_temperatures(meta, torch.tensor([0, 0, 1]), 2)
    assert temps.dtype == torch.float32 and temps.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize(
    ("uniforms", "exponentials"), [((2, 1), (1, 3)), ((2,), (3,))], ids=["uniforms-2d", "exponentials-1d"]
)
def test_noise_of_the_wrong_rank_is_refused(
    uniforms: tuple[int, ...], exponentials: tuple[int, ...], no_annotation_checks: None
) -> None:
    with pytest.raises(ValueError, match=r"uniforms must be \[T\] and exponentials \[B, V\]"):
        RejectionNoise(uniforms=torch.full(uniforms, 0.5, dtype=torch.float64), exponentials=torch.ones(exponentials))


def test_draw_noise_ignores_a_generator_keyed_past_the_batch() -> None:
    """Keys outside [0, B) never reach a draw (``rejection_sample`` refuses them before drawing)."""
    meta = SamplingMetadata(
        temperature=torch.tensor([1.0]), all_greedy=False, all_random=True, generators={1: torch.Generator()}
    )
    outside = meta.generators[1].get_state()
    noise = draw_noise([2], 3, meta)
    assert noise is not None and noise.uniforms.shape == (2,) and noise.exponentials.shape == (1, 3)
    assert torch.equal(meta.generators[1].get_state(), outside)


def test_sample_tokens_greedy_and_seeded_race() -> None:
    """τ = 0: the first maximum. τ > 0: argmax(softmax(x / τ) / E), E drawn from the request's generator."""
    logits = torch.tensor([[1.0, 3.0, 3.0, 0.5], [0.2, -1.0, 0.7, 0.1]])
    seeded = torch.Generator().manual_seed(5)
    twin = torch.Generator().manual_seed(5)
    tokens = sample_tokens(logits, [0.0, 0.7], [None, seeded])
    race = torch.empty(4).exponential_(generator=twin)
    expected = int(torch.argmax(torch.softmax(logits[1] / 0.7, dim=-1) / race))
    assert tokens == [1, expected]
    assert torch.equal(seeded.get_state(), twin.get_state())
    with pytest.raises(ValueError):
        sample_tokens(logits, [0.0], [None, None])


def test_sample_tokens_race_depends_on_temperature_and_draws() -> None:
    """Over seeds, a high temperature spreads the race and a low one concentrates it on the maximum."""
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    hot = [sample_tokens(logits, [5.0], [torch.Generator().manual_seed(s)])[0] for s in range(200)]
    cold = [sample_tokens(logits, [0.05], [torch.Generator().manual_seed(s)])[0] for s in range(200)]
    assert cold.count(0) == 200
    assert len(set(hot)) == 4 and hot.count(0) < 120


def test_parse_output_drops_ids_from_the_vocabulary_size_up() -> None:
    """vLLM 0.9.x drops −1 and every id ≥ V (ids of padding vocab rows); V − 1 is kept."""
    raw = torch.tensor([[9, 10, 11, -1], [0, 9, 10, 3]], dtype=torch.int32)
    assert parse_output(raw, 10) == [[9], [0, 9, 3]]
