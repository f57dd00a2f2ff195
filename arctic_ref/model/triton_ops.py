"""Triton kernels of the fused forward (``arctic_ref.model.fused_forward``), as ``TRITON_OPS``: each one
does what its torch counterpart in ``arctic_ref.model.layer_ops.TORCH_OPS`` does, in one launch,
with the reference's roundings.

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
from typing import Final

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from arctic_ref.model.layer_ops import LayerOps

try:
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice
    from triton.language.extra.cuda import gdc_wait

    TRITON_AVAILABLE: Final = True
except ImportError:  # pragma: no cover - CPU-only installs
    TRITON_AVAILABLE = False  # type: ignore[misc]

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

if TRITON_AVAILABLE:

    @triton.jit
    def _exp(x):  # type: ignore[no-untyped-def]
        return libdevice.exp(x)  # expf / exp, as torch's CUDA kernels (tl.exp is ex2.approx)

    @triton.jit
    def _rsqrt(x):  # type: ignore[no-untyped-def]
        return libdevice.rsqrt(x)  # rsqrtf, as torch.rsqrt on CUDA

    @triton.jit
    def _await_inputs(PDL: tl.constexpr):  # type: ignore[no-untyped-def]
        """Programmatic dependent launch (``PDL``: Hopper on, see ``_pdl``): the kernel is launched as
        the one before it finishes, not after, and waits here until that kernel's writes are
        visible. Each kernel calls this before it reads or writes anything."""
        if PDL:
            gdc_wait()

    @triton.jit
    def _opmath(x, WIDE: tl.constexpr):  # type: ignore[no-untyped-def]
        """torch's op-math type: float64 for float64 tensors, else float32."""
        if WIDE:
            return x.to(tl.float64)
        else:
            return x.to(tl.float32)

    @triton.jit
    def _divide(a, b, WIDE: tl.constexpr):  # type: ignore[no-untyped-def]
        if WIDE:
            return a / b  # float64 division is IEEE
        else:
            return tl.math.div_rn(a, b)  # float32 '/' would be div.full (approximate)

    @triton.jit
    def _rope(x, x_rot, cos, sin, d, half, WIDE: tl.constexpr):  # type: ignore[no-untyped-def]
        """x·cos + cat(−x[half:], x[:half])·sin with the reference's three roundings to x's dtype;
        ``x_rot`` is x read at (d + half) mod D."""
        dtype = x.dtype
        rotated = tl.where(d < half, -x_rot, x_rot)
        a = (_opmath(x, WIDE) * _opmath(cos, WIDE)).to(dtype)
        b = (_opmath(rotated, WIDE) * _opmath(sin, WIDE)).to(dtype)
        return (_opmath(a, WIDE) + _opmath(b, WIDE)).to(dtype)

    @triton.jit
    def _rotated_row(x_base, cos_ptr, sin_ptr, row, head_dim, WIDE: tl.constexpr, BLOCK_D: tl.constexpr):  # type: ignore[no-untyped-def]
        """RoPE of the head row at ``x_base`` with the cos/sin of ``row``, in the row's dtype."""
        d = tl.arange(0, BLOCK_D)
        dmask = d < head_dim
        half = head_dim // 2
        x = tl.load(x_base + d, mask=dmask, other=0.0)
        x_rot = tl.load(x_base + (d + half) % head_dim, mask=dmask, other=0.0)
        cos = tl.load(cos_ptr + row * head_dim + d, mask=dmask, other=0.0)
        sin = tl.load(sin_ptr + row * head_dim + d, mask=dmask, other=0.0)
        return _rope(x, x_rot, cos, sin, d, half, WIDE)

    @triton.jit
    def _add_rms_norm_kernel(  # type: ignore[no-untyped-def]
        x_ptr,
        delta_ptr,
        weight_ptr,
        sum_ptr,
        out_ptr,
        hidden,
        inv_hidden,
        eps,
        x_stride,
        delta_stride,
        HAS_DELTA: tl.constexpr,
        WIDE: tl.constexpr,
        BLOCK: tl.constexpr,
        PDL: tl.constexpr,
    ):
        _await_inputs(PDL)
        row = tl.program_id(0).to(tl.int64)
        offs = tl.arange(0, BLOCK)
        mask = offs < hidden
        x = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=0.0)
        dtype = x.dtype
        if HAS_DELTA:
            delta = tl.load(delta_ptr + row * delta_stride + offs, mask=mask, other=0.0)
            x = (_opmath(x, WIDE) + _opmath(delta, WIDE)).to(dtype)
            tl.store(sum_ptr + row * hidden + offs, x, mask=mask)
        xf = x.to(tl.float32)
        variance = tl.sum(xf * xf, axis=0) * inv_hidden
        normed = (xf * _rsqrt(variance + eps)).to(dtype)
        weight = tl.load(weight_ptr + offs, mask=mask, other=0.0)
        tl.store(out_ptr + row * hidden + offs, (_opmath(weight, WIDE) * _opmath(normed, WIDE)).to(dtype), mask=mask)

    @triton.jit
    def _rope_write_kernel(  # type: ignore[no-untyped-def]
        k_ptr,
        v_ptr,
        cos_ptr,
        sin_ptr,
        slot_ptr,
        kc_ptr,
        vc_ptr,
        k_row,
        k_head,
        v_row,
        v_head,
        kv_heads,
        head_dim,
        WIDE: tl.constexpr,
        BLOCK_D: tl.constexpr,
        PDL: tl.constexpr,
    ):
        _await_inputs(PDL)
        row = tl.program_id(0).to(tl.int64)
        head = tl.program_id(1).to(tl.int64)
        slot = tl.load(slot_ptr + row)
        if slot >= 0:
            d = tl.arange(0, BLOCK_D)
            dmask = d < head_dim
            k = _rotated_row(k_ptr + row * k_row + head * k_head, cos_ptr, sin_ptr, row, head_dim, WIDE, BLOCK_D)
            target = (slot * kv_heads + head) * head_dim + d
            tl.store(kc_ptr + target, k, mask=dmask)
            tl.store(vc_ptr + target, tl.load(v_ptr + row * v_row + head * v_head + d, mask=dmask), mask=dmask)

    @triton.jit
    def _attention_split_kernel(  # type: ignore[no-untyped-def]
        q_ptr,
        cos_ptr,
        sin_ptr,
        pos_ptr,
        real_ptr,
        context_ptr,
        kc_ptr,
        vc_ptr,
        m_ptr,
        denom_ptr,
        acc_ptr,
        q_row,
        q_head,
        context,
        kv_heads,
        head_dim,
        scale,
        splits,
        WIDE: tl.constexpr,
        BLOCK_D: tl.constexpr,
        BLOCK_N: tl.constexpr,
        PER_SPLIT: tl.constexpr,
        GROUP: tl.constexpr,
        BLOCK_G: tl.constexpr,
        PDL: tl.constexpr,
    ):
        """Program (row, KV head, split): keys [split·PER_SPLIT, (split+1)·PER_SPLIT) ∩ [0, context)
        of the KV head, for each of its GROUP query heads: running max m, denominator Σ exp(s − m),
        Σ p·v. Each key tile is read once for the whole group (GQA); every head's arithmetic is the
        one-head kernel's, in the same order. Key index c is allowed iff c ≤ positions[row] and the
        row is real (``allowed_keys``)."""
        _await_inputs(PDL)
        row = tl.program_id(0).to(tl.int64)
        kvh = tl.program_id(1).to(tl.int64)
        split = tl.program_id(2).to(tl.int64)
        d = tl.arange(0, BLOCK_D)
        dmask = d < head_dim
        g = tl.arange(0, BLOCK_G)
        compute = tl.float64 if WIDE else tl.float32
        last = tl.where(tl.load(real_ptr + row) != 0, tl.load(pos_ptr + row), -1)
        m = tl.full((BLOCK_G,), -float("inf"), compute)
        denom = tl.zeros((BLOCK_G,), compute)
        acc = tl.zeros((BLOCK_G, BLOCK_D), compute)
        start = split * PER_SPLIT
        for offset in tl.static_range(0, PER_SPLIT, BLOCK_N):
            c = start + offset + tl.arange(0, BLOCK_N)
            ok = (c <= last) & (c < context)
            slot = tl.load(context_ptr + row * context + c, mask=ok, other=0)
            kv_offs = (slot[:, None] * kv_heads + kvh) * head_dim + d[None, :]
            kvmask = ok[:, None] & dmask[None, :]
            k = _opmath(tl.load(kc_ptr + kv_offs, mask=kvmask, other=0.0), WIDE)
            v = _opmath(tl.load(vc_ptr + kv_offs, mask=kvmask, other=0.0), WIDE)
            for h in tl.static_range(GROUP):
                head = kvh * GROUP + h
                q = _rotated_row(q_ptr + row * q_row + head * q_head, cos_ptr, sin_ptr, row, head_dim, WIDE, BLOCK_D)
                q = _opmath(q, WIDE)
                mine = g == h
                m_h = tl.sum(tl.where(mine, m, 0.0), axis=0)  # x + 0 is x: exact
                denom_h = tl.sum(tl.where(mine, denom, 0.0), axis=0)
                acc_h = tl.sum(tl.where(mine[:, None], acc, 0.0), axis=0)
                scores = tl.where(ok, tl.sum(q[None, :] * k, axis=1) * scale, -float("inf"))
                new_m = tl.maximum(m_h, tl.max(scores, axis=0))
                shift = tl.where(new_m == -float("inf"), 0.0, new_m)
                alpha = _exp(m_h - shift)
                p = _exp(scores - shift)
                denom = tl.where(mine, denom_h * alpha + tl.sum(p, axis=0), denom)
                acc = tl.where(mine[:, None], (acc_h * alpha + tl.sum(p[:, None] * v, axis=0))[None, :], acc)
                m = tl.where(mine, new_m, m)
        out = (row * kv_heads * GROUP + kvh * GROUP + g) * splits + split
        gmask = g < GROUP
        tl.store(m_ptr + out, m, mask=gmask)
        tl.store(denom_ptr + out, denom, mask=gmask)
        tl.store(acc_ptr + out[:, None] * head_dim + d[None, :], acc, mask=gmask[:, None] & dmask[None, :])

    @triton.jit
    def _split_dot(p, v):  # type: ignore[no-untyped-def]
        """p·v for float32 p and bfloat16 v on tensor cores, to float32 accuracy: p = p₁ + p₂ + p₃
        in bfloat16 parts (each the rounding of what the earlier parts leave, so the rest is below
        2⁻²⁴·p), each product exact in the float32 accumulator."""
        p1 = p.to(v.dtype)
        rest = p - p1.to(tl.float32)
        p2 = rest.to(v.dtype)
        p3 = (rest - p2.to(tl.float32)).to(v.dtype)
        return tl.dot(p3, v, tl.dot(p2, v, tl.dot(p1, v)))

    @triton.jit
    def _attention_mma_kernel(  # type: ignore[no-untyped-def]
        q_ptr,
        cos_ptr,
        sin_ptr,
        pos_ptr,
        real_ptr,
        context_ptr,
        kc_ptr,
        vc_ptr,
        m_ptr,
        denom_ptr,
        acc_ptr,
        out_ptr,
        q_row,
        q_head,
        context,
        kv_heads,
        head_dim,
        scale,
        splits,
        per_split,
        GROUP: tl.constexpr,
        BLOCK_G: tl.constexpr,
        BLOCK_D: tl.constexpr,
        BLOCK_N: tl.constexpr,
        DIRECT: tl.constexpr,
        PDL: tl.constexpr,
    ):
        """Program (row, KV head, split), bfloat16 caches: the split kernel's partials for the
        GROUP query heads of a KV head (rows of a tensor-core tile, padded to BLOCK_G ≥ 16), keys
        [split·per_split, (split+1)·per_split) ∩ [0, positions[row]] ∩ [0, context). q·k is one
        bfloat16 product per key (exact in float32), p·v is ``_split_dot``: the sums run in another
        order, as in the split kernel. ``DIRECT`` (one split): the output itself, as the combine
        kernel computes it from a single split."""
        _await_inputs(PDL)
        row = tl.program_id(0).to(tl.int64)
        kvh = tl.program_id(1).to(tl.int64)
        split = tl.program_id(2).to(tl.int64)
        d = tl.arange(0, BLOCK_D)
        dmask = d < head_dim
        g = tl.arange(0, BLOCK_G)
        gmask = g < GROUP
        heads = kvh * GROUP + g
        half = head_dim // 2
        q_base = q_ptr + row * q_row + heads[:, None] * q_head
        q_mask = gmask[:, None] & dmask[None, :]
        x = tl.load(q_base + d[None, :], mask=q_mask, other=0.0)
        x_rot = tl.load(q_base + ((d + half) % head_dim)[None, :], mask=q_mask, other=0.0)
        cos = tl.load(cos_ptr + row * head_dim + d, mask=dmask, other=0.0)
        sin = tl.load(sin_ptr + row * head_dim + d, mask=dmask, other=0.0)
        q = _rope(x, x_rot, cos[None, :], sin[None, :], d[None, :], half, False)
        real = tl.load(real_ptr + row) != 0
        last = tl.where(real, tl.load(pos_ptr + row), -1)
        m = tl.full((BLOCK_G,), -float("inf"), tl.float32)
        denom = tl.zeros((BLOCK_G,), tl.float32)
        acc = tl.zeros((BLOCK_G, BLOCK_D), tl.float32)
        lo = split * per_split
        hi = tl.minimum(tl.minimum(lo + per_split, last + 1), context)
        for start in range(lo, hi, BLOCK_N):
            c = start + tl.arange(0, BLOCK_N)
            ok = c < hi
            slot = tl.load(context_ptr + row * context + c, mask=ok, other=0)
            kv_offs = (slot[:, None] * kv_heads + kvh) * head_dim + d[None, :]
            kv_mask = ok[:, None] & dmask[None, :]
            k = tl.load(kc_ptr + kv_offs, mask=kv_mask, other=0.0)
            v = tl.load(vc_ptr + kv_offs, mask=kv_mask, other=0.0)
            scores = tl.where(ok[None, :], tl.dot(q, tl.trans(k)) * scale, -float("inf"))
            new_m = tl.maximum(m, tl.max(scores, axis=1))
            shift = tl.where(new_m == -float("inf"), 0.0, new_m)
            alpha = _exp(m - shift)
            p = _exp(scores - shift[:, None])
            denom = denom * alpha + tl.sum(p, axis=1)
            acc = acc * alpha[:, None] + _split_dot(p, v)
            m = new_m
        if DIRECT:  # the combine kernel's arithmetic over one split
            shift = tl.where(m == -float("inf"), 0.0, m)
            weight = _exp(m - shift)
            safe = tl.where(real, denom * weight, 1.0)
            o = tl.where(real, _divide(acc * weight[:, None], safe[:, None], False), 0.0)
            target = (row * kv_heads * GROUP + heads) * head_dim
            tl.store(out_ptr + target[:, None] + d[None, :], o.to(out_ptr.dtype.element_ty), mask=q_mask)
        else:
            out = (row * kv_heads * GROUP + heads) * splits + split
            tl.store(m_ptr + out, m, mask=gmask)
            tl.store(denom_ptr + out, denom, mask=gmask)
            tl.store(acc_ptr + out[:, None] * head_dim + d[None, :], acc, mask=q_mask)

    @triton.jit
    def _attention_combine_kernel(  # type: ignore[no-untyped-def]
        m_ptr,
        denom_ptr,
        acc_ptr,
        real_ptr,
        out_ptr,
        q_heads,
        head_dim,
        splits,
        WIDE: tl.constexpr,
        BLOCK_S: tl.constexpr,
        BLOCK_D: tl.constexpr,
        PDL: tl.constexpr,
    ):
        """Program (row, query head): merge the splits; pad rows (``real`` false) give zeros."""
        _await_inputs(PDL)
        row = tl.program_id(0).to(tl.int64)
        head = tl.program_id(1).to(tl.int64)
        s = tl.arange(0, BLOCK_S)
        d = tl.arange(0, BLOCK_D)
        smask = s < splits
        dmask = d < head_dim
        base = (row * q_heads + head) * splits
        m = tl.load(m_ptr + base + s, mask=smask, other=-float("inf"))
        denom = tl.load(denom_ptr + base + s, mask=smask, other=0.0)
        acc = tl.load(
            acc_ptr + (base + s)[:, None] * head_dim + d[None, :], mask=smask[:, None] & dmask[None, :], other=0.0
        )
        top = tl.max(m, axis=0)
        shift = tl.where(top == -float("inf"), 0.0, top)
        weight = _exp(m - shift)
        total = tl.sum(denom * weight, axis=0)
        real = tl.load(real_ptr + row) != 0
        safe = tl.where(real, total, 1.0)
        o = _divide(tl.sum(acc * weight[:, None], axis=0), safe, WIDE)
        o = tl.where(real, o, 0.0)
        tl.store(out_ptr + (row * q_heads + head) * head_dim + d, o.to(out_ptr.dtype.element_ty), mask=dmask)

    @triton.jit
    def _silu_mul_kernel(  # type: ignore[no-untyped-def]
        gate_up_ptr, out_ptr, inter, stride, WIDE: tl.constexpr, BLOCK: tl.constexpr, PDL: tl.constexpr
    ):
        _await_inputs(PDL)
        row = tl.program_id(0).to(tl.int64)
        offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < inter
        gate = tl.load(gate_up_ptr + row * stride + offs, mask=mask, other=0.0)
        up = tl.load(gate_up_ptr + row * stride + inter + offs, mask=mask, other=0.0)
        tl.store(out_ptr + row * inter + offs, _silu_times(gate, up, WIDE), mask=mask)

    @triton.jit
    def _silu_times(gate, up, WIDE: tl.constexpr):  # type: ignore[no-untyped-def]
        """silu(gate) · up in gate's dtype, rounded as the reference: silu first, then the product."""
        dtype = gate.dtype
        g = _opmath(gate, WIDE)
        silu = _divide(g, 1.0 + _exp(-g), WIDE).to(dtype)
        return (_opmath(silu, WIDE) * _opmath(up, WIDE)).to(dtype)

    @triton.jit
    def _stream_rows(  # type: ignore[no-untyped-def]
        x_ptr,
        w_rows,
        second,
        n_mask,
        rows,
        k_in,
        x_stride,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr,
        TWO: tl.constexpr,
    ):
        """(x·W[n]ᵀ, x·W[n + second]ᵀ) in float32 for at most BLOCK_M rows of x, where ``w_rows``
        points at the BLOCK_N weight rows n (``n_mask`` marks the real ones) and ``second`` is an
        element offset to a second group of rows (read only when ``TWO``; otherwise the second
        product is zero): one tensor-core product per BLOCK_K slice of the rows, read once, in order.
        The per-output K order depends only on BLOCK_K, so every caller gets ``linear``'s bits."""
        m = tl.arange(0, BLOCK_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        acc_two = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for k0 in range(0, k_in, BLOCK_K):
            k = k0 + tl.arange(0, BLOCK_K)
            x_mask = (m[:, None] < rows) & (k[None, :] < k_in)
            x = tl.load(x_ptr + m[:, None] * x_stride + k[None, :], mask=x_mask, other=0.0)
            w_mask = n_mask[:, None] & (k[None, :] < k_in)
            acc = tl.dot(x, tl.trans(tl.load(w_rows + k[None, :], mask=w_mask, other=0.0)), acc)
            if TWO:
                two = tl.load(w_rows + second + k[None, :], mask=w_mask, other=0.0)
                acc_two = tl.dot(x, tl.trans(two), acc_two)
        return acc, acc_two

    @triton.jit
    def _skinny_linear_kernel(  # type: ignore[no-untyped-def]
        x_ptr,
        w_ptr,
        y_ptr,
        rows,
        n_out,
        k_in,
        x_stride,
        up_offset,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr,
        GATED: tl.constexpr,
        PDL: tl.constexpr,
    ):
        """Program n: y[:, n·BLOCK_N : (n+1)·BLOCK_N] = x·Wᵀ (``_stream_rows``), one rounding to
        y's dtype. ``GATED``: W is [gate; up] (2·n_out rows, the up rows ``up_offset`` elements on)
        and y is ``_silu_times`` of the two products, each rounded first (``silu_mul`` of
        ``linear``'s output: the same K order per output, so the same bits)."""
        _await_inputs(PDL)
        n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        m = tl.arange(0, BLOCK_M)
        acc, acc_up = _stream_rows(
            x_ptr,
            w_ptr + n[:, None].to(tl.int64) * k_in,
            up_offset,
            n < n_out,
            rows,
            k_in,
            x_stride,
            BLOCK_M,
            BLOCK_N,
            BLOCK_K,
            GATED,
        )
        y = acc.to(y_ptr.dtype.element_ty)
        if GATED:
            y = _silu_times(y, acc_up.to(y_ptr.dtype.element_ty), False)
        tl.store(y_ptr + m[:, None] * n_out + n[None, :], y, mask=(m[:, None] < rows) & (n[None, :] < n_out))

    @triton.jit
    def _qkv_write_kernel(  # type: ignore[no-untyped-def]
        x_ptr,
        w_ptr,
        y_ptr,
        cos_ptr,
        sin_ptr,
        slot_ptr,
        kc_ptr,
        vc_ptr,
        rows,
        n_out,
        k_in,
        x_stride,
        half_offset,
        q_heads,
        kv_heads,
        HEAD_DIM: tl.constexpr,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
        BLOCK_K: tl.constexpr,
        PDL: tl.constexpr,
    ):
        """``linear``'s qkv = x·Wᵀ and ``rope_write_cache``'s cache write, in one pass over W. Program
        (head, part) computes columns d and d + D/2 of the head for d in part·BLOCK_N + [0, BLOCK_N)
        (``_stream_rows`` with two row groups), stores them to qkv and, for a key or value head,
        writes (RoPE(k), v) of each row whose slot is ≥ 0 to the cache: the same bf16 products and
        the same ``_rope`` arithmetic on them as the two separate ops, so the same bits."""
        _await_inputs(PDL)
        half: tl.constexpr = HEAD_DIM // 2
        parts: tl.constexpr = half // BLOCK_N
        head = tl.program_id(0) // parts
        d = (tl.program_id(0) % parts) * BLOCK_N + tl.arange(0, BLOCK_N)
        n = head * HEAD_DIM + d
        m = tl.arange(0, BLOCK_M)
        acc_lo, acc_hi = _stream_rows(
            x_ptr,
            w_ptr + n[:, None].to(tl.int64) * k_in,
            half_offset,
            n < n_out,
            rows,
            k_in,
            x_stride,
            BLOCK_M,
            BLOCK_N,
            BLOCK_K,
            True,
        )
        lo = acc_lo.to(y_ptr.dtype.element_ty)
        hi = acc_hi.to(y_ptr.dtype.element_ty)
        real = m[:, None] < rows
        out = y_ptr + m[:, None] * n_out + n[None, :]
        tl.store(out, lo, mask=real)
        tl.store(out + half, hi, mask=real)
        if head >= q_heads:
            slot = tl.load(slot_ptr + m, mask=m < rows, other=-1)
            written = real & (slot[:, None] >= 0)
            kv = (head - q_heads) % kv_heads
            target = (slot[:, None] * kv_heads + kv) * HEAD_DIM + d[None, :]
            if head < q_heads + kv_heads:
                table = m[:, None] * HEAD_DIM + d[None, :]
                cos_lo = tl.load(cos_ptr + table, mask=real, other=0.0)
                sin_lo = tl.load(sin_ptr + table, mask=real, other=0.0)
                cos_hi = tl.load(cos_ptr + table + half, mask=real, other=0.0)
                sin_hi = tl.load(sin_ptr + table + half, mask=real, other=0.0)
                tl.store(kc_ptr + target, _rope(lo, hi, cos_lo, sin_lo, d[None, :], half, False), mask=written)
                tl.store(
                    kc_ptr + target + half, _rope(hi, lo, cos_hi, sin_hi, d[None, :] + half, half, False), mask=written
                )
            else:
                tl.store(vc_ptr + target, lo, mask=written)
                tl.store(vc_ptr + target + half, hi, mask=written)


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
    gap. Whole-step graph replays of the Llama-3-8B decode (bf16, one H200, 2026-12-04, separate
    processes, median of three medians): B = 1 4.323 / 4.326 / 4.318 ms without, 4.269 ms with;
    B = 8 4.790 / 4.794 / 4.789 against 4.739; a 1 + 15-row verify 4.952 / 4.934 / 4.932 against
    4.874; the logits bit for bit equal. Triggering the successor at each kernel's start
    (``gdc_launch_dependents`` after the wait) was slower: 4.756, 5.203 and 5.408 ms; adding an
    L2 prefetch of each program's first 4 or 8 KiB of weight rows before the wait made B = 1
    5.953 and 7.517 ms."""
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
    group = q_heads // kv_heads
    splits = triton.cdiv(context, per_split)
    compute = torch.float64 if _wide(q) else torch.float32
    m = torch.empty((rows, q_heads, splits), dtype=compute, device=q.device)
    denom = torch.empty_like(m)
    acc = torch.empty((rows, q_heads, splits, head_dim), dtype=compute, device=q.device)
    block_d = triton.next_power_of_2(head_dim)
    out = torch.empty((rows, q_heads, head_dim), dtype=q.dtype, device=q.device)
    if mma:
        _attention_mma_kernel[(rows, kv_heads, splits)](
            q,
            cos,
            sin,
            positions,
            real,
            context_slots,
            key_cache,
            value_cache,
            m,
            denom,
            acc,
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
            BLOCK_D=block_d,
            BLOCK_N=block_n,
            DIRECT=splits == 1,
            num_warps=warps,
            enable_fp_fusion=False,
            **_pdl(q),
        )
        if splits == 1:
            return out
    else:
        _attention_split_kernel[(rows, kv_heads, splits)](
            q,
            cos,
            sin,
            positions,
            real,
            context_slots,
            key_cache,
            value_cache,
            m,
            denom,
            acc,
            q.stride(0),
            q.stride(1),
            context,
            kv_heads,
            head_dim,
            head_dim**-0.5,
            splits,
            WIDE=_wide(q),
            BLOCK_D=block_d,
            BLOCK_N=block_n,
            PER_SPLIT=per_split,
            GROUP=group,
            BLOCK_G=triton.next_power_of_2(group),
            num_warps=warps,
            enable_fp_fusion=False,
            **_pdl(q),
        )
    _attention_combine_kernel[(rows, q_heads)](
        m,
        denom,
        acc,
        real,
        out,
        q_heads,
        head_dim,
        splits,
        WIDE=_wide(q),
        BLOCK_S=triton.next_power_of_2(splits),
        BLOCK_D=block_d,
        enable_fp_fusion=False,
        **_pdl(q),
    )
    return out


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
    """(BLOCK_N, BLOCK_K, pipeline stages) of ``_skinny_linear_kernel``, from whole-step graph replays
    of the Llama-3-8B decode on one H200 (session of 2026-12-04, ``BLOCK_K`` 256 and 4 warps
    throughout): 5 stages for outputs up to 4096 wide (o and down: B = 1 step 4.540 ms against 4.597
    with 4), 3 stages from 16,384 wide (gate_up: 4.519), 4 between (qkv: 128-wide K slices with 5
    stages gave 4.614). All three together: 4.495 ms at B = 1, 4.986 at B = 8 (5.100 before); cuBLAS
    4.646 and 4.997. The 10× slower step of the sixth session of 2026-12-03 is therefore not these
    settings; it also had SiLU·up fused into the down projection's loads (recomputed for all 16
    tile rows in each of its 128 programs) and ``enable_fp_fusion=False``, not separated since."""
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
