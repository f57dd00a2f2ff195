"""The target distribution of each draft row: temperature → top-k → top-p → softmax (spec
docs/verification.md §1.4, vLLM's ``topk_topp_sampler`` rules), and greedy argmax."""

from collections.abc import Sequence

import torch
from jaxtyping import Float, Int
from torch import Tensor

from arctic_ref.spec.metadata import SamplingMetadata
from arctic_ref.spec.profile import INTENDED, SamplerProfile
from arctic_ref.spec.rejection_triton import fused_supported, softmax_rows


def request_of_rows(cu_num_draft_tokens: Int[Tensor, "num_reqs"], num_tokens: int) -> Int[Tensor, "num_tokens"]:
    """The request index of every flat draft row (rows r with c_{i−1} ≤ r < cᵢ belong to i)."""
    rows = torch.arange(num_tokens, device=cu_num_draft_tokens.device)
    return torch.searchsorted(cu_num_draft_tokens.to(torch.int64), rows, right=True)


def apply_temperature(x: Tensor, temperature: Float[Tensor, "num_tokens"]) -> Tensor:
    """x / τ, the quotient rounded to x's dtype (vLLM divides in place)."""
    return (x.to(torch.float32) / temperature.unsqueeze(-1)).to(x.dtype)


def apply_top_k(x: Tensor, top_k: Int[Tensor, "num_tokens"]) -> Tensor:
    """Keep values ≥ the kᵢ-th largest of each row (ties at the threshold survive); k = V is a no-op."""
    vocab = x.shape[-1]
    no_op = top_k >= vocab
    k = top_k.masked_fill(no_op, 1).to(torch.int64)
    largest = int(k.max().item()) if k.numel() else 1
    threshold = x.topk(largest, dim=-1).values.gather(1, (k - 1).unsqueeze(1))
    threshold = threshold.masked_fill(no_op.unsqueeze(1), float("-inf"))
    return x.masked_fill(x < threshold, float("-inf"))


def apply_top_k_top_p(x: Tensor, top_k: Int[Tensor, "num_tokens"] | None, top_p: Float[Tensor, "num_tokens"]) -> Tensor:
    """Top-p on the ascending sort (top-k first, at sorted index V − k): mask sorted positions whose
    cumulative probability is ≤ 1 − p, never the last (largest) one; scatter back."""
    vocab = x.shape[-1]
    ordered, index = x.sort(dim=-1, descending=False)
    if top_k is not None:
        threshold = ordered.gather(1, (vocab - top_k.to(torch.int64)).clamp(0, vocab - 1).unsqueeze(1))
        ordered = ordered.masked_fill(ordered < threshold, float("-inf"))
    cumulative = ordered.softmax(dim=-1).cumsum(dim=-1)
    mask = cumulative <= (1 - top_p.to(torch.float32)).unsqueeze(1)
    mask[:, -1] = False
    ordered = ordered.masked_fill(mask, float("-inf"))
    return ordered.scatter(-1, index, ordered)


def row_temperatures(
    meta: SamplingMetadata, rows: Int[Tensor, "num_tokens"], num_reqs: int
) -> Float[Tensor, "num_tokens"]:
    """τ of each flat row's request, float32; greedy rows (and all rows without temperatures) use 1."""
    if meta.temperature is None:
        return torch.ones(rows.shape[0], dtype=torch.float32, device=rows.device)
    greedy = meta.is_greedy(num_reqs, rows.device)
    return torch.where(greedy, 1.0, meta.temperature.to(torch.float32))[rows].contiguous()


def process_logits(
    target_logits: Float[Tensor, "num_tokens vocab"],
    cu_num_draft_tokens: Int[Tensor, "num_reqs"],
    sampling_metadata: SamplingMetadata,
    *,
    profile: SamplerProfile = INTENDED,
) -> Float[Tensor, "num_tokens vocab"]:
    """Every row's logits after temperature (greedy rows τ = 1), top-k and top-p, in
    ``profile.target_dtype`` (docs/verification.md §1.4 steps 1–4), masked entries −inf; a new tensor."""
    num_tokens = target_logits.shape[0]
    rows = request_of_rows(cu_num_draft_tokens, num_tokens)
    dtype = profile.target_dtype or target_logits.dtype
    x = target_logits.to(dtype)
    if sampling_metadata.temperature is not None:
        x = apply_temperature(x, row_temperatures(sampling_metadata, rows, cu_num_draft_tokens.shape[0]))
    top_k = sampling_metadata.top_k[rows] if sampling_metadata.top_k is not None else None
    if sampling_metadata.top_p is not None:
        x = apply_top_k_top_p(x, top_k, sampling_metadata.top_p[rows])
    elif top_k is not None:
        x = apply_top_k(x, top_k)
    return x if x is not target_logits else x.clone()


