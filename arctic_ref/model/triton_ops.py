"""The fused forward's Triton ops (``arctic_ref.model.fused_forward``), as ``TRITON_OPS``: each one
does what its torch counterpart in ``arctic_ref.model.layer_ops.TORCH_OPS`` does, in one launch,
with the reference's roundings. This module checks the inputs, allocates, picks the grids and
launches; the ``@triton.jit`` kernels are in ``triton_kernels``.

* ``add_rms_norm``: ``s = x + δ`` (rounded to the model dtype), then transformers' RMSNorm of s
  (float32 inside, ``weight · normed`` in the model's op-math type) — one read of x, δ and the weight.
* ``rope_write_cache``: RoPE of the new keys with the step's cos/sin tables and the K/V cache write
  at ``slot_mapping`` (slot −1, a pad row, writes nothing).
* ``decode_attention``: RoPE of the queries, then causal attention over each row's context slots,
  flash-decoding style (one program per row, KV head and split of the keys, reading each KV tile
  once for the head's whole query group, then the splits combined): softmax and P·v in float32
  (float64 for float64 models), as the reference. bfloat16 runs on tensor cores, with p split into
  three bfloat16 parts so that P·v keeps float32 accuracy.
* ``gated_linear``: ``silu(x·W_gateᵀ) · (x·W_upᵀ)`` with the packed gate_up weight; up to 16 bfloat16
  rows, the ``linear`` kernel with SiLU·up in its epilogue, otherwise ``linear`` then ``silu_mul``.
* ``linear``: x·Wᵀ; up to 16 bfloat16 rows, one tensor-core kernel that reads each weight row once
  (float32 accumulation, as cuBLAS, summed in another order); otherwise torch's matmul.
* ``qkv_write_cache``: the qkv ``linear`` and ``rope_write_cache`` of its k and v columns; up to 16
  bfloat16 rows, the ``linear`` kernel with each program holding columns d and d + D/2 of one head,
  so RoPE and the cache write happen in its epilogue (one launch fewer per layer, the same bits).

Every kernel is launched with programmatic dependent launch on Hopper and later (``_pdl``).

Roundings: every product and sum the reference rounds to the model dtype is rounded here too (the
bfloat16 RoPE and SwiGLU steps are equal bit for bit); float32 contraction into FMAs is turned off
(``enable_fp_fusion=False``), divisions are IEEE (``div_rn``) and ``exp``/``rsqrt`` are libdevice's,
as torch's CUDA kernels. What differs is summation order only (the RMS mean, the attention's dot
products and online softmax), which the GPU tests bound against the reference.
"""

import functools
from typing import Final, NamedTuple

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from arctic_ref.model.layer_ops import LayerOps
from arctic_ref.model.triton_kernels import TRITON_AVAILABLE as TRITON_AVAILABLE

if TRITON_AVAILABLE:
    import triton

    from arctic_ref.model.triton_kernels import (
        _add_rms_norm_kernel,
        _attention_combine_kernel,
        _attention_mma_kernel,
        _attention_split_kernel,
        _qkv_write_kernel,
        _rope_write_kernel,
        _silu_mul_kernel,
        _skinny_linear_kernel,
    )

KEYS_PER_SPLIT: Final = 32  # keys per attention program: ⌈C / 32⌉ programs per row and query head
BLOCK_KEYS: Final = 32  # keys per inner tile
# Warps per attention program. Measured with benchmarks/gpu/tune_attention.py (µs per layer, bf16,
# context 1056): one warp on a 32-key tile takes 28.5 for a 1+7-row verify and 8.4 for a decode
# row; (64, 64, 2) takes 33.5 and 8.4; (64, 64, 4) takes 47.9 and 11.0.
WARPS: Final = 1
SILU_BLOCK: Final = 1024
SKINNY_ROWS: Final = 16  # rows up to which ``linear`` streams the weight with its own kernel
MMA_BLOCK_KEYS: Final = 64  # keys per tensor-core tile
MMA_WARPS: Final = 4
MMA_PROGRAMS: Final = 512  # programs the tensor-core kernel aims for (132 SMs, several resident each)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _on_cuda(**tensors: Tensor | None) -> None:
    """Every tensor on a CUDA device (the kernels read raw device pointers)."""
    elsewhere = {name: str(t.device) for name, t in tensors.items() if t is not None and t.device.type != "cuda"}
    _require(not elsewhere, f"Triton kernels need CUDA tensors; on other devices: {elsewhere}")


