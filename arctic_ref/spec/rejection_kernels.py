"""The ``@triton.jit`` kernels of the fused GPU path of ``rejection_sample``; launched, with their
grids and buffers, by ``arctic_ref.spec.rejection_triton``, whose docstring describes the launches.

"Last to finish" is an arrival counter per row or request (``_last_to_arrive``): a barrier, then an
acquire-release atomic increment; the last arrival resets the counter to zero for the next launch
and reads the others' partials through L2.

Maxima and argmaxes keep a best per lane and reduce once (exact, first index on ties); a greedy
row's maximum is NaN if the row holds a NaN, as torch's (``tl.max`` alone skips NaN). Divisions are
IEEE round-to-nearest (``div_rn``) and ``exp`` is libdevice's, as torch's CUDA kernels.
"""

from typing import Final

try:
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice

    from arctic_ref.spec.torch_philox import exponential_of_word, philox_block, uniform_from_state

    TRITON_AVAILABLE: Final = True
except ImportError:  # pragma: no cover - CPU-only installs
    TRITON_AVAILABLE = False  # type: ignore[misc]

if TRITON_AVAILABLE:

    @triton.jit
    def _div(a, b):  # type: ignore[no-untyped-def]
        return tl.math.div_rn(a, b)

    @triton.jit
    def _exp(x):  # type: ignore[no-untyped-def]
        return libdevice.exp(x)  # accurate expf; tl.exp (ex2.approx) is 8e-6 off float64 at V = 128k

    @triton.jit
    def _max_with_nan(x):  # type: ignore[no-untyped-def]
        """Maximum of a block, NaN if any element is NaN (``tl.max`` alone skips NaN, as PTX's max)."""
        return tl.where(tl.max((x != x).to(tl.int32), axis=0) > 0, float("nan"), tl.max(x, axis=0))

    @triton.jit
    def _merged(part_m_ptr, part_s_ptr, part_i_ptr, row, nchunks, CHUNKS: tl.constexpr):  # type: ignore[no-untyped-def]
        """A row's chunk partials merged: (m = max, s = Σ s_c·exp(m_c − m), first index of the max);
        for a greedy row m is the raw maximum (NaN if the row holds a NaN, as torch's max) and the
        index its first position."""
        parts = tl.arange(0, CHUNKS)
        mask = parts < nchunks
        slot = row * CHUNKS + parts
        # through L2 (.cg): in the fused path other programs of this launch wrote them
        a = tl.load(part_m_ptr + slot, mask=mask, other=-float("inf"), cache_modifier=".cg")
        b = tl.load(part_s_ptr + slot, mask=mask, other=0.0, cache_modifier=".cg")
        i = tl.load(part_i_ptr + slot, mask=mask, other=2147483647, cache_modifier=".cg")
        m = _max_with_nan(a)
        shift = tl.where(m == -float("inf"), 0.0, m)  # a row of -inf only: no NaN
        s = tl.sum(b * _exp(a - shift), axis=0)
        return m, s, tl.min(tl.where(a == m, i, 2147483647), axis=0)

    @triton.jit
    def _row_stats_kernel(  # type: ignore[no-untyped-def]
        logits_ptr,
        temp_ptr,
        draft_ptr,
        part_m_ptr,
        part_s_ptr,
        part_i_ptr,
        m_ptr,
        s_ptr,
        pd_ptr,
        stride,
        nchunks,
        CHUNKS: tl.constexpr,
    ):
        row = tl.program_id(0)
        tau = tl.load(temp_ptr + row)
        m, s, _ = _merged(part_m_ptr, part_s_ptr, part_i_ptr, row, nchunks, CHUNKS)
        tl.store(m_ptr + row, m)
        tl.store(s_ptr + row, s)
        d = tl.load(draft_ptr + row)
        x_d = _div(tl.load(logits_ptr + row.to(tl.int64) * stride + d), tau)
        tl.store(pd_ptr + row, _div(_exp(x_d - m), s))

    @triton.jit
    def _softmax_kernel(logits_ptr, temp_ptr, m_ptr, s_ptr, out_ptr, vocab, stride, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        row = tl.program_id(0)
        tau = tl.load(temp_ptr + row)
        m = tl.load(m_ptr + row)
        s = tl.load(s_ptr + row)
        base = logits_ptr + row.to(tl.int64) * stride
        out = out_ptr + row.to(tl.int64) * vocab
        for start in range(0, vocab, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < vocab
            x = _div(tl.load(base + offs, mask=mask, other=-float("inf")), tau)
            tl.store(out + offs, _div(_exp(x - m), s), mask=mask)

    @triton.jit
    def _request_rows(cu_ptr, req):  # type: ignore[no-untyped-def]
        """Request ``req``'s draft rows [begin, end) from the cumulative counts ``cu``."""
        end = tl.load(cu_ptr + req).to(tl.int64)
        begin = tl.load(cu_ptr + req - 1, mask=req > 0, other=0).to(tl.int64)
        return begin, end

    @triton.jit
    def _lane_best(best, index, value, offs, NAN_WINS: tl.constexpr):  # type: ignore[no-untyped-def]
        """Per lane, the running maximum and the first column holding it (strictly greater moves it,
        so an earlier column wins a tie). A NaN value never wins, or with ``NAN_WINS`` the lane's
        first NaN wins and stays (torch's max and argmax)."""
        better = value > best
        if NAN_WINS:
            better = better | ((value != value) & (best == best))
        return tl.where(better, value, best), tl.where(better, offs, index)

    @triton.jit
    def _first_of_max(best, index):  # type: ignore[no-untyped-def]
        """(maximum over lanes, first column holding it) from ``_lane_best``'s per-lane values:
        every lane holds its own first maximum, so the smallest such column is the first overall.
        A NaN lane makes the maximum NaN (its column is then not a maximum's)."""
        top = _max_with_nan(best)
        return top, tl.min(tl.where(best == top, index, 2147483647), axis=0)

    @triton.jit
    def _argmax_loop(base, lo, hi, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        """(max, first index of the max) over columns [lo, hi) of one row; (-inf, 0) if all are -inf,
        NaN if any is NaN.
        Each lane keeps its own first maximum (``_lane_best``); one reduction at the end."""
        best = tl.full([BLOCK], -float("inf"), tl.float32)
        index = tl.zeros([BLOCK], tl.int32)
        for start in range(lo, hi, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            raw = tl.load(base + offs, mask=offs < hi, other=-float("inf"))
            best, index = _lane_best(best, index, raw, offs, True)
        return _first_of_max(best, index)

    @triton.jit
    def _stats_loop(base, lo, hi, tau, DIVIDE: tl.constexpr, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        """Online softmax statistics of x / τ over columns [lo, hi): m = max, s = Σ exp(x/τ − m)."""
        m = -float("inf")
        s = 0.0
        for start in range(lo, hi, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            x = tl.load(base + offs, mask=offs < hi, other=-float("inf"))
            if DIVIDE:
                x = _div(x, tau)
            new_m = tl.maximum(m, tl.max(x, axis=0))
            shift = tl.where(new_m == -float("inf"), 0.0, new_m)  # a block of -inf only: no NaN
            s = s * _exp(m - shift) + tl.sum(_exp(x - shift), axis=0)
            m = new_m
        return m, s

    @triton.jit
    def _partial(  # type: ignore[no-untyped-def]
        logits_ptr,
        temp_ptr,
        req,
        row,
        part,
        part_m_ptr,
        part_s_ptr,
        part_i_ptr,
        vocab,
        stride,
        chunk,
        HAS_TEMP: tl.constexpr,
        CHUNKS: tl.constexpr,
        BLOCK: tl.constexpr,
    ):
        """Row ``row`` (of request ``req``) over vocabulary chunk ``part``: the raw maximum and its
        first index (greedy rows) or the online softmax statistics of x/τ (random rows)."""
        tau = 1.0
        if HAS_TEMP:
            tau = tl.load(temp_ptr + req)
        greedy = tau < 1e-5
        base = logits_ptr + row * stride
        lo = part * chunk
        hi = tl.minimum(lo + chunk, vocab)
        a = -float("inf")
        b = 0.0
        index = 0
        if greedy:  # greedy rows need only the raw argmax, random rows only m and s
            a, index = _argmax_loop(base, lo, hi, BLOCK)
        elif tau == 1.0:  # x / 1 == x exactly: the division is skipped, not approximated
            a, b = _stats_loop(base, lo, hi, tau, False, BLOCK)
        else:
            a, b = _stats_loop(base, lo, hi, tau, True, BLOCK)
        slot = row * CHUNKS + part
        tl.store(part_m_ptr + slot, a)
        tl.store(part_s_ptr + slot, b)
        tl.store(part_i_ptr + slot, index)

    @triton.jit
    def _partial_kernel(  # type: ignore[no-untyped-def]
        logits_ptr,
        temp_ptr,
        cu_ptr,
        part_m_ptr,
        part_s_ptr,
        part_i_ptr,
        vocab,
        stride,
        chunk,
        HAS_TEMP: tl.constexpr,
        CHUNKS: tl.constexpr,
        BLOCK: tl.constexpr,
    ):
        """Program (i, j, c): ``_partial`` of row j of request i over vocabulary chunk c."""
        req = tl.program_id(0)
        j = tl.program_id(1)
        part = tl.program_id(2)
        begin, end = _request_rows(cu_ptr, req)
        if j < end - begin:
            _partial(
                logits_ptr,
                temp_ptr,
                req,
                begin + j,
                part,
                part_m_ptr,
                part_s_ptr,
                part_i_ptr,
                vocab,
                stride,
                chunk,
                HAS_TEMP,
                CHUNKS,
                BLOCK,
            )

    @triton.jit
    def _last_to_arrive(counter_ptr, arrivals):  # type: ignore[no-untyped-def]
        """True in the last of ``arrivals`` programs to call this on ``counter_ptr``, which it
        resets to zero for the next launch. Each caller's earlier stores are visible to that last
        program's later loads through L2 (the barrier orders every thread's stores before the
        release; readers load with ``.cg``)."""
        tl.debug_barrier()
        arrived = tl.atomic_add(counter_ptr, 1, sem="acq_rel", scope="gpu")
        last = arrived == arrivals - 1
        if last:
            tl.store(counter_ptr, 0)
        return last

    @triton.jit
    def _verify_row(  # type: ignore[no-untyped-def]
        logits_ptr,
        temp_ptr,
        draft_ptr,
        u_ptr,
        q_ptr,
        part_m_ptr,
        part_s_ptr,
        part_i_ptr,
        m_ptr,
        s_ptr,
        accept_ptr,
        argmax_ptr,
        bad_ptr,
        req,
        row,
        vocab,
        stride,
        nchunks,
        state_ptr,
        stride_u,
        HAS_TEMP: tl.constexpr,
        HAS_Q: tl.constexpr,
        CHUNKS: tl.constexpr,
        DRAWN: tl.constexpr,
    ):
        """Draft row ``row`` of request ``req``: its merged chunk partials (softmax statistics or
        raw argmax), p(d) and the acceptance; ``DRAWN``: u is torch's float64 ``rand`` value ``row``,
        drawn here from the seed and offset at ``state_ptr`` (``torch_philox``)."""
        tau = 1.0
        if HAS_TEMP:
            tau = tl.load(temp_ptr + req)
        greedy = tau < 1e-5
        tau = tl.where(greedy, 1.0, tau)
        base = logits_ptr + row * stride
        m, s, raw_index = _merged(part_m_ptr, part_s_ptr, part_i_ptr, row, nchunks, CHUNKS)
        raw_best = m
        if greedy:
            m = -float("inf")
            s = 0.0
        d = tl.load(draft_ptr + row)
        d = tl.where((d >= 0) & (d < vocab), d, 0)  # in range once validated; a graph reads before it knows
        pd = _div(_exp(_div(tl.load(base + d), tau) - m), s)
        q = 1.0
        if HAS_Q:
            q = tl.load(q_ptr + row * vocab + d)
        if DRAWN:  # noqa: SIM108 - a constexpr choice between two codes
            u = uniform_from_state(state_ptr, row, stride_u)
        else:
            u = tl.load(u_ptr + row)
        ratio = _div(pd, q)
        accept = tl.where(greedy, raw_index == d, (q > 0) & (pd > 0) & (ratio.to(tl.float64) >= u))
        bad = tl.where(greedy, raw_best != raw_best, pd != pd)
        tl.store(m_ptr + row, m)
        tl.store(s_ptr + row, s)
        tl.store(accept_ptr + row, accept.to(tl.int8))
        tl.store(argmax_ptr + row, raw_index)
        tl.store(bad_ptr + row, bad.to(tl.int8))

    @triton.jit
    def _stats_verify_kernel(  # type: ignore[no-untyped-def]
        logits_ptr,
        temp_ptr,
        cu_ptr,
        draft_ptr,
        u_ptr,
        q_ptr,
        part_m_ptr,
        part_s_ptr,
        part_i_ptr,
        m_ptr,
        s_ptr,
        accept_ptr,
        argmax_ptr,
        bad_ptr,
        row_counter_ptr,
        vocab,
        stride,
        chunk,
        nchunks,
        check_cu_ptr,
        expected_ptr,
        flags_ptr,
        num_reqs,
        total,
        state_ptr,
        stride_u,
        race_row_ptr,
        accepted_ptr,
        req_counter_ptr,
        slot_from_ptr,
        slot_to_ptr,
        HAS_TEMP: tl.constexpr,
        HAS_Q: tl.constexpr,
        CHUNKS: tl.constexpr,
        BLOCK: tl.constexpr,
        CHECK: tl.constexpr,
        ALL_GREEDY: tl.constexpr,
        ALL_RANDOM: tl.constexpr,
        DRAWN: tl.constexpr,
        COPY_SLOT: tl.constexpr,
        COLS: tl.constexpr,
    ):
        """Program (i, j, c): ``_partial`` of row j of request i over chunk c; the row's last chunk
        program to finish verifies the row (``_verify_row``, partials merged in chunk order). With
        ``CHECK``, program (0, 0, 0) also writes the value rules' bits to ``flags[0]`` and zeroes the
        NaN flag ``flags[1]``, which ``_race_finish_kernel`` raises. The request's last row to be
        verified marks its accepted prefix and race row (``_mark_race_row``; program (i, 0, 0) of a
        request without rows marks it none), which the later launches read (a prefix per request,
        computed once: each race program reading the flags row by row waited out one L2 latency per
        row). ``DRAWN``: u drawn in the kernel. ``COPY_SLOT``: program (0, 0, 0)
        copies the three int64 at ``slot_from_ptr`` (pinned host memory) to ``slot_to_ptr``, for the
        later launches."""
        req = tl.program_id(0)
        j = tl.program_id(1)
        part = tl.program_id(2)
        first = (req == 0) & (j == 0) & (part == 0)
        if COPY_SLOT:  # noqa: SIM102 - a constexpr test, then a runtime one
            if first:
                three = tl.arange(0, 4)
                held = tl.load(slot_from_ptr + three, mask=three < 3)  # plain loads: see uniform_from_state
                tl.store(slot_to_ptr + three, held, mask=three < 3)
        if CHECK:  # noqa: SIM102 - a constexpr test, then a runtime one (Triton compiles them apart)
            if first:  # 128 lanes: see _check_rules on registers
                _check_rules(
                    check_cu_ptr,
                    expected_ptr,
                    draft_ptr,
                    temp_ptr,
                    flags_ptr,
                    num_reqs,
                    total,
                    vocab,
                    ALL_GREEDY,
                    ALL_RANDOM,
                    128,
                )
        begin, end = _request_rows(cu_ptr, req)
        if j < end - begin:
            row = begin + j
            _partial(
                logits_ptr,
                temp_ptr,
                req,
                row,
                part,
                part_m_ptr,
                part_s_ptr,
                part_i_ptr,
                vocab,
                stride,
                chunk,
                HAS_TEMP,
                CHUNKS,
                BLOCK,
            )
            if _last_to_arrive(row_counter_ptr + row, nchunks):
                _verify_row(
                    logits_ptr,
                    temp_ptr,
                    draft_ptr,
                    u_ptr,
                    q_ptr,
                    part_m_ptr,
                    part_s_ptr,
                    part_i_ptr,
                    m_ptr,
                    s_ptr,
                    accept_ptr,
                    argmax_ptr,
                    bad_ptr,
                    req,
                    row,
                    vocab,
                    stride,
                    nchunks,
                    state_ptr,
                    stride_u,
                    HAS_TEMP,
                    HAS_Q,
                    CHUNKS,
                    DRAWN,
                )
                if _last_to_arrive(req_counter_ptr + req, end - begin):
                    _mark_race_row(
                        accept_ptr, temp_ptr, race_row_ptr, accepted_ptr, req, begin, end - begin, HAS_TEMP, COLS
                    )
        else:
            if (j == 0) & (part == 0):
                tl.store(accepted_ptr + req, 0)
                tl.store(race_row_ptr + req, -1)

    @triton.jit
    def _accepted_prefix(accept_ptr, begin, n, COLS: tl.constexpr):  # type: ignore[no-untyped-def]
        """The length of rows [begin, begin + n)'s all-accepted prefix (n < ``COLS``): one load of the n
        flags and one reduction (a loop over the rows waited out one L2 latency per row). Read through
        L2 (.cg): other programs of the same launch wrote the flags."""
        cols = tl.arange(0, COLS)
        inside = cols < n
        flags = tl.load(accept_ptr + begin + cols, mask=inside, other=1, cache_modifier=".cg")
        return tl.min(tl.where(inside & (flags == 0), cols, n), axis=0)

    @triton.jit
    def _race_score(  # type: ignore[no-untyped-def]
        x, e, q, offs, mask, d, m, s, tau, RESIDUAL: tl.constexpr, HAS_Q: tl.constexpr, DIVIDE: tl.constexpr
    ):
        """w / E per column (-1 where w ≤ 0 or masked), w the residual (``RESIDUAL``: max(p − q, 0),
        or p with the draft token zeroed) or p itself, p = exp(x/τ − m) / s."""
        if DIVIDE:
            x = _div(x, tau)
        p = _div(_exp(x - m), s)
        w = p
        if RESIDUAL:
            if HAS_Q:  # noqa: SIM108 - a constexpr choice between two codes
                w = tl.maximum(p - q, 0.0)
            else:
                w = tl.where(offs == d, 0.0, p)
        return tl.where(mask & (w > 0), _div(w, e), -1.0)

    @triton.jit
    def _race_loop(  # type: ignore[no-untyped-def]
        base,
        e_base,
        q_base,
        lo,
        hi,
        d,
        m,
        s,
        tau,
        RESIDUAL: tl.constexpr,
        HAS_Q: tl.constexpr,
        DIVIDE: tl.constexpr,
        BLOCK: tl.constexpr,
    ):
        """(best score, first index of it) of ``_race_score`` over columns [lo, hi); -1 when no
        column has w > 0, -2 (index 0) for no columns. Each lane keeps its own best
        (``_lane_best``); one reduction at the end."""
        best = tl.full([BLOCK], -2.0, tl.float32)
        index = tl.zeros([BLOCK], tl.int32)
        for start in range(lo, hi, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < hi
            x = tl.load(base + offs, mask=mask, other=-float("inf"))
            e = tl.load(e_base + offs, mask=mask, other=1.0)
            q = 0.0
            if RESIDUAL:  # noqa: SIM102 - constexpr tests
                if HAS_Q:
                    q = tl.load(q_base + offs, mask=mask, other=0.0)
            score = _race_score(x, e, q, offs, mask, d, m, s, tau, RESIDUAL, HAS_Q, DIVIDE)
            best, index = _lane_best(best, index, score, offs, False)
        return _first_of_max(best, index)

    @triton.jit
    def _race_chunk(  # type: ignore[no-untyped-def]
        logits_ptr,
        temp_ptr,
        draft_ptr,
        q_ptr,
        e_ptr,
        m_ptr,
        s_ptr,
        race_row_ptr,
        part_score_ptr,
        part_index_ptr,
        req,
        part,
        vocab,
        stride,
        chunk,
        CHUNKS: tl.constexpr,
        HAS_TEMP: tl.constexpr,
        HAS_Q: tl.constexpr,
        BLOCK: tl.constexpr,
    ):
        """The exponential race of request ``req``'s rejected row (its ``race_row``, marked by the
        first launch; -1: none) over vocabulary chunk ``part``. Partial results: the best residual
        score and index, and the best p-score and index (the degenerate-residual fallback)."""
        row = tl.load(race_row_ptr + req).to(tl.int64)
        tau = 1.0
        if HAS_TEMP:
            tau = tl.load(temp_ptr + req)
        best = -2.0
        best_index = 0
        fallback = -2.0
        fallback_index = 0
        if row >= 0:
            m = tl.load(m_ptr + row)
            s = tl.load(s_ptr + row)
            d = tl.load(draft_ptr + row)
            base = logits_ptr + row * stride
            e_base = e_ptr + req.to(tl.int64) * vocab
            q_base = q_ptr + row * vocab
            lo = part * chunk
            hi = tl.minimum(lo + chunk, vocab)
            if tau == 1.0:  # x / 1 == x exactly
                best, best_index = _race_loop(base, e_base, q_base, lo, hi, d, m, s, tau, True, HAS_Q, False, BLOCK)
            else:
                best, best_index = _race_loop(base, e_base, q_base, lo, hi, d, m, s, tau, True, HAS_Q, True, BLOCK)
            if best < 0:  # no positive residual in this chunk: the p-race, used only if no chunk has one
                fallback, fallback_index = _race_loop(
                    base, e_base, q_base, lo, hi, d, m, s, tau, False, HAS_Q, True, BLOCK
                )
        slot = req.to(tl.int64) * CHUNKS * 2 + part * 2
        tl.store(part_score_ptr + slot, best)
        tl.store(part_index_ptr + slot, best_index)
        tl.store(part_score_ptr + slot + 1, fallback)
        tl.store(part_index_ptr + slot + 1, fallback_index)

    @triton.jit
    def _write_row(draft_ptr, out_ptr, req, begin, accepted, final, out_cols, COLS: tl.constexpr):  # type: ignore[no-untyped-def]
        """Request ``req``'s left-packed output row: its ``accepted`` drafts, ``final``, then -1."""
        cols = tl.arange(0, COLS)
        drafts = tl.load(draft_ptr + begin + cols, mask=cols < accepted, other=-1)
        row_out = out_ptr + req.to(tl.int64) * out_cols
        tl.store(row_out + cols, tl.where(cols < accepted, drafts, -1).to(tl.int32), mask=cols < out_cols)
        tl.store(row_out + accepted, final.to(tl.int32))

    @triton.jit
    def _raise_nan_flag(bad_ptr, nan_flag_ptr, begin, end, COLS: tl.constexpr):  # type: ignore[no-untyped-def]
        """The call's NaN flag raised if any of rows [begin, end) (end − begin < ``COLS``) is bad (one
        load, as ``_accepted_prefix``)."""
        cols = tl.arange(0, COLS)
        bad = tl.max(tl.load(bad_ptr + begin + cols, mask=cols < end - begin, other=0).to(tl.int32), axis=0)
        if bad > 0:
            tl.store(nan_flag_ptr, 1)  # every writer writes 1: a store suffices, also to pinned host memory

    @triton.jit
    def _finish_request(  # type: ignore[no-untyped-def]
        temp_ptr,
        draft_ptr,
        accepted_ptr,
        argmax_ptr,
        bonus_ptr,
        part_score_ptr,
        part_index_ptr,
        out_ptr,
        req,
        begin,
        end,
        out_cols,
        HAS_TEMP: tl.constexpr,
        CHUNKS: tl.constexpr,
        COLS: tl.constexpr,
    ):
        """Request ``req``'s first rejection (its accepted prefix, marked by the first launch), its
        final token (bonus, greedy argmax, or the race's winner: the first chunk's among equal
        scores) and the whole left-packed output row."""
        n = end - begin
        accepted = tl.load(accepted_ptr + req).to(tl.int64)
        tau = 1.0
        if HAS_TEMP:
            tau = tl.load(temp_ptr + req)
        final = tl.load(bonus_ptr + req).to(tl.int64)
        if accepted < n:
            if tau < 1e-5:
                final = tl.load(argmax_ptr + begin + accepted).to(tl.int64)
            else:
                parts = tl.arange(0, CHUNKS)
                base = req.to(tl.int64) * CHUNKS * 2 + parts * 2
                # through L2 (.cg): other programs of this launch wrote them
                scores = tl.load(part_score_ptr + base, cache_modifier=".cg")
                indices = tl.load(part_index_ptr + base, cache_modifier=".cg")
                p_scores = tl.load(part_score_ptr + base + 1, cache_modifier=".cg")
                p_indices = tl.load(part_index_ptr + base + 1, cache_modifier=".cg")
                best = tl.max(scores, axis=0)
                winner = tl.min(tl.where(scores == best, indices, 2147483647), axis=0)
                p_best = tl.max(p_scores, axis=0)
                p_winner = tl.min(tl.where(p_scores == p_best, p_indices, 2147483647), axis=0)
                final = tl.where(best >= 0, winner, p_winner).to(tl.int64)
        _write_row(draft_ptr, out_ptr, req, begin, accepted, final, out_cols, COLS)

    @triton.jit
    def _race_finish_kernel(  # type: ignore[no-untyped-def]
        logits_ptr,
        temp_ptr,
        cu_ptr,
        draft_ptr,
        q_ptr,
        e_ptr,
        m_ptr,
        s_ptr,
        race_row_ptr,
        accepted_ptr,
        argmax_ptr,
        bonus_ptr,
        bad_ptr,
        part_score_ptr,
        part_index_ptr,
        request_counter_ptr,
        out_ptr,
        out_slot_ptr,
        nan_flag_ptr,
        vocab,
        stride,
        chunk,
        out_cols,
        HAS_TEMP: tl.constexpr,
        HAS_Q: tl.constexpr,
        CHUNKS: tl.constexpr,
        BLOCK: tl.constexpr,
        COLS: tl.constexpr,
        HAS_NAN_FLAG: tl.constexpr,
        OUT_FROM_SLOT: tl.constexpr,
    ):
        """Program (i, c): ``_race_chunk`` of request i over chunk c; the request's last chunk
        program to finish writes its output row (``_finish_request``; with ``OUT_FROM_SLOT`` to the
        address held at ``out_slot_ptr``, read as it runs) and, with ``HAS_NAN_FLAG``,
        raises the call's NaN flag if any of the request's rows is bad."""
        req = tl.program_id(0)
        part = tl.program_id(1)
        begin, end = _request_rows(cu_ptr, req)
        _race_chunk(
            logits_ptr,
            temp_ptr,
            draft_ptr,
            q_ptr,
            e_ptr,
            m_ptr,
            s_ptr,
            race_row_ptr,
            part_score_ptr,
            part_index_ptr,
            req,
            part,
            vocab,
            stride,
            chunk,
            CHUNKS,
            HAS_TEMP,
            HAS_Q,
            BLOCK,
        )
        if _last_to_arrive(request_counter_ptr + req, CHUNKS):
            if OUT_FROM_SLOT:
                out_ptr = tl.load(out_slot_ptr).to(tl.pointer_type(tl.int32))
            _finish_request(
                temp_ptr,
                draft_ptr,
                accepted_ptr,
                argmax_ptr,
                bonus_ptr,
                part_score_ptr,
                part_index_ptr,
                out_ptr,
                req,
                begin,
                end,
                out_cols,
                HAS_TEMP,
                CHUNKS,
                COLS,
            )
            if HAS_NAN_FLAG:
                _raise_nan_flag(bad_ptr, nan_flag_ptr, begin, end, COLS)

    @triton.jit
    def _mark_race_row(  # type: ignore[no-untyped-def]
        accept_ptr, temp_ptr, race_row_ptr, accepted_ptr, req, begin, n, HAS_TEMP: tl.constexpr, COLS: tl.constexpr
    ):
        """Request ``req``'s accepted prefix and the row its race runs on (its first rejected row; -1
        if none or greedy), from the acceptances other programs of this launch wrote (read through L2)."""
        accepted = _accepted_prefix(accept_ptr, begin, n, COLS)
        tau = 1.0
        if HAS_TEMP:
            tau = tl.load(temp_ptr + req)
        tl.store(accepted_ptr + req, accepted.to(tl.int32))
        tl.store(race_row_ptr + req, tl.where((accepted < n) & (tau >= 1e-5), begin + accepted, -1).to(tl.int32))

    @triton.jit
    def _packed_best(score, cols, chosen):  # type: ignore[no-untyped-def]
        """The best (score, column) among ``chosen`` lanes with score ≥ 0 as one int64 that orders
        like the race (higher score, then lower column): score bits above, 2³¹ − 1 − column below;
        0 if there is none. One reduction (scores ≥ 0 order as their bits)."""
        packed = (score.to(tl.int32, bitcast=True).to(tl.int64) << 32) | (2147483647 - cols).to(tl.int64)
        return tl.max(tl.where(chosen & (score >= 0), packed, 0), axis=0)

    @triton.jit
    def _race_candidate(  # type: ignore[no-untyped-def]
        x, e, q, cols, live, chosen, d, m, s, tau, all_one, best_ptr, fallback_ptr, req, HAS_Q: tl.constexpr
    ):
        """One request's lanes (``chosen``) of a race segment: the best residual score published to
        ``best_ptr[req]`` (atomic max of ``_packed_best``), and, if no lane has a positive residual,
        the best p-score to ``fallback_ptr[req]`` (the degenerate-residual fallback)."""
        mask = live & chosen
        if all_one:  # x / 1 == x exactly
            packed = _packed_best(_race_score(x, e, q, cols, mask, d, m, s, tau, True, HAS_Q, False), cols, mask)
        else:
            packed = _packed_best(_race_score(x, e, q, cols, mask, d, m, s, tau, True, HAS_Q, True), cols, mask)
        if packed > 0:
            tl.atomic_max(best_ptr + req, packed, sem="relaxed")  # read by the next launch
        else:
            fallback = _packed_best(_race_score(x, e, q, cols, mask, d, m, s, tau, False, HAS_Q, True), cols, mask)
            if fallback > 0:
                tl.atomic_max(fallback_ptr + req, fallback, sem="relaxed")

    @triton.jit
    def _finish_drawn(  # type: ignore[no-untyped-def]
        temp_ptr,
        cu_ptr,
        draft_ptr,
        argmax_ptr,
        bonus_ptr,
        bad_ptr,
        accepted_ptr,
        best_ptr,
        fallback_ptr,
        out_ptr,
        nan_flag_ptr,
        req,
        out_cols,
        HAS_TEMP: tl.constexpr,
        COLS: tl.constexpr,
        HAS_NAN_FLAG: tl.constexpr,
    ):
        """Request ``req``'s final token (bonus, greedy argmax, or the race's published winner) and
        output row; its published bests reset to zero for the next launch."""
        begin, end = _request_rows(cu_ptr, req)
        accepted = tl.load(accepted_ptr + req).to(tl.int64)
        tau = 1.0
        if HAS_TEMP:
            tau = tl.load(temp_ptr + req)
        final = tl.load(bonus_ptr + req).to(tl.int64)
        if accepted < end - begin:
            if tau < 1e-5:
                final = tl.load(argmax_ptr + begin + accepted).to(tl.int64)
            else:
                best = tl.load(best_ptr + req, cache_modifier=".cg")
                packed = tl.where(best > 0, best, tl.load(fallback_ptr + req, cache_modifier=".cg"))
                final = tl.where(packed > 0, 2147483647 - (packed & 0xFFFFFFFF), 0)
        tl.store(best_ptr + req, 0)
        tl.store(fallback_ptr + req, 0)
        _write_row(draft_ptr, out_ptr, req, begin, accepted, final, out_cols, COLS)
        if HAS_NAN_FLAG:
            _raise_nan_flag(bad_ptr, nan_flag_ptr, begin, end, COLS)

    @triton.jit
    def _finish_drawn_kernel(  # type: ignore[no-untyped-def]
        temp_ptr,
        cu_ptr,
        draft_ptr,
        argmax_ptr,
        bonus_ptr,
        bad_ptr,
        accepted_ptr,
        best_ptr,
        fallback_ptr,
        out_ptr,
        out_slot_ptr,
        nan_flag_ptr,
        out_cols,
        HAS_TEMP: tl.constexpr,
        COLS: tl.constexpr,
        HAS_NAN_FLAG: tl.constexpr,
        OUT_FROM_SLOT: tl.constexpr,
    ):
        """Program i: request i's output row (``_finish_drawn``), after ``_race_draw_kernel``."""
        if OUT_FROM_SLOT:
            out_ptr = tl.load(out_slot_ptr).to(tl.pointer_type(tl.int32))
        _finish_drawn(
            temp_ptr,
            cu_ptr,
            draft_ptr,
            argmax_ptr,
            bonus_ptr,
            bad_ptr,
            accepted_ptr,
            best_ptr,
            fallback_ptr,
            out_ptr,
            nan_flag_ptr,
            tl.program_id(0),
            out_cols,
            HAS_TEMP,
            COLS,
            HAS_NAN_FLAG,
        )

    @triton.jit
    def _race_row_inputs(m_ptr, s_ptr, draft_ptr, temp_ptr, row, req, has_req, HAS_TEMP: tl.constexpr):  # type: ignore[no-untyped-def]
        """(m, s, draft, τ) of request ``req``'s race row ``row``; where ``row`` < 0 (no race) the
        neutral (0, 1, -1), and τ = 1 where ``has_req`` is false or there are no temperatures."""
        live = row >= 0
        m = tl.load(m_ptr + row, mask=live, other=0.0)
        s = tl.load(s_ptr + row, mask=live, other=1.0)
        d = tl.load(draft_ptr + row, mask=live, other=-1)
        tau = 1.0
        if HAS_TEMP:
            tau = tl.load(temp_ptr + req, mask=has_req, other=1.0)
        return m, s, d, tau

    @triton.jit
    def _race_draw_kernel(  # type: ignore[no-untyped-def]
        logits_ptr,
        temp_ptr,
        draft_ptr,
        q_ptr,
        m_ptr,
        s_ptr,
        race_row_ptr,
        best_ptr,
        fallback_ptr,
        state_ptr,
        num_reqs,
        vocab,
        stride,
        numel,
        stride_e,
        offset_e,
        HAS_TEMP: tl.constexpr,
        HAS_Q: tl.constexpr,
        BLOCK: tl.constexpr,
    ):
        """Program t: Philox thread slots [t·BLOCK, (t+1)·BLOCK) of torch's exponential draw
        (``torch_philox``), whose four words are four BLOCK-aligned segments of the [B · V]
        exponentials. Each segment meets at most two requests' rows (BLOCK ≤ V); for each that races
        (``race_row`` ≥ 0) its lanes' best score is published (``_race_candidate``, a relaxed atomic
        max); ``_finish_drawn_kernel`` reads them in the next launch."""
        per_call = stride_e // BLOCK
        call = tl.program_id(0) // per_call
        idx0 = (tl.program_id(0) - call * per_call) * BLOCK
        lanes = tl.arange(0, BLOCK)
        seed = tl.load(state_ptr)
        w0, w1, w2, w3 = philox_block(
            seed, (tl.load(state_ptr + 1) + offset_e) // 4 + call, (idx0 + lanes).to(tl.int64)
        )
        for word in tl.static_range(4):
            bits = w0 if word == 0 else w1 if word == 1 else w2 if word == 2 else w3
            li0 = (call * 4 + word).to(tl.int64) * stride_e + idx0
            if li0 < numel:
                req_a = li0.to(tl.int32) // vocab  # li0 < numel < 2³¹
                col0 = li0 - req_a.to(tl.int64) * vocab
                second = col0 + lanes >= vocab
                cols = tl.where(second, col0 + lanes - vocab, col0 + lanes).to(tl.int32)
                req_b = req_a + 1
                has_b = (req_b < num_reqs) & (col0 + BLOCK > vocab)
                row_a = tl.load(race_row_ptr + req_a)
                row_b = tl.load(race_row_ptr + req_b, mask=has_b, other=-1)
                if (row_a >= 0) | (row_b >= 0):
                    m_a, s_a, d_a, tau_a = _race_row_inputs(
                        m_ptr, s_ptr, draft_ptr, temp_ptr, row_a, req_a, req_a < num_reqs, HAS_TEMP
                    )
                    m_b, s_b, d_b, tau_b = _race_row_inputs(
                        m_ptr, s_ptr, draft_ptr, temp_ptr, row_b, req_b, has_b, HAS_TEMP
                    )
                    row = tl.where(second, row_b, row_a)
                    live = (li0 + lanes < numel) & (row >= 0)
                    x = tl.load(logits_ptr + row.to(tl.int64) * stride + cols, mask=live, other=-float("inf"))
                    q = 0.0
                    if HAS_Q:
                        q = tl.load(q_ptr + row.to(tl.int64) * vocab + cols, mask=live, other=0.0)
                    e = exponential_of_word(bits)
                    all_one = (tau_a == 1.0) & (tau_b == 1.0)
                    if row_a >= 0:
                        _race_candidate(
                            x,
                            e,
                            q,
                            cols,
                            live,
                            ~second,
                            d_a,
                            m_a,
                            s_a,
                            tau_a,
                            all_one,
                            best_ptr,
                            fallback_ptr,
                            req_a,
                            HAS_Q,
                        )
                    if row_b >= 0:
                        _race_candidate(
                            x,
                            e,
                            q,
                            cols,
                            live,
                            second,
                            d_b,
                            m_b,
                            s_b,
                            tau_b,
                            all_one,
                            best_ptr,
                            fallback_ptr,
                            req_b,
                            HAS_Q,
                        )

    @triton.jit
    def _check_rules(  # type: ignore[no-untyped-def]
        cu_ptr,
        expected_ptr,
        draft_ptr,
        temp_ptr,
        flags_ptr,
        num_reqs,
        total,
        vocab,
        ALL_GREEDY: tl.constexpr,
        ALL_RANDOM: tl.constexpr,
        BLOCK: tl.constexpr,
    ):
        """The value rules of docs/verification.md §1.2 as bits of ``flags[0]`` — 1: cu differs from the
        expected cumsum, 2: a draft id outside [0, V), 4: the greedy flags disagree with the
        temperatures, 8: a random request's temperature is not finite — and ``flags[1]`` (the NaN
        flag) zeroed.

        One program runs this, yet its width sets the registers of every statistics program (a
        kernel's registers per thread follow its largest code path), so it runs on few lanes (the
        caller passes 128)."""
        bad_cu = 0
        random = 0
        bad_temp = 0
        for start in range(0, num_reqs, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < num_reqs
            cu = tl.load(cu_ptr + offs, mask=mask, other=0).to(tl.int64)
            bad_cu += tl.sum((cu != tl.load(expected_ptr + offs, mask=mask, other=0)).to(tl.int32), axis=0)
            t = tl.load(temp_ptr + offs, mask=mask, other=0.0)
            is_random = mask & ~(t < 1e-5)
            random += tl.sum(is_random.to(tl.int32), axis=0)
            bad_temp += tl.sum((is_random & ((t != t) | (tl.abs(t) == float("inf")))).to(tl.int32), axis=0)
        bad_id = 0
        for start in range(0, total, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            d = tl.load(draft_ptr + offs, mask=offs < total, other=0)
            bad_id += tl.sum(((d < 0) | (d >= vocab)).to(tl.int32), axis=0)
        flags = tl.where(bad_cu > 0, 1, 0) + tl.where(bad_id > 0, 2, 0) + tl.where(bad_temp > 0, 8, 0)
        flags += tl.where(((random > 0) == ALL_GREEDY) | ((random == num_reqs) != ALL_RANDOM), 4, 0)
        tl.store(flags_ptr, flags)
        tl.store(flags_ptr + 1, 0)