def compute_target_probs(
    target_logits: Float[Tensor, "num_tokens vocab"],
    cu_num_draft_tokens: Int[Tensor, "num_reqs"],
    sampling_metadata: SamplingMetadata,
    *,
    profile: SamplerProfile = INTENDED,
    fused: bool = True,
) -> Float[Tensor, "num_tokens vocab"]:
    """p for every row (greedy rows with τ = 1), float32: the float32 softmax of ``process_logits``.
    Never mutates ``target_logits``. On CUDA (float32, no top-k/top-p, INTENDED) the softmax is the
    fused kernel's unless ``fused=False``."""
    if fused and fused_supported(target_logits, sampling_metadata.top_k, sampling_metadata.top_p, profile.name):
        num_tokens = target_logits.shape[0]
        rows = request_of_rows(cu_num_draft_tokens, num_tokens)
        return softmax_rows(target_logits, row_temperatures(sampling_metadata, rows, cu_num_draft_tokens.shape[0]))
    x = process_logits(target_logits, cu_num_draft_tokens, sampling_metadata, profile=profile)
    return x.softmax(dim=-1, dtype=torch.float32)


def greedy_source(
    target_logits: Float[Tensor, "num_tokens vocab"],
    cu_num_draft_tokens: Int[Tensor, "num_reqs"],
    sampling_metadata: SamplingMetadata,
    target_probs: Float[Tensor, "num_tokens vocab"] | None,
    *,
    profile: SamplerProfile = INTENDED,
) -> Tensor:
    """What greedy rows take the argmax of (``profile.greedy_argmax_on``): the raw logits; in a batch
    that is not all greedy (``target_probs`` given) vLLM 0.9.2's float32 probabilities or vLLM 0.32's
    float32 logits after temperature 1, top-k and top-p (``process_logits``)."""
    if target_probs is None or profile.greedy_argmax_on == "logits":
        return target_logits
    if profile.greedy_argmax_on == "probs_if_mixed":
        return target_probs
    return process_logits(target_logits, cu_num_draft_tokens, sampling_metadata, profile=profile)


def greedy_tokens(source: Tensor) -> tuple[Int[Tensor, "num_tokens"], Tensor]:
    """First index of the maximum of each row of ``source`` (``greedy_source``), and the maximum
    itself (for the NaN check)."""
    best = source.argmax(dim=-1)
    return best, source.gather(1, best.unsqueeze(1)).squeeze(1)


def filter_row(x: Float[Tensor, "vocab"], top_k: int, top_p: float) -> Float[Tensor, "vocab"]:
    """One row's top-k then top-p mask (``apply_top_k`` / ``apply_top_k_top_p``, vLLM's
    ``apply_top_k_top_p_pytorch`` with CPU sync allowed); ``x`` itself when k ≥ V and p ≥ 1. A row of a
    batch gets exactly this: a no-op k = V or p = 1 in another row leaves this row's mask unchanged."""
    vocab = x.shape[-1]
    if top_k >= vocab and top_p >= 1.0:
        return x
    k = torch.tensor([min(top_k, vocab)], dtype=torch.int64, device=x.device)
    if top_p < 1.0:
        p = torch.tensor([top_p], dtype=torch.float32, device=x.device)
        return apply_top_k_top_p(x.unsqueeze(0), k if top_k < vocab else None, p).squeeze(0)
    return apply_top_k(x.unsqueeze(0), k).squeeze(0)


def sample_tokens(
    logits: Float[Tensor, "rows vocab"],
    temperatures: list[float],
    generators: list[torch.Generator | None],
    *,
    top_k: Sequence[int] | None = None,
    top_p: Sequence[float] | None = None,
) -> list[int]:
    """Greedy: the first maximum of the float32 logits (the verification path sees the same
    float32 rows, so greedy speculation is lossless bit for bit); top-k and top-p do not apply.
    Random, in vLLM's ``Sampler.sample`` order: x = logits / τ in float32, then top-k, then top-p
    (``filter_row``; ``top_k[i]`` in [1, V] with V = off, ``top_p[i]`` in (0, 1] with 1 = off, None =
    off for every row), p = softmax(x) in float32, then vLLM's exponential race argmax(p / E),
    E ~ Exp(1) drawn from the request's generator. A masked token has p = 0 and is never drawn."""
    vocab = logits.shape[-1]
    ks = [vocab] * len(temperatures) if top_k is None else list(top_k)
    ps = [1.0] * len(temperatures) if top_p is None else list(top_p)
    if any(k < 1 for k in ks) or any(not 0.0 < p <= 1.0 for p in ps):
        raise ValueError(f"top_k {ks} must be >= 1 (V = off) and top_p {ps} in (0, 1]")
    out: list[int] = []
    for row, temperature, generator, k, p in zip(logits, temperatures, generators, ks, ps, strict=True):
        if temperature == 0.0:
            out.append(int(torch.argmax(row.to(torch.float32))))  # the sampler works in float32, as vLLM's
            continue
        probs = torch.softmax(filter_row(row.to(torch.float32) / temperature, k, p), dim=-1)
        race = torch.empty_like(probs).exponential_(generator=generator)
        out.append(int(torch.argmax(probs / race)))
    return out