def _unit_stride(**tensors: Tensor | None) -> None:
    """The last dimension of every tensor has stride 1 (rows and heads may be strided views)."""
    bad = {name: tuple(t.stride()) for name, t in tensors.items() if t is not None and t.stride(-1) != 1}
    _require(not bad, f"the last dimension must have stride 1; strides: {bad}")


def _contiguous(**tensors: Tensor) -> None:
    bad = {name: (tuple(t.shape), tuple(t.stride())) for name, t in tensors.items() if not t.is_contiguous()}
    _require(not bad, f"these must be contiguous (shape, strides): {bad}")


@functools.cache
def _pdl_on(device: torch.device) -> bool:
    return torch.cuda.get_device_capability(device) >= (9, 0)


def _pdl(x: Tensor) -> dict[str, bool]:
    """The launch keywords ``PDL`` (the kernel's constexpr) and ``launch_pdl`` (Triton's launch
    option), both on or both off. Every kernel here is launched with programmatic dependent launch on x's device when it has
    compute capability 9.0 or more (Hopper on; the PTX needs it). Each kernel waits for its
    predecessor at its start (``_await_inputs``) and never triggers its successor early, so a
    successor is launched as its predecessor's last programs finish instead of after the launch
    gap. Triggering the successor at each kernel's start, and prefetching weight rows into L2
    before the wait, were slower."""
    on = _pdl_on(x.device)
    return {"PDL": on, "launch_pdl": on}


def _wide(x: Tensor) -> bool:
    return x.dtype == torch.float64


def add_rms_norm(
    x: Float[Tensor, "rows hidden"],
    delta: Float[Tensor, "rows hidden"] | None,
    weight: Float[Tensor, "hidden"],
    eps: float,
) -> tuple[Float[Tensor, "rows hidden"], Float[Tensor, "rows hidden"]]:
    """(s, rms_norm(s)) with s = x + δ (or x itself when δ is None)."""
    rows, hidden = x.shape
    _on_cuda(x=x, delta=delta, weight=weight)
    _require(weight.shape == (hidden,), f"weight {tuple(weight.shape)} for hidden size {hidden}")
    _require(
        delta is None or delta.shape == x.shape,
        f"delta {None if delta is None else tuple(delta.shape)} for x {tuple(x.shape)}",
    )
    _unit_stride(x=x, delta=delta)
    _contiguous(weight=weight)
    total = x if delta is None else torch.empty((rows, hidden), dtype=x.dtype, device=x.device)
    out = torch.empty((rows, hidden), dtype=x.dtype, device=x.device)
    d = x if delta is None else delta
    _add_rms_norm_kernel[(rows,)](
        x,
        d,
        weight,
        total,
        out,
        hidden,
        1.0 / hidden,
        eps,
        x.stride(0),
        d.stride(0),
        HAS_DELTA=delta is not None,
        WIDE=_wide(x),
        BLOCK=triton.next_power_of_2(hidden),
        num_warps=8 if hidden >= 2048 else 4,
        enable_fp_fusion=False,
        **_pdl(x),
    )
    return total, out


