"""vLLM 0.9.2's ``RejectionSampler.forward`` as a kit candidate (docs/verification.md §8).

Only for the opt-in ``vllm`` tox environment: importable anywhere, usable only where vLLM 0.9.2
imports (CPU: set ``CUDA_VISIBLE_DEVICES=""`` and ``TRITON_INTERPRET=1`` before importing vLLM).
Its randomness is compared by route B (per-request seeded generators), so no vLLM function is
replaced; greedy rows are written with vLLM 0.9.x's temperature −1.
"""

from typing import Any

import torch
from torch import Tensor

from arctic_ref.spec.metadata import SamplingMetadata

try:
    from vllm.v1.sample.logits_processor import LogitsProcessorManager
    from vllm.v1.sample.metadata import SamplingMetadata as VllmSamplingMetadata
    from vllm.v1.sample.rejection_sampler import RejectionSampler
    from vllm.v1.spec_decode.metadata import SpecDecodeMetadata as VllmSpecDecodeMetadata

    VLLM_AVAILABLE = True
except Exception:  # pragma: no cover - vLLM is only in the oracle environment
    VLLM_AVAILABLE = False

__all__ = ["VLLM_AVAILABLE", "vllm_rejection_sampler"]


def _vllm_metadata(meta: SamplingMetadata, num_reqs: int) -> Any:
    """vLLM's SamplingMetadata with neutral penalties, no logprobs, no logits processors."""
    fields = VllmSamplingMetadata.__dataclass_fields__
    values: dict[str, Any] = {
        "temperature": meta.temperature,
        "all_greedy": meta.all_greedy,
        "all_random": meta.all_random,
        "top_p": meta.top_p,
        "top_k": meta.top_k,
        "generators": meta.generators,
        "max_num_logprobs": None,
        "no_penalties": True,
        "prompt_token_ids": None,
        "frequency_penalties": torch.zeros(num_reqs),
        "presence_penalties": torch.zeros(num_reqs),
        "repetition_penalties": torch.ones(num_reqs),
        "output_token_ids": [[] for _ in range(num_reqs)],
        "allowed_token_ids_mask": None,
        "bad_words_token_ids": {},
    }
    if "min_p" in fields:
        values["min_p"] = None
    if "logitsprocs" in fields:
        values["logitsprocs"] = LogitsProcessorManager()
    return VllmSamplingMetadata(**{k: v for k, v in values.items() if k in fields})


def vllm_rejection_sampler() -> Any:
    """The candidate function (8 positional arguments, logits in), for ``check_rejection_sampler``."""
    if not VLLM_AVAILABLE:
        raise RuntimeError("vLLM 0.9.2 is not importable here (see tox -e vllm)")
    sampler = RejectionSampler()

    def vllm_0_9_2(
        draft_token_ids: Tensor,
        num_draft_tokens: list[int],
        max_spec_len: int,
        cu_num_draft_tokens: Tensor,
        draft_probs: Tensor | None,
        target_logits: Tensor,
        bonus_token_ids: Tensor,
        sampling_metadata: SamplingMetadata,
    ) -> Tensor:
        num_reqs = len(num_draft_tokens)
        metadata = VllmSpecDecodeMetadata(
            draft_token_ids=draft_token_ids.to(torch.int32),
            num_draft_tokens=list(num_draft_tokens),
            cu_num_draft_tokens=cu_num_draft_tokens.to(torch.int32),
            target_logits_indices=torch.zeros(sum(num_draft_tokens), dtype=torch.int32),
            bonus_logits_indices=torch.zeros(num_reqs, dtype=torch.int32),
            logits_indices=torch.zeros(sum(num_draft_tokens) + num_reqs, dtype=torch.int32),
        )
        metadata.max_spec_len = max_spec_len  # the flattened argument list's value
        out: Tensor = sampler.forward(
            metadata, draft_probs, target_logits, bonus_token_ids, _vllm_metadata(sampling_metadata, num_reqs)
        )
        return out

    return vllm_0_9_2
