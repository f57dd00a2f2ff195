"""``rejection_sample_loop``: the readable reference — one request, one position at a time, written
from verification.md §1.5. It shares only ``compute_target_probs`` (and input validation) with
the vectorised path and must equal it bit for bit on injected noise."""

import torch
from jaxtyping import Float, Int
from torch import Tensor

from arctic_ref.spec.metadata import SamplingMetadata
from arctic_ref.spec.noise import RejectionNoise
from arctic_ref.spec.profile import INTENDED, PLACEHOLDER_TOKEN_ID, SamplerProfile
from arctic_ref.spec.rejection import BonusTokenIds, bonus_column, check_noise, validate_inputs
from arctic_ref.spec.sampling import compute_target_probs, greedy_tokens


def rejection_sample_loop(
    draft_token_ids: Int[Tensor, "num_tokens"],
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: Int[Tensor, "num_reqs"],
    draft_probs: Float[Tensor, "num_tokens vocab"] | None,
    target_logits: Float[Tensor, "num_tokens vocab"],
    bonus_token_ids: BonusTokenIds,
    sampling_metadata: SamplingMetadata,
    noise: RejectionNoise | None,
    *,
    profile: SamplerProfile = INTENDED,
) -> Int[Tensor, "num_reqs out_cols"]:
    validate_inputs(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_token_ids,
        sampling_metadata,
        profile,
    )
    num_reqs, vocab = len(num_draft_tokens), target_logits.shape[1]
    check_noise(noise, sampling_metadata.all_greedy, target_logits.shape[0], num_reqs, vocab)
    greedy = sampling_metadata.is_greedy(num_reqs, target_logits.device).tolist()
    probs = None
    if not sampling_metadata.all_greedy:
        probs = compute_target_probs(target_logits, cu_num_draft_tokens, sampling_metadata, profile=profile)
    argmax, argmax_value = greedy_tokens(target_logits, probs, profile=profile)
    bonus = bonus_column(bonus_token_ids).tolist()
    out = torch.full((num_reqs, max_spec_len + 1), PLACEHOLDER_TOKEN_ID, dtype=torch.int32)
    start = 0
    for i, n in enumerate(num_draft_tokens):
        emitted: list[int] = []
        for j in range(n):
            r = start + j
            d = int(draft_token_ids[r])
            if greedy[i]:
                if torch.isnan(argmax_value[r]):
                    raise ValueError(f"row {r}: the greedy maximum is NaN")
                emitted.append(int(argmax[r]))  # the argmax is written, not the draft
                if emitted[-1] != d:
                    break
                continue
            assert probs is not None and noise is not None
            p = probs[r]
            if torch.isnan(p[d]):
                raise ValueError(f"row {r}: NaN in the processed target row")
            q_d = torch.ones((), dtype=torch.float32) if draft_probs is None else draft_probs[r, d]
            if q_d > 0 and p[d] > 0 and (p[d] / q_d).to(noise.uniforms.dtype) >= noise.uniforms[r]:
                emitted.append(d)  # accepted
                continue
            if draft_probs is None:
                w = p.clone()
                w[d] = 0.0
            else:
                w = torch.clamp(p - draft_probs[r], min=0.0)
            if not bool((w > 0).any()):
                w = p  # degenerate residual: sample from p itself
            emitted.append(_race(w, noise.exponentials[i]))
            break
        else:
            emitted.append(int(bonus[i][0]))  # every draft accepted (also n = 0)
        out[i, : len(emitted)] = torch.tensor(emitted, dtype=torch.int32)
        start += n
    return out.to(target_logits.device)


def _race(weights: Tensor, exponentials: Tensor) -> int:
    """First index of the largest w_x / E_x among x with w_x > 0 (others score −1, below any)."""
    return int(torch.where(weights > 0, weights / exponentials, -1.0).argmax())