def rope_write_cache(
    k: Float[Tensor, "rows kvheads head_dim"],
    v: Float[Tensor, "rows kvheads head_dim"],
    cos: Float[Tensor, "rows head_dim"],
    sin: Float[Tensor, "rows head_dim"],
    slots: Int[Tensor, "rows"],
    key_cache: Tensor,
    value_cache: Tensor,
) -> None:
    """Cache[slot] ← (RoPE(k), v) for every row whose slot is ≥ 0."""
    rows, heads, head_dim = k.shape
    _on_cuda(k=k, v=v, cos=cos, sin=sin, slots=slots, key_cache=key_cache, value_cache=value_cache)
    _require(v.shape == k.shape, f"k {tuple(k.shape)} and v {tuple(v.shape)} differ")
    _require(
        cos.shape == sin.shape == (rows, head_dim),
        f"cos {tuple(cos.shape)}, sin {tuple(sin.shape)} for k {tuple(k.shape)}",
    )
    _require(slots.shape == (rows,), f"slots {tuple(slots.shape)} for {rows} rows")
    _require(
        key_cache.shape == value_cache.shape and key_cache.shape[2:] == (heads, head_dim),
        f"caches {tuple(key_cache.shape)}, {tuple(value_cache.shape)} for k {tuple(k.shape)}",
    )
    _unit_stride(k=k, v=v)
    _contiguous(cos=cos, sin=sin, slots=slots, key_cache=key_cache, value_cache=value_cache)
    _rope_write_kernel[(rows, heads)](
        k,
        v,
        cos,
        sin,
        slots,
        key_cache,
        value_cache,
        k.stride(0),
        k.stride(1),
        v.stride(0),
        v.stride(1),
        heads,
        head_dim,
        WIDE=_wide(k),
        BLOCK_D=triton.next_power_of_2(head_dim),
        enable_fp_fusion=False,
        **_pdl(k),
    )


