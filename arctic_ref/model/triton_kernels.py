"""The ``@triton.jit`` kernels of ``TRITON_OPS``; launched, with their grids, buffers and checks, by
``arctic_ref.model.triton_ops``, whose docstring says what each op computes and how it rounds.

Every kernel takes the constexpr ``PDL`` and, when it is on, waits for its predecessor at its start
(``_await_inputs``): programmatic dependent launch (Hopper on). Divisions are IEEE (``div_rn``) and
``exp``/``rsqrt`` are libdevice's, as torch's CUDA kernels.
"""

from typing import Final

try:
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice
    from triton.language.extra.cuda import gdc_wait

    TRITON_AVAILABLE: Final = True
except ImportError:  # pragma: no cover - CPU-only installs
    TRITON_AVAILABLE = False  # type: ignore[misc]

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
