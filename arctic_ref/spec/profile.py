"""Constants of verification and the two ``SamplerProfile`` values (docs/verification.md, head)."""

from dataclasses import dataclass
from typing import Final, Literal

import torch

PLACEHOLDER_TOKEN_ID: Final = -1
"""Pads output rows after each row's emitted prefix."""
MAX_SPEC_LEN: Final = 32
"""The most drafts per request a sampler accepts; more is an error, never a truncation."""
GREEDY_EPS: Final = 1e-5
"""A row is greedy iff its temperature is below this (vLLM's ``_SAMPLING_EPS``)."""


class SpecLengthError(ValueError):
    """``max_spec_len`` above the profile's limit (vLLM 0.9.2 asserts, or silently misbehaves)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplerProfile:
    """Where arctic_ref may follow vLLM 0.9.2's numerics instead of the intended ones."""

    name: str
    uniform_dtype: torch.dtype
    """dtype of the acceptance uniforms u (float64: a zero-probability draft is never accepted)."""
    target_dtype: torch.dtype | None
    """dtype of temperature/top-k/top-p processing; None keeps the logits' own dtype (vLLM)."""
    greedy_argmax_on: Literal["logits", "probs_if_mixed"]
    """What greedy rows take the argmax of: raw logits always, or (vLLM 0.9.2) raw logits when every
    row is greedy and otherwise the float32 probabilities computed with temperature 1."""
    max_spec_len_limit: int = MAX_SPEC_LEN


INTENDED: Final = SamplerProfile(
    name="intended", uniform_dtype=torch.float64, target_dtype=torch.float32, greedy_argmax_on="logits"
)
VLLM_0_9_2: Final = SamplerProfile(
    name="vllm-0.9.2", uniform_dtype=torch.float32, target_dtype=None, greedy_argmax_on="probs_if_mixed"
)
