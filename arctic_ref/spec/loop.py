"""``rejection_sample_loop``: the readable reference — one request, one position at a time, written
from docs/verification.md §1.5. It shares only ``compute_target_probs`` and ``greedy_source`` (and input
validation) with the vectorised path and must equal it bit for bit on injected noise.

The loop's stages are a value, ``LoopRules`` (the intended ones by default), as draft selection's
are ``DraftRules`` (spec/drafts.py): the kit's broken variants (testing/sampler/mutants.py) are
the default rules with one stage swapped, run by the same loop (``sample_with_rules``)."""

from collections.abc import Callable
from dataclasses import dataclass

import torch
from jaxtyping import Float, Int
from torch import Tensor

from arctic_ref.spec.metadata import SamplingMetadata
from arctic_ref.spec.noise import RejectionNoise
from arctic_ref.spec.profile import INTENDED, PLACEHOLDER_TOKEN_ID, Race, SamplerProfile
from arctic_ref.spec.rejection import BonusTokenIds, bonus_column, check_noise, validate_inputs
from arctic_ref.spec.sampling import compute_target_probs, greedy_source, greedy_tokens


def greedy_rows(meta: SamplingMetadata, num_reqs: int, device: torch.device) -> list[bool]:
    """Which requests are greedy: τ < 1e-5 (all when there are no temperatures), §1.2 item 1."""
    return [bool(g) for g in meta.is_greedy(num_reqs, device).tolist()]


def target_probs(
    target_logits: Tensor, cu_num_draft_tokens: Tensor, meta: SamplingMetadata, profile: SamplerProfile
) -> Tensor:
    """p of every draft row: temperature → top-k → top-p → softmax (§1.4)."""
    return compute_target_probs(target_logits, cu_num_draft_tokens, meta, profile=profile)


def uniform_index(first_row: int, row: int) -> int:
    """Which uniform decides flat row ``row`` (its request starts at ``first_row``): its own."""
    return row


def accepts(p_d: Tensor, q_d: Tensor, u: Tensor) -> bool:
    """Accept iff q(d) > 0, p(d) > 0 and p(d)/q(d) ≥ u, compared in u's dtype (§1.5)."""
    return bool(q_d > 0 and p_d > 0 and (p_d / q_d).to(u.dtype) >= u)


def residual(p: Tensor, q: Tensor | None, draft: int) -> Tensor:
    """w: p without the draft (one-hot drafts), else max(p − q, 0) (§1.5)."""
    if q is None:
        w = p.clone()
        w[draft] = 0.0
        return w
    return torch.clamp(p - q, min=0.0)


def noise_row(request: int, position: int, num_reqs: int) -> int:
    """Which exponential row a rejection at (request, position) races with: the request's own."""
    return request


def bonus_position(emitted: list[int], max_spec_len: int) -> int:
    """The column of the bonus token: right after the accepted drafts (this row's nᵢ)."""
    return len(emitted)


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopRules:
    """The stages of the per-row rule (the intended ones by default)."""

    greedy_rows: Callable[[SamplingMetadata, int, torch.device], list[bool]] = greedy_rows
    target_probs: Callable[[Tensor, Tensor, SamplingMetadata, SamplerProfile], Tensor] = target_probs
    uniform_index: Callable[[int, int], int] = uniform_index
    accepts: Callable[[Tensor, Tensor, Tensor], bool] = accepts
    residual: Callable[[Tensor, Tensor | None, int], Tensor] = residual
    noise_row: Callable[[int, int, int], int] = noise_row
    bonus_position: Callable[[list[int], int], int] = bonus_position


INTENDED_LOOP = LoopRules()


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
    return sample_with_rules(
        INTENDED_LOOP,
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


def sample_with_rules(
    rules: LoopRules,
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
    """The loop of §1.5 with ``rules``' stages (``rejection_sample_loop`` with the intended ones)."""
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
    greedy = rules.greedy_rows(sampling_metadata, num_reqs, target_logits.device)
    probs = None
    if not all(greedy):
        probs = rules.target_probs(target_logits, cu_num_draft_tokens, sampling_metadata, profile)
    argmax, argmax_value = greedy_tokens(
        greedy_source(target_logits, cu_num_draft_tokens, sampling_metadata, probs, profile=profile)
    )
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
            u = noise.uniforms[rules.uniform_index(start, r)]
            if rules.accepts(p[d], q_d, u if profile.acceptance_dtype is None else u.to(profile.acceptance_dtype)):
                emitted.append(d)  # accepted
                continue
            w = rules.residual(p, None if draft_probs is None else draft_probs[r], d)
            if not bool((w > 0).any()):
                w = p  # degenerate residual: sample from p itself
            emitted.append(_race(w, noise.exponentials[rules.noise_row(i, j, num_reqs)], profile.race))
            break
        else:  # every draft accepted (also n = 0)
            out[i, rules.bonus_position(emitted, max_spec_len)] = int(bonus[i][0])
        out[i, : len(emitted)] = torch.tensor(emitted, dtype=torch.int32)
        start += n
    return out.to(target_logits.device)


def _race(weights: Tensor, exponentials: Tensor, race: Race) -> int:
    """First index of the largest score w_x / E_x (or w_x · (1 / E_x)) among x with w_x > 0 (others
    score −1, below any)."""
    scores = weights / exponentials if race == "divide" else weights * (1.0 / exponentials)
    return int(torch.where(weights > 0, scores, -1.0).argmax())
