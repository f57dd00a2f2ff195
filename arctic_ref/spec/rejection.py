"""``rejection_sample``: speculative-decoding verification with vLLM 0.9.x semantics, vectorised.

Terms (docs/verification.md §1.5; Leviathan et al. 2022, arXiv 2211.17192; Chen et al. 2023):

- *accepted*: draft d of flat row r is kept iff q(d) > 0, p(d) > 0 and f32(p(d)/q(d)) ≥ u_r, with
  q = δ_d when ``draft_probs`` is None (then acceptance has probability p(d));
- *recovered*: at the first rejection the row emits argmax over {x : w_x > 0} of w_x / E_i[x], with
  the residual w = p with w[d] = 0 (one-hot drafts) or (p − q)⁺ (drafts with probabilities), or p if
  w is all zero — an exponential race, so x wins with probability w_x / Σw;
- *bonus*: when all nᵢ drafts are accepted the row ends with bᵢ, sampled outside;
- greedy rows (τ < 1e-5) emit the argmax g_r and stop at the first g_r ≠ d_r.

Rows are left-packed in ``[B, max_spec_len + 1]`` int32, padded with ``PLACEHOLDER_TOKEN_ID``.
"""

from collections.abc import Sequence

import numpy as np
import torch
from jaxtyping import Float, Int
from torch import Tensor

from arctic_ref.spec.metadata import SamplingMetadata
from arctic_ref.spec.noise import RejectionNoise, draw_noise
from arctic_ref.spec.profile import GREEDY_EPS, INTENDED, PLACEHOLDER_TOKEN_ID, Race, SamplerProfile, SpecLengthError
from arctic_ref.spec.rejection_triton import (
    NAN_MESSAGE,
    checked_kernels,
    fused_kernels,
    fused_supported,
)
from arctic_ref.spec.sampling import (
    compute_target_probs,
    greedy_source,
    greedy_tokens,
    process_logits,
    request_of_rows,
)
from arctic_ref.types import Logits, Output, PerRequest, Probs, TokenIds

