"""A rejection sampler with vLLM's ``rejection_sample`` argument list. It draws its randomness in
vLLM's order, then verifies with a kernel of its own (arctic_ref's vectorised path with injected
noise stands in for the user's kernel here)."""

from torch import Tensor

from arctic_ref.spec import SamplingMetadata, draw_noise, rejection_sample_with_noise


def rejection_sample(
    draft_token_ids: Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: Tensor,
    draft_probs: Tensor | None,
    target_logits: Tensor,
    bonus_token_ids: Tensor,
    sampling_metadata: SamplingMetadata,
) -> Tensor:
    noise = draw_noise(num_draft_tokens, target_logits.shape[-1], sampling_metadata)
    return rejection_sample_with_noise(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_token_ids,
        sampling_metadata,
        noise,
    )
