"""vLLM's rejection-sampler bugs of ``bugs.md`` as external samplers: each wraps ``rejection_sample``
and brings back exactly one bug, so the kit (``check_rejection_sampler``) meets it the way it meets a
user's sampler. The kit must fail each; ``tests/spec/test_kit.py`` shows it does, naming the checks.

The kit's own one-change mutants (``mutants.py``) replay V-1 (``float32_u_without_guard``) and V-3
(``greedy_only_at_minus_one``).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import torch
from torch import Tensor

from arctic_ref.spec.metadata import SamplingMetadata
from arctic_ref.spec.profile import GREEDY_EPS, PLACEHOLDER_TOKEN_ID
from arctic_ref.spec.rejection import rejection_sample, residual_of
from arctic_ref.spec.sampling import compute_target_probs, request_of_rows
from arctic_ref.testing.sampler.check_ids import E1, E5, E7, E8, E15_NAN, E15_SHAPES

SamplerFn = Callable[..., Tensor]


def greedy_rows_divided_by_minus_one(
    draft_token_ids: Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: Tensor,
    draft_probs: Tensor | None,
    target_logits: Tensor,
    bonus_token_ids: Tensor,
    sampling_metadata: SamplingMetadata,
) -> Tensor:
    """V-4: greedy rows of a mixed batch keep their sentinel τ = −1 and are divided by it, so −inf
    becomes +inf and the order of the row flips (its argmax is taken of x / −1)."""
    meta = sampling_metadata
    if meta.temperature is None or meta.all_greedy or meta.all_random:
        return rejection_sample(
            draft_token_ids,
            num_draft_tokens,
            max_spec_len,
            cu_num_draft_tokens,
            draft_probs,
            target_logits,
            bonus_token_ids,
            meta,
        )
    greedy = (meta.temperature.to(torch.float32) < GREEDY_EPS)[
        request_of_rows(cu_num_draft_tokens, target_logits.shape[0])
    ]
    flipped = torch.where(greedy.unsqueeze(1), target_logits / -1.0, target_logits)
    return rejection_sample(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        flipped,
        bonus_token_ids,
        meta,
    )


def nan_rows_emit_out_of_vocab(
    draft_token_ids: Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: Tensor,
    draft_probs: Tensor | None,
    target_logits: Tensor,
    bonus_token_ids: Tensor,
    sampling_metadata: SamplingMetadata,
) -> Tensor:
    """V-5: NaN target probabilities do not raise; the recovered id of such a request is V (out of
    the vocabulary, so ``parse_output`` drops it and the row emits nothing)."""
    nan_rows = torch.isnan(target_logits).any(dim=1)
    clean = torch.where(nan_rows.unsqueeze(1), 0.0, target_logits)
    out = rejection_sample(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        clean,
        bonus_token_ids,
        sampling_metadata,
    )
    requests = torch.tensor(
        sorted(set(request_of_rows(cu_num_draft_tokens, target_logits.shape[0])[nan_rows].tolist())),
        dtype=torch.int64,
        device=out.device,
    )
    out[requests] = PLACEHOLDER_TOKEN_ID
    out[requests, 0] = target_logits.shape[1]
    return out


def placeholder_drafts_clamped(
    draft_token_ids: Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: Tensor,
    draft_probs: Tensor | None,
    target_logits: Tensor,
    bonus_token_ids: Tensor,
    sampling_metadata: SamplingMetadata,
) -> Tensor:
    """V-7: placeholder (−1) and other out-of-range draft ids are indexed without a check (here:
    wrapped into the vocabulary, as a gather with a negative index does), never refused."""
    wrapped = draft_token_ids.remainder(target_logits.shape[1])
    return rejection_sample(
        wrapped,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_token_ids,
        sampling_metadata,
    )


def draft_probs_dropped(
    draft_token_ids: Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: Tensor,
    draft_probs: Tensor | None,
    target_logits: Tensor,
    bonus_token_ids: Tensor,
    sampling_metadata: SamplingMetadata,
) -> Tensor:
    """V-8: ``draft_probs=None`` passed for a draft-model method: acceptance min(1, p(d)) instead of
    min(1, p(d)/q(d)), and recovery from p with d zeroed instead of (p − q)⁺."""
    return rejection_sample(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        None,
        target_logits,
        bonus_token_ids,
        sampling_metadata,
    )


def top_k_max_of_nothing(
    draft_token_ids: Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: Tensor,
    draft_probs: Tensor | None,
    target_logits: Tensor,
    bonus_token_ids: Tensor,
    sampling_metadata: SamplingMetadata,
) -> Tensor:
    """V-10: top-k set without top-p in a batch where no request has drafts: ``k.max()`` over the
    empty tensor of draft rows' k raises (found by this project)."""
    meta = sampling_metadata
    if meta.top_k is not None and meta.top_p is None and sum(num_draft_tokens) == 0:
        meta.top_k[request_of_rows(cu_num_draft_tokens, 0)].max()  # raises RuntimeError on the empty tensor
    return rejection_sample(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_token_ids,
        meta,
    )


