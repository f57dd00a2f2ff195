"""Reference paged attention: per request, causal over exactly positions [0, seq_len) of the cache
(docs/runner.md §3.6). Softmax and P·v in float64 for float64 models, else float32, then cast."""

from dataclasses import dataclass

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from arctic_ref.model.kv_cache import KVCache


@dataclass(frozen=True, slots=True, kw_only=True)
class AttentionMetadata:
    """Rows ``[query_start_loc[i], query_start_loc[i+1])`` of the N input rows belong to request i,
    whose context after this step is ``seq_lens[i]`` tokens at ``context_slots[i]``. Rows past
    ``query_start_loc[-1]`` are padding: they attend nothing and give zeros."""

    query_start_loc: tuple[int, ...]
    seq_lens: tuple[int, ...]
    context_slots: tuple[Int[Tensor, "_"], ...]  # one length per request

    def __post_init__(self) -> None:
        if len(self.query_start_loc) != len(self.seq_lens) + 1 or len(self.seq_lens) != len(self.context_slots):
            raise ValueError(
                f"query_start_loc({len(self.query_start_loc)}) must be one longer than seq_lens({len(self.seq_lens)})"
                f" and context_slots({len(self.context_slots)})"
            )


def paged_attention(
    q: Float[Tensor, "rows qheads head_dim"],
    positions: Int[Tensor, "rows"],
    cache: KVCache,
    layer: int,
    meta: AttentionMetadata,
) -> Float[Tensor, "rows qheads head_dim"]:
    """Query head j reads local KV head j // (qheads / kvheads)."""
    compute = torch.float64 if q.dtype == torch.float64 else torch.float32
    out = torch.zeros_like(q)
    scale = q.shape[-1] ** -0.5
    for i, slots in enumerate(meta.context_slots):
        lo, hi = meta.query_start_loc[i], meta.query_start_loc[i + 1]
        if hi == lo:
            continue
        k, v = cache.read(layer, slots)
        group = q.shape[1] // k.shape[1]
        k = k.repeat_interleave(group, dim=1).to(compute)
        v = v.repeat_interleave(group, dim=1).to(compute)
        scores = torch.einsum("qhd,khd->hqk", q[lo:hi].to(compute), k) * scale
        key_pos = torch.arange(k.shape[0], device=q.device)
        allowed = key_pos[None, :] <= positions[lo:hi, None]
        scores = scores.masked_fill(~allowed[None], float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out[lo:hi] = torch.einsum("hqk,khd->qhd", weights, v).to(q.dtype)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchedAttention:
    """Static-shape form for CUDA graphs: row r attends to the keys at ``context_slots[r, :]``
    whose index is ≤ ``positions[r]`` (its request's causal window); pad rows (``real`` false) and
    padded context entries are selected away with ``torch.where``, never multiplied by a mask."""

    context_slots: Int[Tensor, "rows context"]
    real: Bool[Tensor, "rows"]


def batched_metadata(meta: AttentionMetadata, rows: int, context: int, device: torch.device) -> BatchedAttention:
    """Per-row context slots padded to ``context`` (slot 0 of reserved block 0 as filler)."""
    slots = torch.zeros(rows, context, dtype=torch.int64, device=device)
    real = torch.zeros(rows, dtype=torch.bool, device=device)
    for i, request_slots in enumerate(meta.context_slots):
        lo, hi = meta.query_start_loc[i], meta.query_start_loc[i + 1]
        if request_slots.shape[0] > context:
            raise ValueError(f"request {i} has {request_slots.shape[0]} context tokens > the static context {context}")
        slots[lo:hi, : request_slots.shape[0]] = request_slots.to(device)
        real[lo:hi] = True
    return BatchedAttention(context_slots=slots, real=real)


def allowed_keys(positions: Int[Tensor, "rows"], meta: BatchedAttention) -> Bool[Tensor, "rows context"]:
    """Row r may read key index c iff c ≤ positions[r] and r is a real row (computed once per step)."""
    context = meta.context_slots.shape[1]
    return (torch.arange(context, device=positions.device)[None, :] <= positions[:, None]) & meta.real[:, None]


def batched_attention(
    q: Float[Tensor, "rows qheads head_dim"],
    allowed: Bool[Tensor, "rows context"],
    cache: KVCache,
    layer: int,
    meta: BatchedAttention,
) -> Float[Tensor, "rows qheads head_dim"]:
    """The same math as ``paged_attention`` with static shapes (equal to it to ≤ 1e-12 in float64);
    query heads grouped by their KV head, so K and V are never repeated."""
    compute = torch.float64 if q.dtype == torch.float64 else torch.float32
    rows, context = meta.context_slots.shape
    k, v = cache.read(layer, meta.context_slots.reshape(-1))
    kv_heads, head_dim = k.shape[-2], k.shape[-1]
    k = k.view(rows, context, kv_heads, head_dim).to(compute)
    v = v.view(rows, context, kv_heads, head_dim).to(compute)
    grouped = q.view(rows, kv_heads, q.shape[1] // kv_heads, head_dim).to(compute)
    zero = torch.zeros((), dtype=compute, device=q.device)
    v = torch.where(allowed[:, :, None, None], v, zero)
    scores = torch.einsum("rkgd,rckd->rkgc", grouped, k) * head_dim**-0.5
    scores = torch.where(
        allowed[:, None, None, :], scores, torch.full((), float("-inf"), dtype=compute, device=q.device)
    )
    weights = torch.where(meta.real[:, None, None, None], torch.softmax(scores, dim=-1), zero)
    return torch.einsum("rkgc,rckd->rkgd", weights, v).reshape(q.shape).to(q.dtype)
