"""``RejectionSampler.forward`` takes vLLM's arguments (one ``SpecDecodeMetadata``) and is the
eight-argument call on the metadata's drafts, counts and ``max_spec_len``: output and generator alike."""

import pytest
import torch

from arctic_ref.spec import RejectionSampler, SamplingMetadata, SpecDecodeMetadata, rejection_sample


@pytest.mark.parametrize("temperatures", [[0.0, 0.7, 1.2], [0.9, 0.9, 0.9]], ids=["mixed", "random"])
def test_forward_is_the_call_on_the_metadata(temperatures: list[float]) -> None:
    metadata = SpecDecodeMetadata.from_drafts([[3, 7], [], [1, 2, 5]])
    logits = torch.randn(metadata.draft_token_ids.shape[0], 11, generator=torch.Generator().manual_seed(0))
    bonus = torch.tensor([[4], [6], [9]])
    sampling = SamplingMetadata(
        temperature=torch.tensor(temperatures),
        all_greedy=False,
        all_random=all(t > 0 for t in temperatures),
    )
    torch.manual_seed(5)
    expected = rejection_sample(
        metadata.draft_token_ids,
        metadata.num_draft_tokens,
        metadata.max_spec_len,
        metadata.cu_num_draft_tokens,
        None,
        logits,
        bonus,
        sampling,
    )
    state = torch.get_rng_state()
    torch.manual_seed(5)
    out = RejectionSampler().forward(
        metadata, draft_probs=None, target_logits=logits, bonus_token_ids=bonus, sampling_metadata=sampling
    )
    assert torch.equal(out, expected)
    assert out.shape == (3, metadata.max_spec_len + 1) == (3, 4)
    assert torch.equal(torch.get_rng_state(), state)
