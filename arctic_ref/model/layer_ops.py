"""``LayerOps``: the five per-layer operations the fused forward calls, as a frozen value passed
down. ``TORCH_OPS`` writes each one with the reference's own torch functions (any device, any
dtype): it is the specification every kernel set is tested against, and with it the fused
forward's structure (packed projections, RoPE after the Ulysses exchange, the add+norm pairing)
runs in every layout on the CPU. ``arctic_ref.model.triton_ops.TRITON_OPS`` is the CUDA set."""

from collections.abc import Callable
from dataclasses import dataclass

import torch.nn.functional as F
from jaxtyping import Bool, Float, Int
from torch import Tensor

from arctic_ref.model.attention import BatchedAttention, allowed_keys, batched_attention
from arctic_ref.model.kv_cache import KVCache
from arctic_ref.model.layers import apply_rope, rms_norm

AddRmsNorm = Callable[[Tensor, Tensor | None, Tensor, float], tuple[Tensor, Tensor]]
RopeWriteCache = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor], None]
DecodeAttention = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]
GatedLinear = Callable[[Tensor, Tensor], Tensor]
Linear = Callable[[Tensor, Tensor], Tensor]
QkvWriteCache = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]


@dataclass(frozen=True, slots=True)
class LayerOps:
    """``add_rms_norm(x, δ | None, weight, eps) → (x + δ, rms_norm(x + δ))``;
    ``rope_write_cache(k, v, cos, sin, slots, key_cache, value_cache)``;
    ``decode_attention(q, cos, sin, positions, context_slots, real, key_cache, value_cache)``;
    ``gated_linear(x, gate_up_weight) → silu(x · W_gateᵀ) · (x · W_upᵀ)`` (the packed [gate; up]
    weight, each product rounded first); ``linear(x, weight) → x · weightᵀ`` (the projections).
    ``qkv_write_cache(x, qkv_weight, cos, sin, slots, key_cache, value_cache) → x · qkv_weightᵀ``,
    optional: a kernel set's fusion of the qkv ``linear`` with ``rope_write_cache`` of its k and v
    columns, which must give the bits of the two; the fused forward takes it where no Ulysses
    exchange comes between them. ``TORCH_OPS`` has none: the two ops are the specification."""

    name: str
    add_rms_norm: AddRmsNorm
    rope_write_cache: RopeWriteCache
    decode_attention: DecodeAttention
    gated_linear: GatedLinear
    linear: Linear
    qkv_write_cache: QkvWriteCache | None = None


def torch_add_rms_norm(
    x: Float[Tensor, "rows hidden"],
    delta: Float[Tensor, "rows hidden"] | None,
    weight: Float[Tensor, "hidden"],
    eps: float,
) -> tuple[Float[Tensor, "rows hidden"], Float[Tensor, "rows hidden"]]:
    total = x if delta is None else x + delta
    return total, rms_norm(total, weight, eps)


def torch_rope_write_cache(
    k: Float[Tensor, "rows kvheads head_dim"],
    v: Float[Tensor, "rows kvheads head_dim"],
    cos: Float[Tensor, "rows head_dim"],
    sin: Float[Tensor, "rows head_dim"],
    slots: Int[Tensor, "rows"],
    key_cache: Tensor,
    value_cache: Tensor,
) -> None:
    """The graph-capturable write (pad rows land in reserved block 0, which nothing reads)."""
    KVCache(keys=(key_cache,), values=(value_cache,)).write_static(0, slots, apply_rope(k, cos, sin), v)


def torch_decode_attention(
    q: Float[Tensor, "rows qheads head_dim"],
    cos: Float[Tensor, "rows head_dim"],
    sin: Float[Tensor, "rows head_dim"],
    positions: Int[Tensor, "rows"],
    context_slots: Int[Tensor, "rows context"],
    real: Bool[Tensor, "rows"],
    key_cache: Tensor,
    value_cache: Tensor,
) -> Float[Tensor, "rows qheads head_dim"]:
    meta = BatchedAttention(context_slots=context_slots, real=real)
    cache = KVCache(keys=(key_cache,), values=(value_cache,))
    return batched_attention(apply_rope(q, cos, sin), allowed_keys(positions, meta), cache, 0, meta)


def torch_linear(x: Float[Tensor, "rows k"], weight: Float[Tensor, "n k"]) -> Float[Tensor, "rows n"]:
    return x @ weight.T


def torch_gated_linear(x: Float[Tensor, "rows k"], weight: Float[Tensor, "two_inter k"]) -> Float[Tensor, "rows inter"]:
    gate_up = torch_linear(x, weight)
    inter = gate_up.shape[1] // 2
    return F.silu(gate_up[:, :inter]) * gate_up[:, inter:]


TORCH_OPS = LayerOps(
    "torch", torch_add_rms_norm, torch_rope_write_cache, torch_decode_attention, torch_gated_linear, torch_linear
)