_INT_DTYPES = (torch.int32, torch.int64)
_LOGIT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def validate_inputs(
    draft_token_ids: Tensor,
    num_draft_tokens: Sequence[int],
    max_spec_len: int,
    cu_num_draft_tokens: Tensor,
    draft_probs: Tensor | None,
    target_logits: Tensor,
    bonus_token_ids: Tensor,
    sampling_metadata: SamplingMetadata,
    profile: SamplerProfile,
) -> None:
    """Every rule of docs/verification.md §1.2 that can be checked before sampling; one device-to-host sync."""
    validate_host_inputs(
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
    _validate_values(draft_token_ids, num_draft_tokens, cu_num_draft_tokens, target_logits, sampling_metadata)


def validate_host_inputs(
    draft_token_ids: Tensor,
    num_draft_tokens: Sequence[int],
    max_spec_len: int,
    cu_num_draft_tokens: Tensor,
    draft_probs: Tensor | None,
    target_logits: Tensor,
    bonus_token_ids: Tensor,
    sampling_metadata: SamplingMetadata,
    profile: SamplerProfile,
) -> None:
    """The rules of docs/verification.md §1.2 that read no tensor's values (types, dtypes, shapes, counts,
    the generators' rows): no device work, no synchronisation."""
    if not isinstance(num_draft_tokens, (list, tuple)) or not num_draft_tokens:
        raise ValueError(f"num_draft_tokens must be a non-empty list of ints, got {num_draft_tokens!r}")
    counts = np.asarray(num_draft_tokens)  # bools give dtype bool, floats or mixtures a non-int kind
    if counts.ndim != 1 or counts.dtype.kind not in "iu" or int(counts.min()) < 0:
        raise ValueError(f"num_draft_tokens must hold ints >= 0, got {list(num_draft_tokens)}")
    if isinstance(max_spec_len, bool) or not isinstance(max_spec_len, int):
        raise ValueError(f"max_spec_len must be an int, got {max_spec_len!r}")
    if max_spec_len > profile.max_spec_len_limit:
        raise SpecLengthError(f"max_spec_len({max_spec_len}) > the limit {profile.max_spec_len_limit}")
    if max(num_draft_tokens) > max_spec_len:
        raise ValueError(f"max(num_draft_tokens)({max(num_draft_tokens)}) > max_spec_len({max_spec_len})")
    num_reqs, total = len(num_draft_tokens), sum(num_draft_tokens)
    if draft_token_ids.dtype not in _INT_DTYPES or tuple(draft_token_ids.shape) != (total,):
        raise ValueError(
            f"draft_token_ids must be int32/int64 [{total}], got {draft_token_ids.dtype} {tuple(draft_token_ids.shape)}"
        )
    if target_logits.dtype not in _LOGIT_DTYPES or target_logits.ndim != 2 or target_logits.shape[0] != total:
        raise ValueError(
            f"target_logits must be float32/bf16/fp16 [{total}, V], got {target_logits.dtype} {tuple(target_logits.shape)}"
        )
    vocab = target_logits.shape[1]
    if draft_probs is not None and (draft_probs.dtype != torch.float32 or tuple(draft_probs.shape) != (total, vocab)):
        raise ValueError(
            f"draft_probs must be float32 [{total}, {vocab}], got {draft_probs.dtype} {tuple(draft_probs.shape)}"
        )
    if cu_num_draft_tokens.dtype not in _INT_DTYPES or tuple(cu_num_draft_tokens.shape) != (num_reqs,):
        raise ValueError(
            f"cu_num_draft_tokens must be int [{num_reqs}], got {cu_num_draft_tokens.dtype} {tuple(cu_num_draft_tokens.shape)}"
        )
    if bonus_token_ids.dtype not in _INT_DTYPES or tuple(bonus_token_ids.shape) not in ((num_reqs, 1), (num_reqs,)):
        raise ValueError(
            f"bonus_token_ids must be int [{num_reqs}, 1] or [{num_reqs}], got {bonus_token_ids.dtype} "
            f"{tuple(bonus_token_ids.shape)}"
        )
    meta = sampling_metadata
    if meta.temperature is None and (not meta.all_greedy or meta.all_random):
        raise ValueError(
            f"temperature None means all greedy, but all_greedy={meta.all_greedy} all_random={meta.all_random}"
        )
    for name, tensor in (("temperature", meta.temperature), ("top_k", meta.top_k), ("top_p", meta.top_p)):
        if tensor is not None and tuple(tensor.shape) != (num_reqs,):
            raise ValueError(f"{name} must be [{num_reqs}], got {tuple(tensor.shape)}")
    bad_generators = [i for i in meta.generators if not 0 <= i < num_reqs]
    if bad_generators:
        raise ValueError(f"generators for requests {bad_generators} outside [0, {num_reqs})")


def _validate_values(
    draft_token_ids: Tensor,
    num_draft_tokens: Sequence[int],
    cu_num_draft_tokens: Tensor,
    target_logits: Tensor,
    meta: SamplingMetadata,
) -> None:
    """The value rules of docs/verification.md §1.2 (inputs already shape-checked): everything
    data-dependent comes to the host in one transfer (one device sync)."""
    counts = np.asarray(num_draft_tokens)
    num_reqs, total, vocab = len(num_draft_tokens), int(counts.sum()), target_logits.shape[1]
    device = target_logits.device
    parts = [cu_num_draft_tokens.to(device=device, dtype=torch.float64)]
    if total:
        low, high = torch.aminmax(draft_token_ids)
        parts.append(torch.stack([low, high]).to(torch.float64))
    else:
        parts.append(torch.zeros(2, dtype=torch.float64, device=device))
    for tensor in (meta.temperature, meta.top_k, meta.top_p):
        parts.append(
            torch.zeros(0, dtype=torch.float64, device=device)
            if tensor is None
            else tensor.to(device=device, dtype=torch.float64)
        )
    host = torch.cat(parts).cpu().numpy()
    cu, (low_id, high_id), rest = host[:num_reqs], host[num_reqs : num_reqs + 2], host[num_reqs + 2 :]
    failed = []
    mismatch = np.flatnonzero(cu != np.cumsum(counts))
    if mismatch.size:
        i = int(mismatch[0])
        failed.append(
            f"cu_num_draft_tokens[{i}]({int(cu[i])}) != cumsum(num_draft_tokens)[{i}]({int(counts[: i + 1].sum())})"
        )
    if total and (low_id < 0 or high_id >= vocab):
        failed.append(f"draft token ids in [{int(low_id)}, {int(high_id)}] outside [0, {vocab})")
    if meta.temperature is not None:
        temps, rest = rest[:num_reqs], rest[num_reqs:]
        random = ~(temps.astype(np.float32) < np.float32(GREEDY_EPS))  # compared in float32, as is_greedy
        if bool(random.any()) == meta.all_greedy:
            failed.append(f"all_greedy flag ({meta.all_greedy}) disagrees with the temperatures")
        if bool(random.all()) != meta.all_random:
            failed.append(f"all_random flag ({meta.all_random}) disagrees with the temperatures")
        if not np.isfinite(temps[random]).all():
            failed.append("a random request has a non-finite temperature")
        if meta.top_k is not None:
            ks, rest = rest[:num_reqs][random], rest[num_reqs:]
            if ((ks < 1) | (ks > vocab)).any():
                failed.append(f"top_k of a random request outside [1, {vocab}]")
        if meta.top_p is not None:
            ps = rest[:num_reqs][random]
            if not ((ps > 0) & (ps <= 1)).all():
                failed.append("top_p of a random request outside (0, 1]")
    if failed:
        raise ValueError("; ".join(failed))


BonusTokenIds = Int[Tensor, "num_reqs 1"] | Int[Tensor, "num_reqs"]
"""``[B, 1]`` as vLLM's sampler passes it, or ``[B]`` as vLLM's tests do (its kernels read it flat)."""


def bonus_column(bonus_token_ids: BonusTokenIds) -> Int[Tensor, "num_reqs 1"]:
    """``[B]`` or ``[B, 1]`` as ``[B, 1]`` (a view; validated shapes only)."""
    return bonus_token_ids.reshape(-1, 1)


def rejection_sample(
    draft_token_ids: TokenIds,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: PerRequest,
    draft_probs: Probs | None,
    target_logits: Logits,
    bonus_token_ids: BonusTokenIds,
    sampling_metadata: SamplingMetadata,
    *,
    profile: SamplerProfile = INTENDED,
    fused: bool = True,
) -> Output:
    """``draw_noise`` (docs/verification.md §2.1 order) then ``rejection_sample_with_noise``. ``fused=False`` keeps
    the plain vectorised torch path on CUDA too (for comparison). Calls the fused kernels serve whole
    (``_checked_on_device``) check the values inside them instead, with one synchronisation."""
    args = (
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_token_ids,
        sampling_metadata,
    )
    if fused and _checked_on_device(*args, profile):
        return _sample_checked(*args, profile)
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
    noise = draw_noise(
        num_draft_tokens, target_logits.shape[1], sampling_metadata, profile=profile, device=target_logits.device
    )
    return _sample(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_column(bonus_token_ids),
        sampling_metadata,
        noise,
        profile,
        fused,
    )


def _checked_on_device(
    draft_token_ids: Tensor,
    num_draft_tokens: Sequence[int],
    max_spec_len: int,
    cu_num_draft_tokens: Tensor,
    draft_probs: Tensor | None,
    target_logits: Tensor,
    bonus_token_ids: Tensor,
    sampling_metadata: SamplingMetadata,
    profile: SamplerProfile,
) -> bool:
    """Whether the fused kernels take the whole call, value rules included (``checked_kernels``): the
    fused path's inputs, every tensor on the logits' device, some random request and no per-request
    generator (a value error must leave every generator as it was; only the default one is restored)."""
    meta = sampling_metadata
    if not fused_supported(target_logits, meta.top_k, meta.top_p, profile.name):
        return False
    tensors = (draft_token_ids, cu_num_draft_tokens, bonus_token_ids, draft_probs)
    return values_checkable_on(target_logits.device, tensors, meta)


def values_checkable_on(device: torch.device, tensors: Sequence[object], sampling_metadata: SamplingMetadata) -> bool:
    """Whether a call the fused kernels support may have its value rules checked inside them: some
    request is random, no request has its own generator (only the default one can be put back after a
    value error), and every tensor, the temperatures included, is already on ``device`` (``None``
    stands for an absent optional tensor)."""
    meta = sampling_metadata
    if meta.temperature is None or meta.all_greedy or meta.generators:
        return False
    return all(t is None or (isinstance(t, Tensor) and t.device == device) for t in (*tensors, meta.temperature))


def _sample_checked(
    draft_token_ids: Tensor,
    num_draft_tokens: Sequence[int],
    max_spec_len: int,
    cu_num_draft_tokens: Tensor,
    draft_probs: Tensor | None,
    target_logits: Tensor,
    bonus_token_ids: Tensor,
    sampling_metadata: SamplingMetadata,
    profile: SamplerProfile,
) -> Tensor:
    """``rejection_sample`` on the fused kernels with the host rules checked here and the value rules
    inside the first launch: one synchronisation instead of a read-back before sampling and another
    after. The noise is ``draw_noise``'s tensors (two torch launches cost less host time than the
    third Triton launch the kernels' own draws need; in a graph, where host time does not count, the
    kernels draw). A value error restores the offset and raises
    ``validate_inputs``' message, as if checked first; NaN raises after the draws, as eagerly."""
    args = (
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_token_ids,
        sampling_metadata,
    )
    validate_host_inputs(*args, profile)
    meta, device = sampling_metadata, target_logits.device
    assert meta.temperature is not None  # _checked_on_device
    generator = torch.cuda.default_generators[target_logits.get_device()]
    offset = generator.get_offset()
    noise = draw_noise(num_draft_tokens, target_logits.shape[1], meta, profile=profile, device=device)
    assert noise is not None  # some request is random
    out, value_bits, nan = checked_kernels(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_column(bonus_token_ids),
        meta.temperature,
        all_greedy=meta.all_greedy,
        all_random=meta.all_random,
        uniforms=noise.uniforms,
        exponentials=noise.exponentials,
    )
    if value_bits:
        generator.set_offset(offset)
        validate_inputs(*args, profile)
        raise AssertionError(f"the kernels' value check ({value_bits}) disagrees with validate_inputs")
    if nan:
        raise ValueError(NAN_MESSAGE)
    return out


def rejection_sample_with_noise(
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
    fused: bool = True,
) -> Int[Tensor, "num_reqs out_cols"]:
    """The same with injected u and E; no generator is read or advanced."""
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
    return _sample(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_column(bonus_token_ids),
        sampling_metadata,
        noise,
        profile,
        fused,
    )


def check_noise(noise: RejectionNoise | None, all_greedy: bool, num_tokens: int, num_reqs: int, vocab: int) -> None:
    if noise is None:
        if not all_greedy:
            raise ValueError("noise is None but some request is random")
        return
    if noise.uniforms.shape[0] != num_tokens or tuple(noise.exponentials.shape) != (num_reqs, vocab):
        raise ValueError(
            f"noise shapes {tuple(noise.uniforms.shape)}, {tuple(noise.exponentials.shape)} "
            f"do not fit T={num_tokens}, B={num_reqs}, V={vocab}"
        )


def residual_of(
    probs: Float[Tensor, "rows vocab"], drafts: Int[Tensor, "rows"], draft_probs: Float[Tensor, "rows vocab"] | None
) -> Float[Tensor, "rows vocab"]:
    """w of docs/verification.md §1.5: p with the draft's entry zeroed (no draft probs), else (p − q)⁺."""
    if draft_probs is None:
        return probs.scatter(1, drafts.unsqueeze(1).long(), 0.0)
    return (probs - draft_probs).clamp(min=0.0)


def acceptance_uniforms(uniforms: Float[Tensor, "num_tokens"], profile: SamplerProfile) -> Float[Tensor, "num_tokens"]:
    """u as the acceptance test reads it: rounded to ``profile.acceptance_dtype`` when it has one
    (vLLM 0.32's CPU kernel reads float32, catalogue V-18), else as drawn."""
    if profile.acceptance_dtype is None:
        return uniforms
    return uniforms.to(profile.acceptance_dtype)


def race_scores(weights: Tensor, exponentials: Tensor, race: Race = "divide") -> Tensor:
    """w / E (``"divide"``) or w · (1 / E) with 1 / E rounded first (``"reciprocal"``, vLLM ≥ 0.10);
    the two round differently, so near-ties of the race can go either way."""
    if race == "divide":
        return weights / exponentials
    return weights * exponentials.reciprocal()


def recover(
    probs: Float[Tensor, "rows vocab"],
    drafts: Int[Tensor, "rows"],
    draft_probs: Float[Tensor, "rows vocab"] | None,
    exponentials: Float[Tensor, "rows vocab"],
    *,
    race: Race = "divide",
) -> Int[Tensor, "rows"]:
    """The exponential race over the residual of each row (its request's E row given per row)."""
    residual = residual_of(probs, drafts, draft_probs)
    degenerate = ~(residual > 0).any(dim=1, keepdim=True)
    residual = torch.where(degenerate, probs, residual)
    score = torch.where(residual > 0, race_scores(residual, exponentials, race), -1.0)
    return score.argmax(dim=1)


def _sample(
    draft_token_ids: Tensor,
    num_draft_tokens: Sequence[int],
    max_spec_len: int,
    cu_num_draft_tokens: Tensor,
    draft_probs: Tensor | None,
    target_logits: Tensor,
    bonus_token_ids: Tensor,
    sampling_metadata: SamplingMetadata,
    noise: RejectionNoise | None,
    profile: SamplerProfile,
    fused: bool = True,
) -> Tensor:
    device = target_logits.device
    num_reqs, num_tokens, vocab = len(num_draft_tokens), target_logits.shape[0], target_logits.shape[1]
    all_greedy = sampling_metadata.all_greedy
    check_noise(noise, all_greedy, num_tokens, num_reqs, vocab)
    use_fused = fused and fused_supported(target_logits, sampling_metadata.top_k, sampling_metadata.top_p, profile.name)
    if noise is not None and use_fused:
        out, bad = fused_kernels(
            draft_token_ids,
            cu_num_draft_tokens,
            max_spec_len,
            draft_probs,
            target_logits,
            bonus_token_ids,
            sampling_metadata.temperature,
            noise.uniforms,
            noise.exponentials,
        )
        if bool(bad.any()):  # docs/verification.md §1.2 item 5, read back: the fused path's one sync
            raise ValueError(NAN_MESSAGE)
        return out
    counts = torch.tensor(num_draft_tokens, dtype=torch.int64, device=device)
    starts = counts.cumsum(0) - counts
    rows = request_of_rows(cu_num_draft_tokens, num_tokens)
    position = torch.arange(num_tokens, device=device) - starts[rows]
    drafts = draft_token_ids.to(torch.int64)
    greedy_row = sampling_metadata.is_greedy(num_reqs, device)[rows]
    probs, masked = None, None
    if not all_greedy and profile.greedy_argmax_on == "masked_logits_if_mixed":
        # The masked logits serve the greedy rows and, through one softmax, the random ones.
        masked = process_logits(target_logits, cu_num_draft_tokens, sampling_metadata, profile=profile)
        probs = masked.softmax(dim=-1, dtype=torch.float32)
    elif not all_greedy:
        probs = compute_target_probs(target_logits, cu_num_draft_tokens, sampling_metadata, profile=profile)
    accepted = torch.zeros(num_tokens, dtype=torch.bool, device=device)
    final = torch.zeros(num_tokens, dtype=torch.int64, device=device)
    invalid = torch.zeros((), dtype=torch.bool, device=device)
    if not sampling_metadata.all_random:
        best, best_value = greedy_tokens(
            greedy_source(target_logits, cu_num_draft_tokens, sampling_metadata, probs, profile=profile)
            if masked is None
            else masked
        )
        accepted = torch.where(greedy_row, best == drafts, accepted)
        final = torch.where(greedy_row, best, final)
        invalid = invalid | (greedy_row & torch.isnan(best_value)).any()
    if probs is not None and noise is not None:
        target = probs.gather(1, drafts.unsqueeze(1)).squeeze(1)
        proposal = (
            torch.ones_like(target) if draft_probs is None else draft_probs.gather(1, drafts.unsqueeze(1)).squeeze(1)
        )
        uniforms = acceptance_uniforms(noise.uniforms, profile)
        ratio = (target / proposal).to(uniforms.dtype)
        keep = (proposal > 0) & (target > 0) & (ratio >= uniforms)
        recovered = recover(probs, drafts, draft_probs, noise.exponentials[rows], race=profile.race)
        accepted = torch.where(greedy_row, accepted, keep)
        final = torch.where(greedy_row, final, recovered)
        invalid = invalid | (~greedy_row & torch.isnan(target)).any()
    if bool(invalid):
        raise ValueError(NAN_MESSAGE)
    num_accepted = _accepted_prefix(accepted, rows, position, counts, max_spec_len)
    at_rejection = final[(starts + num_accepted).clamp(max=max(num_tokens - 1, 0))] if num_tokens else counts
    return _assemble(drafts, rows, position, counts, num_accepted, at_rejection, bonus_token_ids, max_spec_len)


def _accepted_prefix(accepted: Tensor, rows: Tensor, position: Tensor, counts: Tensor, max_spec_len: int) -> Tensor:
    """Accepted drafts per request: grid[i, j] = draft j of request i accepted (padding counts as
    accepted); the first rejection by cumulative product."""
    grid = torch.ones(counts.shape[0], max(max_spec_len, 1), dtype=torch.bool, device=counts.device)
    grid[rows, position] = accepted
    return torch.minimum(grid.to(torch.int64).cumprod(dim=1).sum(dim=1), counts)


def _assemble(
    drafts: Tensor,
    rows: Tensor,
    position: Tensor,
    counts: Tensor,
    num_accepted: Tensor,
    at_rejection: Tensor,
    bonus_token_ids: Tensor,
    max_spec_len: int,
) -> Tensor:
    """Left-packed rows: the accepted drafts, then the bonus (all accepted) or the rejection token."""
    num_reqs, device = counts.shape[0], counts.device
    columns = torch.arange(max_spec_len + 1, device=device)
    draft_grid = torch.full((num_reqs, max_spec_len + 1), PLACEHOLDER_TOKEN_ID, dtype=torch.int64, device=device)
    draft_grid[rows, position] = drafts
    out = torch.where(columns < num_accepted.unsqueeze(1), draft_grid, PLACEHOLDER_TOKEN_ID)
    last = torch.where(num_accepted == counts, bonus_token_ids[:, 0].to(torch.int64), at_rejection)
    out[torch.arange(num_reqs, device=device), num_accepted] = last
    return out.to(torch.int32)


def parse_output(output_token_ids: Int[Tensor, "num_reqs cols"], vocab_size: int) -> list[list[int]]:
    """Per row, the entries ≠ −1 and < ``vocab_size`` in column order (vLLM 0.9.x)."""
    return [[t for t in row if t != PLACEHOLDER_TOKEN_ID and t < vocab_size] for row in output_token_ids.tolist()]
