"""The fused GPU path of ``rejection_sample`` (Triton), for float32 logits without top-k/top-p under
the ``INTENDED`` profile; everything else falls back to the vectorised torch path.

Two launches, about 1.25 reads of the logits instead of a softmax materialised and re-read:

1. ``_stats_verify_kernel``, per draft row and ``STATS_CHUNK`` columns, one read: the online-softmax
   statistics m (max of x/τ) and s (Σ exp(x/τ − m)) of the chunk, or its raw argmax (greedy rows);
   the row's last chunk program to finish merges the chunks in chunk order and computes
   p(d) = exp(x_d/τ − m) / s and the acceptance (``_verify_row``); the request's last row to be
   verified marks its accepted prefix and race row (``_mark_race_row``). With ``ValueChecks``,
   program (0, 0, 0) also checks the input values (``_check_rules``).
2. ``_race_finish_kernel``, per request and vocabulary chunk: the exponential race over the
   residual of the request's race row (one more read of that row and of the request's E row); the
   request's last chunk program picks the winner over chunks and writes the left-packed output row
   (``_finish_request``) and, with ``ValueChecks``, raises the NaN flag.

With ``DrawnNoise`` the kernels draw u and E themselves (``torch_philox``: torch's own values from
the default generator's seed and offset): the first launch draws each row's u; the second,
``_race_draw_kernel``, runs over Philox blocks, each of whose four words is a segment of the [B · V]
exponentials, and publishes each request's best (score, column) as one int64 with a relaxed atomic
max; a third, ``_finish_drawn_kernel``, writes the rows.

"Last to finish" is an arrival counter per row or request (``_last_to_arrive``): a barrier, then an
acquire-release atomic increment; the last arrival resets the counter to zero for the next launch
and reads the others' partials through L2.

Exactness: on CUDA ``compute_target_probs`` computes p with the same statistics kernels, the same
launch settings (``stats_config``, which fix the summation order) and the same expression
(``softmax_rows``), so the readable reference and this path see identical p bits; the divisions
are IEEE round-to-nearest (``div_rn``), as torch's. Maxima and argmaxes keep a best per lane and
reduce once (exact, first index on ties); a greedy row's maximum is NaN if the row holds a NaN, as
torch's (``tl.max`` alone skips NaN).
"""

from dataclasses import dataclass
from typing import Final

import torch
from torch import Tensor

from arctic_ref.spec.torch_philox import PhiloxDraw

try:
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice

    from arctic_ref.spec.torch_philox import exponential_of_word, philox_block, uniform_from_state

    TRITON_AVAILABLE: Final = True
except ImportError:  # pragma: no cover - CPU-only installs
    TRITON_AVAILABLE = False  # type: ignore[misc]

BLOCK: Final = 4096


def stats_config(rows: int) -> tuple[int, int]:
    """(columns per step, warps) of the statistics programs for a call of ``rows`` draft rows. The
    online softmax's sums run per step, so these settings fix the bits of m and s: the fused path
    and ``row_stats`` (the reference's softmax on CUDA) both take them from here, for the same rows.
    Per-kernel GPU times on one H200 (``benchmarks/breakdown_rejection_gpu.py``, 2026-12-04): 4 rows
    4.3 µs with 4096 × 8 against 5.3 with 2048 × 4; 32 rows 7.2 against 8.4; 128 rows 19.7 against
    27.4; 1024 rows 129.0 with 1024 × 4 against 133.4 with 2048 × 4; 4096 rows 510.5 against 531.1."""
    if rows <= 8:
        return 4096, 8
    return (2048, 4) if rows < 1024 else (1024, 4)


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
        """The value rules of verification.md §1.2 as bits of ``flags[0]`` — 1: cu differs from the
        expected cumsum, 2: a draft id outside [0, V), 4: the greedy flags disagree with the
        temperatures, 8: a random request's temperature is not finite — and ``flags[1]`` (the NaN
        flag) zeroed.

        One program runs this, yet its width slowed every statistics program: one H200, two processes
        of one session, graph replays with ``BLOCK`` = 1024 / 128 (2026-12-04): the statistics launch
        took 175.1 / 155.0 µs at 256 × 4 and 623.0 / 540.3 at 256 × 16 (6.2 / 6.0 at 1 × 4). The likely
        cause (register counts not read): a kernel's registers per thread are set by its largest code
        path, here 1,024 int64 lanes, 8 per thread at 4 warps."""
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


