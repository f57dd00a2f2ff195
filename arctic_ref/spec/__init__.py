"""Verification: rejection sampling with vLLM 0.9.x semantics, spec-decode metadata, draft selection."""

from arctic_ref.spec.loop import rejection_sample_loop
from arctic_ref.spec.metadata import SamplingMetadata, SpecDecodeMetadata
from arctic_ref.spec.noise import RejectionNoise, draw_noise
from arctic_ref.spec.profile import (
    GREEDY_EPS,
    INTENDED,
    MAX_SPEC_LEN,
    PLACEHOLDER_TOKEN_ID,
    VLLM_0_9_2,
    VLLM_0_32,
    SamplerProfile,
    SpecLengthError,
)
from arctic_ref.spec.rejection import parse_output, rejection_sample, rejection_sample_with_noise, validate_inputs
from arctic_ref.spec.rejection_graph import RejectionSampler
from arctic_ref.spec.sampling import compute_target_probs

__all__ = [
    "GREEDY_EPS",
    "INTENDED",
    "MAX_SPEC_LEN",
    "PLACEHOLDER_TOKEN_ID",
    "VLLM_0_9_2",
    "VLLM_0_32",
    "RejectionNoise",
    "RejectionSampler",
    "SamplerProfile",
    "SamplingMetadata",
    "SpecDecodeMetadata",
    "SpecLengthError",
    "compute_target_probs",
    "draw_noise",
    "parse_output",
    "rejection_sample",
    "rejection_sample_loop",
    "rejection_sample_with_noise",
    "validate_inputs",
]
