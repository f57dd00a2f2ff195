"""The fused GPU path of ``rejection_sample`` (Triton), for float32 logits without top-k/top-p under
the ``INTENDED`` profile; everything else falls back to the vectorised torch path.

Two passes over memory instead of a softmax materialised and re-read:

1. ``row_stats``: one read of every draft row: the online-softmax statistics m (max of x/τ) and
   s (Σ exp(x/τ − m)), and p(d) = exp(x_d/τ − m) / s for the row's draft;
2. acceptance on [T] values, the first rejection per request, then ``race``: for the one rejected
   row of each request, one more read of that logits row and of the request's E row, the residual
   and the exponential race.

Exactness: on CUDA ``compute_target_probs`` computes p with the same statistics kernel and the same
expression (``softmax_rows``), so the readable reference and this path see identical p bits; the
divisions are IEEE round-to-nearest (``div_rn``), as torch's.
"""

from typing import Final

import torch
from torch import Tensor

try:
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice

    TRITON_AVAILABLE: Final = True
except ImportError:  # pragma: no cover - CPU-only installs
    TRITON_AVAILABLE = False  # type: ignore[misc]

BLOCK: Final = 4096


if TRITON_AVAILABLE:

    @triton.jit
    def _div(a, b):  # type: ignore[no-untyped-def]
        return tl.math.div_rn(a, b)

    @triton.jit
    def _exp(x):  # type: ignore[no-untyped-def]
        return libdevice.exp(x)  # accurate expf; tl.exp (ex2.approx) is 8e-6 off float64 at V = 128k

    @triton.jit
    def _row_stats_kernel(  # type: ignore[no-untyped-def]
        logits_ptr, temp_ptr, draft_ptr, m_ptr, s_ptr, pd_ptr, vocab, stride, BLOCK: tl.constexpr
    ):
        row = tl.program_id(0)
        tau = tl.load(temp_ptr + row)
        base = logits_ptr + row.to(tl.int64) * stride
        m = -float("inf")
        s = 0.0
        for start in range(0, vocab, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            x = _div(tl.load(base + offs, mask=offs < vocab, other=-float("inf")), tau)
            new_m = tl.maximum(m, tl.max(x, axis=0))
            shift = tl.where(new_m == -float("inf"), 0.0, new_m)  # a block of -inf only: no NaN
            s = s * _exp(m - shift) + tl.sum(_exp(x - shift), axis=0)
            m = new_m
        tl.store(m_ptr + row, m)
        tl.store(s_ptr + row, s)
        d = tl.load(draft_ptr + row)
        x_d = _div(tl.load(base + d), tau)
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
    def _race_kernel(  # type: ignore[no-untyped-def]
        logits_ptr, temp_ptr, m_ptr, s_ptr, rows_ptr, draft_ptr, q_ptr, e_ptr, out_ptr, vocab, stride,
        HAS_Q: tl.constexpr, BLOCK: tl.constexpr,
    ):  # fmt: skip
        req = tl.program_id(0)
        row = tl.load(rows_ptr + req)
        if row >= 0:
            tau = tl.load(temp_ptr + row)
            m = tl.load(m_ptr + row)
            s = tl.load(s_ptr + row)
            d = tl.load(draft_ptr + row)
            base = logits_ptr + row.to(tl.int64) * stride
            e_base = e_ptr + req.to(tl.int64) * vocab
            best = -2.0
            best_index = 0
            fallback = -2.0
            fallback_index = 0
            for start in range(0, vocab, BLOCK):
                offs = start + tl.arange(0, BLOCK)
                mask = offs < vocab
                x = _div(tl.load(base + offs, mask=mask, other=-float("inf")), tau)
                p = _div(_exp(x - m), s)
                e = tl.load(e_base + offs, mask=mask, other=1.0)
                if HAS_Q:
                    q = tl.load(q_ptr + row.to(tl.int64) * vocab + offs, mask=mask, other=0.0)
                    w = tl.maximum(p - q, 0.0)
                else:
                    w = tl.where(offs == d, 0.0, p)
                score = tl.where(mask & (w > 0), _div(w, e), -1.0)
                block_best = tl.max(score, axis=0)
                block_index = tl.argmax(score, axis=0) + start
                take = block_best > best
                best_index = tl.where(take, block_index, best_index)
                best = tl.where(take, block_best, best)
                p_score = tl.where(mask & (p > 0), _div(p, e), -1.0)
                p_best = tl.max(p_score, axis=0)
                p_index = tl.argmax(p_score, axis=0) + start
                take_p = p_best > fallback
                fallback_index = tl.where(take_p, p_index, fallback_index)
                fallback = tl.where(take_p, p_best, fallback)
            # best == -1 means every residual weight was zero: sample from p itself.
            tl.store(out_ptr + req, tl.where(best >= 0, best_index, fallback_index))


def fused_supported(target_logits: Tensor, top_k: Tensor | None, top_p: Tensor | None, profile_name: str) -> bool:
    return (
        TRITON_AVAILABLE
        and target_logits.is_cuda
        and target_logits.dtype == torch.float32
        and top_k is None
        and top_p is None
        and profile_name == "intended"
    )


def row_stats(logits: Tensor, temperature: Tensor, drafts: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(m, s, p(d)) per row; ``temperature`` per row (1 for greedy rows)."""
    rows, vocab = logits.shape
    m = torch.empty(rows, dtype=torch.float32, device=logits.device)
    s = torch.empty_like(m)
    pd = torch.empty_like(m)
    if rows:
        _row_stats_kernel[(rows,)](
            logits, temperature, drafts, m, s, pd, vocab, logits.stride(0), BLOCK=BLOCK, num_warps=8
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


def race(
    logits: Tensor, temperature: Tensor, m: Tensor, s: Tensor, rows: Tensor, drafts: Tensor,
    draft_probs: Tensor | None, exponentials: Tensor,
) -> Tensor:  # fmt: skip
    """The recovered token of each request's rejected row (``rows[i]`` = −1: none)."""
    num_reqs, vocab = exponentials.shape
    out = torch.zeros(num_reqs, dtype=torch.int64, device=logits.device)
    q = draft_probs if draft_probs is not None else exponentials  # unused when HAS_Q is False
    _race_kernel[(num_reqs,)](
        logits, temperature, m, s, rows, drafts, q, exponentials, out, vocab, logits.stride(0),
        HAS_Q=draft_probs is not None, BLOCK=2 * BLOCK, num_warps=16,
    )  # fmt: skip
    return out