def qkv_write_cache(
    x: Float[Tensor, "rows k"],
    weight: Float[Tensor, "qkv k"],
    cos: Float[Tensor, "rows head_dim"],
    sin: Float[Tensor, "rows head_dim"],
    slots: Int[Tensor, "rows"],
    key_cache: Tensor,
    value_cache: Tensor,
) -> Float[Tensor, "rows qkv"]:
    """``linear(x, weight)`` for the packed [q; k; v] weight (head_dim = the caches' last dimension,
    KV heads = their third), then ``rope_write_cache`` of its k and v columns, the same bits. Up to
    ``SKINNY_ROWS`` bfloat16 rows and half a head a multiple of 16 columns, one
    ``_qkv_write_kernel`` launch (one launch fewer per layer); otherwise the two ops."""
    _on_cuda(x=x, weight=weight, cos=cos, sin=sin, slots=slots, key_cache=key_cache, value_cache=value_cache)
    rows = x.shape[0]
    n_out, head_dim, kv_heads = weight.shape[0], key_cache.shape[-1], key_cache.shape[-2]
    _require(weight.shape[1] == x.shape[1], f"x {tuple(x.shape)} and weight {tuple(weight.shape)} do not chain")
    _require(
        key_cache.dim() == 4 and n_out % head_dim == 0 and n_out // head_dim > 2 * kv_heads,
        f"weight {tuple(weight.shape)} is not [q; k; v] for caches {tuple(key_cache.shape)}",
    )
    _require(
        key_cache.shape == value_cache.shape, f"caches {tuple(key_cache.shape)}, {tuple(value_cache.shape)} differ"
    )
    _require(
        cos.shape == sin.shape == (rows, head_dim),
        f"cos {tuple(cos.shape)}, sin {tuple(sin.shape)} for {rows} rows of head_dim {head_dim}",
    )
    _require(slots.shape == (rows,), f"slots {tuple(slots.shape)} for {rows} rows")
    _contiguous(cos=cos, sin=sin, slots=slots, key_cache=key_cache, value_cache=value_cache)
    block_n = qkv_block(head_dim)
    if block_n == 0 or not _streams_weight(x, weight) or key_cache.dtype != x.dtype:
        qkv = linear(x, weight)
        kv_columns = kv_heads * head_dim
        k = qkv[:, n_out - 2 * kv_columns : n_out - kv_columns].view(rows, kv_heads, head_dim)
        rope_write_cache(
            k, qkv[:, n_out - kv_columns :].view(rows, kv_heads, head_dim), cos, sin, slots, key_cache, value_cache
        )
        return qkv
    qkv = torch.empty((rows, n_out), dtype=x.dtype, device=x.device)
    _, block_k, stages = skinny_config(n_out)
    heads = n_out // head_dim
    _qkv_write_kernel[(heads * (head_dim // 2 // block_n),)](
        x,
        weight,
        qkv,
        cos,
        sin,
        slots,
        key_cache,
        value_cache,
        rows,
        n_out,
        x.shape[1],
        x.stride(0),
        head_dim // 2 * x.shape[1],
        heads - 2 * kv_heads,
        kv_heads,
        HEAD_DIM=head_dim,
        BLOCK_M=SKINNY_ROWS,
        BLOCK_N=block_n,
        BLOCK_K=block_k,
        num_warps=4,
        num_stages=stages,
        enable_fp_fusion=False,
        **_pdl(x),
    )
    return qkv


def qkv_block(head_dim: int) -> int:
    """Columns per half head in one ``_qkv_write_kernel`` program: 32 (64 weight rows, as
    ``skinny_config``'s qkv tile) where half a head is a multiple of 32, 16 where it is one of 16;
    0 where the kernel does not apply (a tensor-core product needs 16)."""
    half = head_dim // 2
    if head_dim % 2 or half % 16:
        return 0
    return 32 if half % 32 == 0 else 16


def decode_attention(
    q: Float[Tensor, "rows qheads head_dim"],
    cos: Float[Tensor, "rows head_dim"],
    sin: Float[Tensor, "rows head_dim"],
    positions: Int[Tensor, "rows"],
    context_slots: Int[Tensor, "rows context"],
    real: Bool[Tensor, "rows"],
    key_cache: Tensor,
    value_cache: Tensor,
    *,
    tiling: tuple[int, int, int] | None = None,
) -> Float[Tensor, "rows qheads head_dim"]:
    """Attention of RoPE(q) over each row's context slots ``[0, positions[row]]`` (the reference's
    ``batched_attention`` of ``apply_rope(q)`` with ``allowed_keys``); pad rows give zeros. ``tiling``: keys per
    program, keys per inner tile (a power of two dividing the first), warps per program; by default
    ``attention_tiling``'s. bfloat16 runs ``_attention_mma_kernel`` (tensor cores), other dtypes the
    split kernel."""
    rows, q_heads, head_dim = q.shape
    kv_heads = key_cache.shape[2]
    context = context_slots.shape[1]
    mma = uses_tensor_cores(q, key_cache)
    per_split, block_n, warps = attention_tiling(rows, kv_heads, context, mma) if tiling is None else tiling
    inputs = _AttentionInputs(
        q=q,
        cos=cos,
        sin=sin,
        positions=positions,
        context_slots=context_slots,
        real=real,
        key_cache=key_cache,
        value_cache=value_cache,
    )
    _check_attention_inputs(inputs, tiling, per_split, block_n, warps)
    splits = triton.cdiv(context, per_split)
    compute = torch.float64 if _wide(q) else torch.float32
    m = torch.empty((rows, q_heads, splits), dtype=compute, device=q.device)
    partials = _SplitPartials(
        m=m,
        denom=torch.empty_like(m),
        acc=torch.empty((rows, q_heads, splits, head_dim), dtype=compute, device=q.device),
    )
    out = torch.empty((rows, q_heads, head_dim), dtype=q.dtype, device=q.device)
    if mma:
        _launch_attention_mma(inputs, partials, out, per_split, block_n, warps)
        if splits == 1:
            return out
    else:
        _launch_attention_split(inputs, partials, per_split, block_n, warps)
    _launch_attention_combine(inputs, partials, out)
    return out


class _AttentionInputs(NamedTuple):
    """``decode_attention``'s tensors, as its launches read them."""

    q: Tensor
    cos: Tensor
    sin: Tensor
    positions: Tensor
    context_slots: Tensor
    real: Tensor
    key_cache: Tensor
    value_cache: Tensor


class _SplitPartials(NamedTuple):
    """Per row, query head and split of the keys (and head dimension, for ``acc``): the split's
    running maximum, softmax denominator and unnormalised P·v, in float32 (float64 for float64
    models); the combine launch merges the splits."""

    m: Tensor
    denom: Tensor
    acc: Tensor


def _check_attention_inputs(
    inputs: _AttentionInputs, tiling: tuple[int, int, int] | None, per_split: int, block_n: int, warps: int
) -> None:
    """CUDA tensors; query heads a multiple of KV heads; caches, positions, flags, context slots and
    RoPE tables that fit q; a tile that is a power of two dividing the keys per program; q's last
    dimension and every other tensor contiguous."""
    q, key_cache, value_cache = inputs.q, inputs.key_cache, inputs.value_cache
    rows, q_heads, head_dim = q.shape
    kv_heads = key_cache.shape[2]
    positions, real, context_slots, cos, sin = (
        inputs.positions,
        inputs.real,
        inputs.context_slots,
        inputs.cos,
        inputs.sin,
    )
    _on_cuda(
        q=q,
        cos=cos,
        sin=sin,
        positions=positions,
        context_slots=context_slots,
        real=real,
        key_cache=key_cache,
        value_cache=value_cache,
    )
    _require(q_heads % kv_heads == 0, f"{q_heads} query heads over {kv_heads} KV heads")
    _require(
        key_cache.shape == value_cache.shape and key_cache.shape[3] == head_dim,
        f"caches {tuple(key_cache.shape)}, {tuple(value_cache.shape)} for q {tuple(q.shape)}",
    )
    _require(
        positions.shape == real.shape == (rows,) and context_slots.shape[0] == rows,
        f"positions {tuple(positions.shape)}, real {tuple(real.shape)}, context_slots"
        f" {tuple(context_slots.shape)} for {rows} rows",
    )
    _require(
        cos.shape == sin.shape == (rows, head_dim),
        f"cos {tuple(cos.shape)}, sin {tuple(sin.shape)} for q {tuple(q.shape)}",
    )
    _require(
        per_split % block_n == 0 and block_n & (block_n - 1) == 0 and warps >= 1,
        f"tiling {tiling}: the tile must be a power of two dividing the keys per program",
    )
    _unit_stride(q=q)
    _contiguous(
        cos=cos,
        sin=sin,
        positions=positions,
        context_slots=context_slots,
        real=real,
        key_cache=key_cache,
        value_cache=value_cache,
    )


def _launch_attention_mma(
    inputs: _AttentionInputs, partials: _SplitPartials, out: Tensor, per_split: int, block_n: int, warps: int
) -> None:
    """``_attention_mma_kernel`` over (rows, KV heads, splits); with one split it writes ``out``
    itself (``DIRECT``), otherwise the partials."""
    q, kv_heads = inputs.q, inputs.key_cache.shape[2]
    rows, q_heads, head_dim = q.shape
    context, splits = inputs.context_slots.shape[1], partials.m.shape[2]
    group = q_heads // kv_heads
    _attention_mma_kernel[(rows, kv_heads, splits)](
        q,
        inputs.cos,
        inputs.sin,
        inputs.positions,
        inputs.real,
        inputs.context_slots,
        inputs.key_cache,
        inputs.value_cache,
        partials.m,
        partials.denom,
        partials.acc,
        out,
        q.stride(0),
        q.stride(1),
        context,
        kv_heads,
        head_dim,
        head_dim**-0.5,
        splits,
        per_split,
        GROUP=group,
        BLOCK_G=max(16, triton.next_power_of_2(group)),
        BLOCK_D=triton.next_power_of_2(head_dim),
        BLOCK_N=block_n,
        DIRECT=splits == 1,
        num_warps=warps,
        enable_fp_fusion=False,
        **_pdl(q),
    )


def _launch_attention_split(
    inputs: _AttentionInputs, partials: _SplitPartials, per_split: int, block_n: int, warps: int
) -> None:
    """``_attention_split_kernel`` over (rows, KV heads, splits), writing the partials."""
    q, kv_heads = inputs.q, inputs.key_cache.shape[2]
    rows, q_heads, head_dim = q.shape
    context, splits = inputs.context_slots.shape[1], partials.m.shape[2]
    group = q_heads // kv_heads
    _attention_split_kernel[(rows, kv_heads, splits)](
        q,
        inputs.cos,
        inputs.sin,
        inputs.positions,
        inputs.real,
        inputs.context_slots,
        inputs.key_cache,
        inputs.value_cache,
        partials.m,
        partials.denom,
        partials.acc,
        q.stride(0),
        q.stride(1),
        context,
        kv_heads,
        head_dim,
        head_dim**-0.5,
        splits,
        WIDE=_wide(q),
        BLOCK_D=triton.next_power_of_2(head_dim),
        BLOCK_N=block_n,
        PER_SPLIT=per_split,
        GROUP=group,
        BLOCK_G=triton.next_power_of_2(group),
        num_warps=warps,
        enable_fp_fusion=False,
        **_pdl(q),
    )


def _launch_attention_combine(inputs: _AttentionInputs, partials: _SplitPartials, out: Tensor) -> None:
    """``_attention_combine_kernel`` over (rows, query heads): the splits merged into ``out`` (pad
    rows: zeros)."""
    q = inputs.q
    rows, q_heads, head_dim = q.shape
    splits = partials.m.shape[2]
    _attention_combine_kernel[(rows, q_heads)](
        partials.m,
        partials.denom,
        partials.acc,
        inputs.real,
        out,
        q_heads,
        head_dim,
        splits,
        WIDE=_wide(q),
        BLOCK_S=triton.next_power_of_2(splits),
        BLOCK_D=triton.next_power_of_2(head_dim),
        enable_fp_fusion=False,
        **_pdl(q),
    )


def uses_tensor_cores(q: Tensor, key_cache: Tensor) -> bool:
    """``decode_attention`` runs its tensor-core kernel: bfloat16 queries and cache, head_dim ≥ 16."""
    return q.dtype == key_cache.dtype == torch.bfloat16 and q.shape[-1] >= 16


def attention_tiling(rows: int, kv_heads: int, context: int, tensor_cores: bool) -> tuple[int, int, int]:
    """(keys per program, keys per tile, warps). The split kernel: ``KEYS_PER_SPLIT``, ``BLOCK_KEYS``,
    ``WARPS``. The tensor-core kernel: 64-key tiles and 4 warps, and as few splits as still give
    ``MMA_PROGRAMS`` programs (rows × KV heads × splits): one split, and no combine launch, once the
    rows alone fill the GPU."""
    if not tensor_cores:
        return KEYS_PER_SPLIT, BLOCK_KEYS, WARPS
    tiles = -(-max(context, 1) // MMA_BLOCK_KEYS)
    splits = min(tiles, -(-MMA_PROGRAMS // max(rows * kv_heads, 1)))
    return MMA_BLOCK_KEYS * -(-tiles // splits), MMA_BLOCK_KEYS, MMA_WARPS


def silu_mul(gate_up: Float[Tensor, "rows two_inter"]) -> Float[Tensor, "rows inter"]:
    """silu(gate_up[:, :I]) · gate_up[:, I:] with the reference's two roundings."""
    rows, width = gate_up.shape
    _on_cuda(gate_up=gate_up)
    _require(width % 2 == 0, f"gate_up {tuple(gate_up.shape)} must be [rows, 2·I]")
    _unit_stride(gate_up=gate_up)
    inter = width // 2
    out = torch.empty((rows, inter), dtype=gate_up.dtype, device=gate_up.device)
    _silu_mul_kernel[(rows, triton.cdiv(inter, SILU_BLOCK))](
        gate_up,
        out,
        inter,
        gate_up.stride(0),
        WIDE=_wide(gate_up),
        BLOCK=SILU_BLOCK,
        enable_fp_fusion=False,
        **_pdl(gate_up),
    )
    return out


def skinny_config(n_out: int) -> tuple[int, int, int]:
    """(BLOCK_N, BLOCK_K, pipeline stages) of ``_skinny_linear_kernel``: ``BLOCK_K`` 256 (4 warps),
    and 5 stages for outputs up to 4096 wide (o and down), 3 from 16,384 wide (gate_up), 4 between
    (qkv): the fastest in whole-step graph replays of the Llama-3-8B decode."""
    block_n = 32 if n_out <= 4096 else 64
    stages = 5 if n_out <= 4096 else 3 if n_out >= 16_384 else 4
    return block_n, 256, stages


def _skinny(x: Tensor, weight: Tensor, *, gated: bool = False) -> Tensor:
    """``_skinny_linear_kernel``; ``gated``: half as many outputs as weight rows, each program reading
    half as many rows of each half (the same weight rows per program as the plain product)."""
    rows, k_in = x.shape
    n_out = weight.shape[0] // 2 if gated else weight.shape[0]
    y = torch.empty((rows, n_out), dtype=x.dtype, device=x.device)
    block_n, block_k, stages = skinny_config(weight.shape[0])
    block_n = block_n // 2 if gated else block_n
    _skinny_linear_kernel[(triton.cdiv(n_out, block_n),)](
        x,
        weight,
        y,
        rows,
        n_out,
        k_in,
        x.stride(0),
        n_out * k_in,
        BLOCK_M=SKINNY_ROWS,
        BLOCK_N=block_n,
        BLOCK_K=block_k,
        GATED=gated,
        num_warps=4,
        num_stages=stages,
        enable_fp_fusion=not gated,  # SiLU as silu_mul: no FMAs
        **_pdl(x),
    )
    return y


def _streams_weight(x: Tensor, weight: Tensor) -> bool:
    """``_skinny_linear_kernel`` applies (CUDA tensors, as ``linear`` requires): at most
    ``SKINNY_ROWS`` bfloat16 rows, a contiguous weight."""
    return (
        x.dtype == weight.dtype == torch.bfloat16
        and 0 < x.shape[0] <= SKINNY_ROWS
        and weight.is_contiguous()
        and x.stride(1) == 1
    )


def linear(x: Float[Tensor, "rows k"], weight: Float[Tensor, "n k"]) -> Float[Tensor, "rows n"]:
    """x·Wᵀ: for at most ``SKINNY_ROWS`` bfloat16 rows on CUDA (decode and verify steps) one
    ``_skinny_linear_kernel`` launch that streams the weight once; otherwise torch's matmul."""
    _on_cuda(x=x, weight=weight)
    _require(weight.shape[1] == x.shape[1], f"x {tuple(x.shape)} and weight {tuple(weight.shape)} do not chain")
    return _skinny(x, weight) if _streams_weight(x, weight) else x @ weight.T


def gated_linear(x: Float[Tensor, "rows k"], weight: Float[Tensor, "two_inter k"]) -> Float[Tensor, "rows inter"]:
    """``silu_mul(linear(x, weight))`` for the packed [gate; up] weight, the same bits: for at most
    ``SKINNY_ROWS`` bfloat16 rows one ``_skinny_linear_kernel`` launch with SiLU·up in its epilogue
    (no [rows, 2·I] intermediate, one launch fewer per layer); otherwise the two ops."""
    _on_cuda(x=x, weight=weight)
    _require(weight.shape[1] == x.shape[1], f"x {tuple(x.shape)} and weight {tuple(weight.shape)} do not chain")
    _require(weight.shape[0] % 2 == 0, f"weight {tuple(weight.shape)} must be [2·I, k] ([gate; up])")
    return _skinny(x, weight, gated=True) if _streams_weight(x, weight) else silu_mul(linear(x, weight))


TRITON_OPS = LayerOps(
    "triton", add_rms_norm, rope_write_cache, decode_attention, gated_linear, linear, qkv_write_cache=qkv_write_cache
)
