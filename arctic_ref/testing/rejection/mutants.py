"""One-change variants of the readable rejection loop; the kit must report a failure for each
(verification.md §6, item 6). A mutant takes injected noise like ``rejection_sample_loop``."""

from dataclasses import dataclass
from typing import Final, Literal

import torch
from torch import Tensor

from arctic_ref.spec.metadata import SamplingMetadata
from arctic_ref.spec.noise import RejectionNoise
from arctic_ref.spec.profile import INTENDED, PLACEHOLDER_TOKEN_ID, SamplerProfile
from arctic_ref.spec.rejection import validate_inputs
from arctic_ref.spec.sampling import apply_temperature, apply_top_k_top_p, compute_target_probs, request_of_rows

Mutation = Literal[
    "float32_u_without_guard",
    "draft_not_zeroed_in_residual",
    "greedy_only_at_minus_one",
    "one_uniform_per_request",
    "recover_from_p",
    "bonus_at_max_spec_len",
    "top_k_drops_ties",
    "temperature_after_top_p",
    "noise_row_per_position",
]
MUTATIONS: Final[tuple[Mutation, ...]] = (
    "float32_u_without_guard",
    "draft_not_zeroed_in_residual",
    "greedy_only_at_minus_one",
    "one_uniform_per_request",
    "recover_from_p",
    "bonus_at_max_spec_len",
    "top_k_drops_ties",
    "temperature_after_top_p",
    "noise_row_per_position",
)


def _mutant_probs(logits: Tensor, cu: Tensor, meta: SamplingMetadata, mutation: Mutation, greedy: Tensor) -> Tensor:
    if mutation not in ("top_k_drops_ties", "temperature_after_top_p"):
        return compute_target_probs(logits, cu, meta)
    rows = request_of_rows(cu, logits.shape[0])
    tau = torch.ones(logits.shape[0]) if meta.temperature is None else torch.where(greedy, 1.0, meta.temperature)[rows]
    x = logits.to(torch.float32)
    if mutation == "top_k_drops_ties":
        x = apply_temperature(x, tau)
        if meta.top_k is not None:
            order = x.argsort(dim=-1, descending=True, stable=True)
            rank = order.argsort(dim=-1)
            x = x.masked_fill(rank >= meta.top_k[rows].unsqueeze(1), float("-inf"))  # exactly k survive
        if meta.top_p is not None:
            x = apply_top_k_top_p(x, None, meta.top_p[rows])
        return x.softmax(dim=-1, dtype=torch.float32)
    top_k = None if meta.top_k is None else meta.top_k[rows]
    if meta.top_p is not None:
        x = apply_top_k_top_p(x, top_k, meta.top_p[rows])
    return apply_temperature(x, tau).softmax(dim=-1, dtype=torch.float32)


@dataclass(frozen=True, slots=True)
class MutantLoop:
    """The loop reference with exactly one deliberate bug."""

    mutation: Mutation
    profile: SamplerProfile = INTENDED

    def __call__(
        self,
        draft_token_ids: Tensor,
        num_draft_tokens: list[int],
        max_spec_len: int,
        cu_num_draft_tokens: Tensor,
        draft_probs: Tensor | None,
        target_logits: Tensor,
        bonus_token_ids: Tensor,
        sampling_metadata: SamplingMetadata,
        noise: RejectionNoise | None,
        *,
        profile: SamplerProfile = INTENDED,
    ) -> Tensor:
        m = self.mutation
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
        num_reqs = len(num_draft_tokens)
        meta = sampling_metadata
        if meta.temperature is None:
            greedy = torch.ones(num_reqs, dtype=torch.bool)
        elif m == "greedy_only_at_minus_one":
            greedy = meta.temperature == -1.0
        else:
            greedy = meta.is_greedy(num_reqs, target_logits.device)
        probs = None if bool(greedy.all()) else _mutant_probs(target_logits, cu_num_draft_tokens, meta, m, greedy)
        out = torch.full((num_reqs, max_spec_len + 1), PLACEHOLDER_TOKEN_ID, dtype=torch.int32)
        start = 0
        for i, n in enumerate(num_draft_tokens):
            emitted: list[int] = []
            rejected = False
            for j in range(n):
                r = start + j
                d = int(draft_token_ids[r])
                if greedy[i]:
                    emitted.append(int(target_logits[r].argmax()))
                    if emitted[-1] != d:
                        rejected = True
                        break
                    continue
                assert probs is not None and noise is not None
                p = probs[r]
                q_d = torch.ones(()) if draft_probs is None else draft_probs[r, d]
                u = noise.uniforms[start if m == "one_uniform_per_request" else r]
                if m == "float32_u_without_guard":
                    accept = bool(q_d > 0) and bool((p[d] / q_d) >= u.to(torch.float32))
                else:
                    accept = bool(q_d > 0 and p[d] > 0 and (p[d] / q_d).to(u.dtype) >= u)
                if accept:
                    emitted.append(d)
                    continue
                if m == "recover_from_p":
                    w = p.clone()
                elif draft_probs is None:
                    w = p.clone()
                    if m != "draft_not_zeroed_in_residual":
                        w[d] = 0.0
                else:
                    w = torch.clamp(p - draft_probs[r], min=0.0)
                if not bool((w > 0).any()):
                    w = p
                exponentials = noise.exponentials[(i + j) % num_reqs if m == "noise_row_per_position" else i]
                score = torch.where(w > 0, w / exponentials, -1.0)
                emitted.append(int(score.argmax()))
                rejected = True
                break
            if not rejected:
                bonus = int(bonus_token_ids[i, 0])
                if m == "bonus_at_max_spec_len":
                    out[i, : len(emitted)] = torch.tensor(emitted, dtype=torch.int32)
                    out[i, max_spec_len] = bonus
                    start += n
                    continue
                emitted.append(bonus)
            out[i, : len(emitted)] = torch.tensor(emitted, dtype=torch.int32)
            start += n
        return out