@dataclass(frozen=True, slots=True, kw_only=True)
class ValueChecks:
    """The value rules checked inside ``fused_kernels``' first launch (no synchronisation: the
    caller reads ``flags`` when it must). ``cu_num_draft_tokens`` is the caller's tensor, checked
    against ``expected_cu`` (the host counts' cumsum, which the kernels run on)."""

    cu_num_draft_tokens: Tensor
    all_greedy: bool
    all_random: bool
    flags: Tensor
    """int32 [2] on the device or in pinned host memory (the kernels only store to it): the value-rule
    bits (``_check_rules``), then the NaN flag (verification.md §1.2 item 5), raised by the last
    launch."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DrawnNoise:
    """Noise the kernels draw themselves, bit for bit as ``draw_noise``'s global draws from the
    default CUDA generator (``torch_philox``): no noise tensors, no torch RNG launch."""

    state: Tensor
    """int64 [2] on the device: the generator's seed (as signed 64 bits) and its offset before the
    call (a multiple of 4), read as the kernels run (a graph's copy of what the host holds)."""
    uniforms: PhiloxDraw
    """torch.rand(rows, float64)'s layout; the exponentials are drawn after its increment."""
    exponentials: PhiloxDraw
    """torch.empty(B, V).exponential_()'s layout."""

    @classmethod
    def layout(cls, state: Tensor, rows: int, num_reqs: int, vocab: int) -> "DrawnNoise":
        return cls(
            state=state,
            uniforms=PhiloxDraw.of(rows, 2, state.device),
            exponentials=PhiloxDraw.of(num_reqs * vocab, 4, state.device),
        )

    @property
    def increment(self) -> int:
        """How far a call advances the generator's offset (both draws)."""
        return self.uniforms.increment + self.exponentials.increment


def drawn_race_block(stride: int, vocab: int) -> int:
    """Philox thread slots per program of ``_race_draw_kernel``: the largest power of two up to 1024
    that divides the draw's thread stride (so a program's slots share one call) and is at most V
    (so a segment meets at most two rows)."""
    block = 1024
    while block > 1 and (stride % block or block > vocab):
        block //= 2
    return block


def _check_slot_from(slot_from: Tensor, out_slot: Tensor | None, drawn: DrawnNoise | None) -> None:
    """``fused_kernels``' rules for ``slot_from``: pinned host int64 [3], with ``out_slot`` and
    ``drawn.state`` the views [0:1] and [1:3] of one device int64 [3] (what the first launch fills)."""
    if (
        slot_from.device.type != "cpu"
        or not slot_from.is_pinned()
        or slot_from.dtype != torch.int64
        or tuple(slot_from.shape) != (3,)
    ):
        raise ValueError(
            f"slot_from: pinned host int64 [3], got {slot_from.dtype} {tuple(slot_from.shape)} on "
            f"{slot_from.device} (pinned: {slot_from.is_pinned()})"
        )
    if out_slot is None or drawn is None or drawn.state.data_ptr() != out_slot.data_ptr() + 8:
        raise ValueError(
            "slot_from needs out_slot and drawn noise whose state follows out_slot's element "
            f"(views [0:1] and [1:3] of one int64 [3]); out_slot given: {out_slot is not None}, "
            f"drawn given: {drawn is not None}"
        )


def fused_supported(target_logits: Tensor, top_k: Tensor | None, top_p: Tensor | None, profile_name: str) -> bool:
    return (
        TRITON_AVAILABLE
        and target_logits.is_cuda
        and target_logits.dtype == torch.float32
        and top_k is None
        and top_p is None
        and profile_name == "intended"
    )


STATS_CHUNK: Final = 8192
"""Vocabulary columns per statistics program. A row's softmax statistics (or raw argmax) come from
cdiv(V, 8192) programs merged in chunk order, so at V = 128k one row is read by 16 SMs, not one: a
B = 1 verification is not bound by one SM's latency. ``row_stats`` and the fused path share the
partials and the merge, so both see the same bits."""


def _stats_launch(rows: int, block: int | None, warps: int | None) -> tuple[int, int]:
    """(columns per step, warps) of the statistics programs of a ``rows``-row call: the overrides
    given, else ``stats_config``'s; columns at most ``STATS_CHUNK``."""
    default_block, default_warps = stats_config(rows)
    return min(default_block if block is None else block, STATS_CHUNK), default_warps if warps is None else warps


def _partial_buffers(rows: int, vocab: int, device: torch.device) -> tuple[Tensor, Tensor, Tensor, int, int]:
    """Uninitialised (m or max, s, index) partials for ``rows`` rows of ``vocab`` columns in
    ``STATS_CHUNK`` chunks, the chunk count, and that count padded to a power of two (a row's stride)."""
    nchunks = triton.cdiv(vocab, STATS_CHUNK)
    padded = triton.next_power_of_2(nchunks)
    part_m = torch.empty(max(rows, 1) * padded, dtype=torch.float32, device=device)
    part_i = torch.empty(max(rows, 1) * padded, dtype=torch.int64, device=device)
    return part_m, torch.empty_like(part_m), part_i, nchunks, padded


def stats_partials(
    logits: Tensor,
    temperature: Tensor | None,
    cu: Tensor,
    max_spec_len: int,
    *,
    block: int | None = None,
    warps: int | None = None,
) -> tuple[Tensor, Tensor, Tensor, int, int]:
    """``_partial_kernel`` over every row (request i's rows by ``cu``, τ per request): the partial
    (m or max, s, index) per (row, chunk) and (chunks, CHUNKS padded to a power of two). ``block`` and
    ``warps`` default to ``stats_config`` of the row count, as in ``fused_kernels``."""
    rows, vocab = logits.shape
    block, warps = _stats_launch(rows, block, warps)
    part_m, part_s, part_i, nchunks, padded = _partial_buffers(rows, vocab, logits.device)
    if rows:
        _partial_kernel[(cu.shape[0], max(max_spec_len, 1), nchunks)](
            logits,
            part_m if temperature is None else temperature,
            cu,
            part_m,
            part_s,
            part_i,
            vocab,
            logits.stride(0),
            STATS_CHUNK,
            HAS_TEMP=temperature is not None,
            CHUNKS=padded,
            BLOCK=block,
            num_warps=warps,
        )
    return part_m, part_s, part_i, nchunks, padded


def row_stats(logits: Tensor, temperature: Tensor, drafts: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(m, s, p(d)) per row; ``temperature`` per row (1 for greedy rows)."""
    rows = logits.shape[0]
    m = torch.empty(rows, dtype=torch.float32, device=logits.device)
    s = torch.empty_like(m)
    pd = torch.empty_like(m)
    if rows:
        one_per_request = torch.arange(1, rows + 1, device=logits.device)
        part_m, part_s, part_i, nchunks, padded = stats_partials(logits, temperature, one_per_request, 1)
        _row_stats_kernel[(rows,)](
            logits, temperature, drafts, part_m, part_s, part_i, m, s, pd, logits.stride(0), nchunks, CHUNKS=padded
        )
    return m, s, pd


def softmax_rows(logits: Tensor, temperature: Tensor) -> Tensor:
    """p = softmax(x/τ) with the statistics of ``row_stats`` (the CUDA form of compute_target_probs)."""
    rows, vocab = logits.shape
    zeros = torch.zeros(rows, dtype=torch.int64, device=logits.device)
    m, s, _ = row_stats(logits, temperature, zeros)
    out = torch.empty(rows, vocab, dtype=torch.float32, device=logits.device)
    if rows:
        _softmax_kernel[(rows,)](logits, temperature, m, s, out, vocab, logits.stride(0), BLOCK=BLOCK)
    return out


RACE_PROGRAMS: Final = 1024
"""Race programs aimed for: each request's race runs over ``race_chunks(num_reqs)`` vocabulary chunks."""


def race_chunks(num_reqs: int) -> int:
    """Vocabulary chunks per request's race: a power of two from 16 to 64, about ``RACE_PROGRAMS`` /
    num_reqs, so a lone request's race is read by 64 programs and a large batch keeps 16."""
    wanted = -(-RACE_PROGRAMS // max(num_reqs, 1))
    return min(64, max(16, 1 << (wanted - 1).bit_length()))


NAN_MESSAGE: Final = "NaN in a processed target row (or a NaN greedy maximum): the logits must be finite or -inf"


def fused_kernels(
    draft_token_ids: Tensor,
    cu_num_draft_tokens: Tensor,
    max_spec_len: int,
    draft_probs: Tensor | None,
    target_logits: Tensor,
    bonus_token_ids: Tensor,
    temperature: Tensor | None,
    uniforms: Tensor | None,
    exponentials: Tensor | None,
    *,
    block: int | None = None,
    warps: int | None = None,
    race_block: int = 1024,
    race_warps: int = 8,
    race_chunk_count: int | None = None,
    checks: ValueChecks | None = None,
    counters: Tensor | None = None,
    exponential_stream: torch.cuda.Stream | None = None,
    out: Tensor | None = None,
    out_slot: Tensor | None = None,
    drawn: DrawnNoise | None = None,
    race_bests: Tensor | None = None,
    slot_from: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """The whole verification in two launches on validated inputs (greedy rows by τ < 1e-5):

    1. statistics partials of every draft row over ``STATS_CHUNK`` columns each, the row verified
       by its last chunk program (``checks``: the value rules too);
    2. the race of each rejected row over ``race_chunks`` vocabulary chunks, each request's output row
       written by its last chunk program (``checks``: the NaN flag raised too).

    ``block``/``warps`` (first launch), ``race_block``/``race_warps``/``race_chunk_count`` (second; a
    power of two) override the launch settings, for ``benchmarks/breakdown_rejection_gpu.py``'s sweep.
    ``counters`` (int32, at least rows + requests, all zero; the kernels leave them zero) lets a
    caller keep them between calls, as a CUDA graph does; otherwise they are allocated.
    ``exponential_stream``: the stream ``exponentials`` are still being drawn on (``draw_from_state``'s);
    the second launch waits for it, the first overlaps the draw. ``out``: the int32 [B, K + 1]
    output to write (otherwise allocated). ``out_slot``: int64 [1] on the device holding the address
    of the tensor to write, read when the second launch runs, so each replay of a captured call can
    write a fresh tensor (the caller copies the address in first); it must hold ``out``'s address
    for a launch that is not captured. ``drawn``: the kernels draw u and E themselves (``uniforms``
    and ``exponentials`` are then None) and the second launch is ``_race_draw_kernel``, over Philox
    blocks instead of vocabulary chunks, and a third launch (``_finish_drawn_kernel``) writes the
    output rows; ``race_bests`` (int64 [2 · B], all zero; the kernels leave them zero) may be kept
    as ``counters`` are. ``slot_from``: pinned host int64 [3], the values ``out_slot`` and
    ``drawn.state`` are to hold (output address, seed, offset), which must then be the views [0:1]
    and [1:3] of one int64 [3] on the device; the first launch reads the seed and offset from there
    and copies all three to the device for the later launches, so a captured call needs no copy node
    (a graph's copy node costs host time at every replay: see ``rejection_graph``).
    Returns the output and the per-row NaN flags, unread (no sync: capturable in a CUDA graph)."""
    num_reqs, vocab = cu_num_draft_tokens.shape[0], target_logits.shape[1]
    if (drawn is None) != (uniforms is not None and exponentials is not None):
        given = {"uniforms": uniforms is not None, "exponentials": exponentials is not None, "drawn": drawn is not None}
        raise ValueError(f"pass uniforms and exponentials, or drawn noise alone; given: {given}")
    rows = draft_token_ids.shape[0]
    device = target_logits.device
    logits = target_logits.contiguous()
    m = torch.empty(max(rows, 1), dtype=torch.float32, device=device)
    s = torch.empty_like(m)
    accept = torch.empty(max(rows, 1), dtype=torch.int8, device=device)  # every row's is written
    argmax = torch.empty(max(rows, 1), dtype=torch.int64, device=device)
    bad = (torch.empty if rows else torch.zeros)(max(rows, 1), dtype=torch.int8, device=device)
    chunks = race_chunks(num_reqs) if race_chunk_count is None else race_chunk_count
    if chunks < 1 or chunks & (chunks - 1):
        raise ValueError(f"race_chunk_count must be a power of two, got {chunks}")
    out_shape = (num_reqs, max_spec_len + 1)
    if out is None:
        out = torch.empty(out_shape, dtype=torch.int32, device=device)
    elif tuple(out.shape) != out_shape or out.dtype != torch.int32 or not out.is_contiguous():
        raise ValueError(f"out: contiguous int32 {out_shape}, got {out.dtype} {tuple(out.shape)} {tuple(out.stride())}")
    if out_slot is not None and (out_slot.device != device or out_slot.dtype != torch.int64):
        raise ValueError(f"out_slot: int64 on {device}, got {out_slot.dtype} on {out_slot.device}")
    if slot_from is not None:
        _check_slot_from(slot_from, out_slot, drawn)
    temp = temperature.to(torch.float32).contiguous() if temperature is not None else m
    q = draft_probs.contiguous() if draft_probs is not None else m
    cu = cu_num_draft_tokens.contiguous()
    drafts = draft_token_ids.contiguous()
    wanted = rows + num_reqs  # per row, then per request (the chunked race's, or the drawing path's marks)
    if counters is None:
        counters = torch.zeros(wanted, dtype=torch.int32, device=device)
    elif counters.dtype != torch.int32 or counters.numel() < wanted:
        raise ValueError(
            f"counters: int32 with at least {wanted} elements, got {counters.dtype} {tuple(counters.shape)}"
        )
    has_temp, has_q = temperature is not None, draft_probs is not None
    block, warps = _stats_launch(rows, block, warps)
    part_m, part_s, part_i, nchunks, padded = _partial_buffers(rows, vocab, device)
    cols = triton.next_power_of_2(max_spec_len + 1)  # a request's rows and its output row fit
    flags = checks.flags if checks is not None else m
    race_row = torch.empty(max(num_reqs, 1), dtype=torch.int32, device=device)  # marked by the first launch
    accepted = torch.empty_like(race_row)
    marks = (race_row, accepted, counters[rows:])
    drawn_args: tuple[object, ...] = (m, 1, *marks)  # the state is unread without DRAWN
    if drawn is not None:
        state = drawn.state if slot_from is None else slot_from[1:]  # the first launch reads it there
        drawn_args = (state, drawn.uniforms.stride, *marks)
    if num_reqs:  # the marks are read later even where no request has rows
        _stats_verify_kernel[(num_reqs, max(max_spec_len, 1), nchunks)](
            logits,
            temp,
            cu,
            drafts,
            m if uniforms is None else uniforms,
            q,
            part_m,
            part_s,
            part_i,
            m,
            s,
            accept,
            argmax,
            bad,
            counters,
            vocab,
            logits.stride(0),
            STATS_CHUNK,
            nchunks,
            cu if checks is None else checks.cu_num_draft_tokens,
            cu,
            flags,
            num_reqs,
            rows,
            *drawn_args,
            m if slot_from is None else slot_from,
            m if out_slot is None else out_slot,
            HAS_TEMP=has_temp,
            HAS_Q=has_q,
            CHUNKS=padded,
            BLOCK=block,
            CHECK=checks is not None,
            ALL_GREEDY=checks is not None and checks.all_greedy,
            ALL_RANDOM=checks is not None and checks.all_random,
            DRAWN=drawn is not None,
            COPY_SLOT=slot_from is not None,
            COLS=cols,
            num_warps=warps,
        )
    if exponential_stream is not None:
        torch.cuda.current_stream(device).wait_stream(exponential_stream)
    bonus = bonus_token_ids.contiguous()
    out_from = out if out_slot is None else out_slot
    if drawn is not None:
        layout = drawn.exponentials
        slots = drawn_race_block(layout.stride, vocab)
        bests = torch.zeros(2 * num_reqs, dtype=torch.int64, device=device) if race_bests is None else race_bests
        _race_draw_kernel[(layout.stride // slots * (layout.increment // 4),)](
            logits,
            temp,
            drafts,
            q,
            m,
            s,
            race_row,
            bests,
            bests[num_reqs:],
            drawn.state,
            num_reqs,
            vocab,
            logits.stride(0),
            num_reqs * vocab,
            layout.stride,
            drawn.uniforms.increment,
            HAS_TEMP=has_temp,
            HAS_Q=has_q,
            BLOCK=slots,
            num_warps=race_warps,
        )
        _finish_drawn_kernel[(num_reqs,)](
            temp,
            cu,
            drafts,
            argmax,
            bonus,
            bad,
            accepted,
            bests,
            bests[num_reqs:],
            out,
            out_from,
            flags[1:],
            max_spec_len + 1,
            HAS_TEMP=has_temp,
            COLS=cols,
            HAS_NAN_FLAG=checks is not None,
            OUT_FROM_SLOT=out_slot is not None,
            num_warps=1,
        )
        return out, bad
    scores = torch.empty(num_reqs * chunks * 2, dtype=torch.float32, device=device)
    indices = torch.empty(num_reqs * chunks * 2, dtype=torch.int64, device=device)
    _race_finish_kernel[(num_reqs, chunks)](
        logits,
        temp,
        cu,
        drafts,
        q,
        exponentials,
        m,
        s,
        race_row,
        accepted,
        argmax,
        bonus,
        bad,
        scores,
        indices,
        counters[rows:],
        out,
        out_from,
        flags[1:],
        vocab,
        logits.stride(0),
        triton.cdiv(vocab, chunks),
        max_spec_len + 1,
        HAS_TEMP=has_temp,
        HAS_Q=has_q,
        CHUNKS=chunks,
        BLOCK=race_block,
        COLS=cols,
        HAS_NAN_FLAG=checks is not None,
        OUT_FROM_SLOT=out_slot is not None,
        num_warps=race_warps,
    )
    return out, bad
