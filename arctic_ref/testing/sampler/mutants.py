"""One-change variants of the readable rejection loop; the kit must report a failure for each
(docs/verification.md §6, item 6). Each mutant is the loop's intended ``LoopRules`` with one stage
swapped (as draft selection's bug replays swap one stage of ``DraftRules``), run by the one loop
of ``arctic_ref.spec.loop``; it takes injected noise like ``rejection_sample_loop``."""

from dataclasses import dataclass, replace
from typing import Final, Literal

import torch
from torch import Tensor

from arctic_ref.spec.loop import INTENDED_LOOP, LoopRules, sample_with_rules
from arctic_ref.spec.metadata import SamplingMetadata
from arctic_ref.spec.noise import RejectionNoise
from arctic_ref.spec.profile import INTENDED, SamplerProfile
from arctic_ref.spec.sampling import apply_temperature, apply_top_k_top_p, request_of_rows, row_temperatures

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


def _greedy_only_at_minus_one(meta: SamplingMetadata, num_reqs: int, device: torch.device) -> list[bool]:
    """vLLM 0.9.x's sentinel: only τ = −1 is greedy (τ = 0 is sampled)."""
    if meta.temperature is None:
        return [True] * num_reqs
    return [bool(g) for g in (meta.temperature == -1.0).tolist()]


def _top_k_drops_ties(logits: Tensor, cu: Tensor, meta: SamplingMetadata, profile: SamplerProfile) -> Tensor:
    """Exactly k tokens survive top-k (ties at the threshold broken by index)."""
    rows = request_of_rows(cu, logits.shape[0])
    x = apply_temperature(logits.to(torch.float32), row_temperatures(meta, rows, cu.shape[0]))
    if meta.top_k is not None:
        rank = x.argsort(dim=-1, descending=True, stable=True).argsort(dim=-1)
        x = x.masked_fill(rank >= meta.top_k[rows].unsqueeze(1), float("-inf"))
    if meta.top_p is not None:
        x = apply_top_k_top_p(x, None, meta.top_p[rows])
    return x.softmax(dim=-1, dtype=torch.float32)


def _temperature_after_top_p(logits: Tensor, cu: Tensor, meta: SamplingMetadata, profile: SamplerProfile) -> Tensor:
    """Top-k/top-p on the raw logits, temperature last."""
    rows = request_of_rows(cu, logits.shape[0])
    x = logits.to(torch.float32)
    if meta.top_p is not None:
        x = apply_top_k_top_p(x, None if meta.top_k is None else meta.top_k[rows], meta.top_p[rows])
    return apply_temperature(x, row_temperatures(meta, rows, cu.shape[0])).softmax(dim=-1, dtype=torch.float32)


def _float32_u_without_guard(p_d: Tensor, q_d: Tensor, u: Tensor) -> bool:
    """u rounded to float32 and no p(d) > 0 guard: a zero-probability draft is accepted at u = 0."""
    return bool(q_d > 0) and bool((p_d / q_d) >= u.to(torch.float32))


def _draft_not_zeroed(p: Tensor, q: Tensor | None, draft: int) -> Tensor:
    return p.clone() if q is None else torch.clamp(p - q, min=0.0)


def _recover_from_p(p: Tensor, q: Tensor | None, draft: int) -> Tensor:
    return p.clone()


def _first_uniform_of_request(first_row: int, row: int) -> int:
    return first_row


def _noise_row_per_position(request: int, position: int, num_reqs: int) -> int:
    return (request + position) % num_reqs


def _bonus_at_max_spec_len(emitted: list[int], max_spec_len: int) -> int:
    return max_spec_len


MUTANT_RULES: Final[dict[Mutation, LoopRules]] = {
    "float32_u_without_guard": replace(INTENDED_LOOP, accepts=_float32_u_without_guard),
    "draft_not_zeroed_in_residual": replace(INTENDED_LOOP, residual=_draft_not_zeroed),
    "greedy_only_at_minus_one": replace(INTENDED_LOOP, greedy_rows=_greedy_only_at_minus_one),
    "one_uniform_per_request": replace(INTENDED_LOOP, uniform_index=_first_uniform_of_request),
    "recover_from_p": replace(INTENDED_LOOP, residual=_recover_from_p),
    "bonus_at_max_spec_len": replace(INTENDED_LOOP, bonus_position=_bonus_at_max_spec_len),
    "top_k_drops_ties": replace(INTENDED_LOOP, target_probs=_top_k_drops_ties),
    "temperature_after_top_p": replace(INTENDED_LOOP, target_probs=_temperature_after_top_p),
    "noise_row_per_position": replace(INTENDED_LOOP, noise_row=_noise_row_per_position),
}
"""Each mutation: the intended loop rules with exactly one stage replaced."""
MUTATIONS: Final[tuple[Mutation, ...]] = tuple(MUTANT_RULES)


@dataclass(frozen=True, slots=True)
class MutantLoop:
    """The loop reference with exactly one deliberate bug (``MUTANT_RULES[mutation]``)."""

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
        return sample_with_rules(
            MUTANT_RULES[self.mutation],
            draft_token_ids,
            num_draft_tokens,
            max_spec_len,
            cu_num_draft_tokens,
            draft_probs,
            target_logits,
            bonus_token_ids,
            sampling_metadata,
            noise,
            profile=profile,
        )