TILE = 16
"""The vocabulary tile of ``tail_tile_out_of_vocab``: small, so the kit's vocabularies (2-64 ids)
have a partial tail tile."""


def tail_tile_out_of_vocab(
    draft_token_ids: Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: Tensor,
    draft_probs: Tensor | None,
    target_logits: Tensor,
    bonus_token_ids: Tensor,
    sampling_metadata: SamplingMetadata,
) -> Tensor:
    """V-6: the tiled recovered kernel returns an id past the vocabulary when its tail tile's in-vocab
    residual is all zero (the tile's padding slots win). Here with tiles of ``TILE`` ids: a recovered
    token of a random row whose residual over the partial tail tile [TILE·⌊V/TILE⌋, V) is all zero
    comes back as V, the tail tile's first padding slot."""
    out = rejection_sample(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_token_ids,
        sampling_metadata,
    )
    vocab = target_logits.shape[1]
    if sampling_metadata.all_greedy or vocab % TILE == 0:
        return out
    probs = compute_target_probs(target_logits, cu_num_draft_tokens, sampling_metadata)
    residual = residual_of(probs, draft_token_ids, draft_probs)
    tail_empty = ~(residual[:, vocab - vocab % TILE :] > 0).any(dim=1)
    greedy = sampling_metadata.is_greedy(len(num_draft_tokens), out.device)
    drafts, start = draft_token_ids.tolist(), 0
    for i, n in enumerate(num_draft_tokens):
        row = out[i].tolist()
        at = next((j for j in range(n) if row[j] != drafts[start + j]), n)
        if at < n and row[at] >= 0 and not bool(greedy[i]) and bool(tail_empty[start + at]):
            out[i, at] = vocab
        start += n
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplerBugReplay:
    """One catalogue bug as a sampler, and the kit checks that must fail on it."""

    id: str
    sampler: SamplerFn
    caught_by: frozenset[str]
    """Each of these checks fails (others may fail too)."""


VLLM_BUG_SAMPLERS: Final = (
    SamplerBugReplay(id="V-4", sampler=greedy_rows_divided_by_minus_one, caught_by=frozenset({E5, E8})),
    SamplerBugReplay(id="V-5", sampler=nan_rows_emit_out_of_vocab, caught_by=frozenset({E15_NAN})),
    SamplerBugReplay(id="V-6", sampler=tail_tile_out_of_vocab, caught_by=frozenset({E7})),
    SamplerBugReplay(id="V-7", sampler=placeholder_drafts_clamped, caught_by=frozenset({E15_SHAPES})),
    SamplerBugReplay(id="V-8", sampler=draft_probs_dropped, caught_by=frozenset({E8})),
    SamplerBugReplay(id="V-10", sampler=top_k_max_of_nothing, caught_by=frozenset({E1})),
)
