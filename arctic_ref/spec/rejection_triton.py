"""The fused GPU path of ``rejection_sample`` (Triton), for float32 logits without top-k/top-p under
the ``INTENDED`` profile; everything else falls back to the vectorised torch path. This module
allocates, checks and launches; the ``@triton.jit`` kernels are in ``rejection_kernels``.

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

"Last to finish" is an arrival counter per row or request (``_last_to_arrive``; see
``rejection_kernels``).

Exactness: on CUDA ``compute_target_probs`` computes p with the same statistics kernels, the same
launch settings (``stats_config``, which fix the summation order) and the same expression
(``softmax_rows``), so the readable reference and this path see identical p bits; the divisions
are IEEE round-to-nearest (``div_rn``), as torch's.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

import numpy as np
import torch
from torch import Tensor

from arctic_ref.spec.rejection_kernels import TRITON_AVAILABLE as TRITON_AVAILABLE
from arctic_ref.spec.torch_philox import PhiloxDraw

if TRITON_AVAILABLE:
    import triton

    from arctic_ref.spec.rejection_kernels import (
        _finish_drawn_kernel,
        _partial_kernel,
        _race_draw_kernel,
        _race_finish_kernel,
        _row_stats_kernel,
        _softmax_kernel,
        _stats_verify_kernel,
    )

BLOCK: Final = 4096


def stats_config(rows: int) -> tuple[int, int]:
    """(columns per step, warps) of the statistics programs for a call of ``rows`` draft rows. The
    online softmax's sums run per step, so these settings fix the bits of m and s: the fused path
    and ``row_stats`` (the reference's softmax on CUDA) both take them from here, for the same rows.
    The settings are the faster ones per row count in ``benchmarks/breakdown_rejection_gpu.py``'s
    per-kernel sweep."""
    if rows <= 8:
        return 4096, 8
    return (2048, 4) if rows < 1024 else (1024, 4)


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
    bits (``_check_rules``), then the NaN flag (docs/verification.md §1.2 item 5), raised by the last
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


DRAWN_MAX_VALUES: Final = 2**19
"""Calls of at most this many exponentials (B · V: 4 requests at V = 128,256) draw their noise in the
race (``DrawnNoise``); larger ones into noise tensors (``draw_from_state``, on a side stream beside
the statistics launch), then the chunked race. The drawing race computes Philox, a log, an exp and
two IEEE divisions for every one of the B · V columns after the statistics launch; the tensor path
draws during that launch (memory-bound, so its SMs have ALU to spare) and its race reads the
noise. In bare graph replays at V = 128,256 the drawing race is the faster up to about 4 requests,
hence the bound (the figures: ``benchmarks/results/2026-12-07-docstring-history.md``)."""

MIN_VOCAB: Final = 16
"""Smaller vocabularies draw into noise tensors (the drawing race's segments are at least 16 columns)."""

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
    num_reqs, rows, device = cu_num_draft_tokens.shape[0], draft_token_ids.shape[0], target_logits.device
    out_shape = (num_reqs, max_spec_len + 1)
    chunks = race_chunks(num_reqs) if race_chunk_count is None else race_chunk_count
    _check_noise_arguments(uniforms, exponentials, drawn)
    _check_output_arguments(chunks, out, out_shape, out_slot, slot_from, drawn, device)
    _check_counters(counters, rows + num_reqs)
    logits = target_logits.contiguous()
    results = _RowResults.empty(rows, device)
    if out is None:
        out = torch.empty(out_shape, dtype=torch.int32, device=device)
    ops = _Operands.of(logits, temperature, draft_probs, cu_num_draft_tokens, draft_token_ids, max_spec_len, results.m)
    if counters is None:  # per row, then per request (the chunked race's, or the drawing path's marks)
        counters = torch.zeros(rows + num_reqs, dtype=torch.int32, device=device)
    flags = checks.flags if checks is not None else results.m
    race_row, accepted = _launch_stats_verify(
        ops, results, counters, uniforms, flags, checks, drawn, slot_from, out_slot, block=block, warps=warps
    )
    if exponential_stream is not None:
        torch.cuda.current_stream(device).wait_stream(exponential_stream)
    target = _Target.of(bonus_token_ids, out, out_slot, flags, has_nan_flag=checks is not None)
    if drawn is not None:
        _launch_drawn_race(ops, results, race_row, accepted, drawn, target, race_bests, race_warps)
    else:
        _launch_chunked_race(
            ops, results, race_row, accepted, exponentials, counters[rows:], target, chunks, race_block, race_warps
        )
    return out, results.bad


def _check_noise_arguments(uniforms: Tensor | None, exponentials: Tensor | None, drawn: DrawnNoise | None) -> None:
    """Noise tensors (u and E) or drawn noise, never both or neither."""
    if (drawn is None) != (uniforms is not None and exponentials is not None):
        given = {"uniforms": uniforms is not None, "exponentials": exponentials is not None, "drawn": drawn is not None}
        raise ValueError(f"pass uniforms and exponentials, or drawn noise alone; given: {given}")


def _check_output_arguments(
    chunks: int,
    out: Tensor | None,
    out_shape: tuple[int, int],
    out_slot: Tensor | None,
    slot_from: Tensor | None,
    drawn: DrawnNoise | None,
    device: torch.device,
) -> None:
    """The race's chunk count a power of two; ``out`` (if given) contiguous int32 [B, K + 1];
    ``out_slot`` (if given) int64 on the logits' device; ``slot_from`` (if given) as
    ``_check_slot_from`` says."""
    if chunks < 1 or chunks & (chunks - 1):
        raise ValueError(f"race_chunk_count must be a power of two, got {chunks}")
    if out is not None and (tuple(out.shape) != out_shape or out.dtype != torch.int32 or not out.is_contiguous()):
        raise ValueError(f"out: contiguous int32 {out_shape}, got {out.dtype} {tuple(out.shape)} {tuple(out.stride())}")
    if out_slot is not None and (out_slot.device != device or out_slot.dtype != torch.int64):
        raise ValueError(f"out_slot: int64 on {device}, got {out_slot.dtype} on {out_slot.device}")
    if slot_from is not None:
        _check_slot_from(slot_from, out_slot, drawn)


def _check_counters(counters: Tensor | None, wanted: int) -> None:
    """Caller-kept arrival counters: int32, at least one per row and one per request."""
    if counters is not None and (counters.dtype != torch.int32 or counters.numel() < wanted):
        raise ValueError(
            f"counters: int32 with at least {wanted} elements, got {counters.dtype} {tuple(counters.shape)}"
        )


class _RowResults(NamedTuple):
    """What the first launch writes per draft row and the later launches read: the softmax
    statistics m and s, the acceptance, the raw argmax and the NaN flag (at least one element each,
    so a call without rows still has tensors to pass)."""

    m: Tensor
    s: Tensor
    accept: Tensor
    argmax: Tensor
    bad: Tensor
    """int8 per row: 1 where the row holds a NaN (zeros if there are no rows: the caller reads it)."""

    @classmethod
    def empty(cls, rows: int, device: torch.device) -> "_RowResults":
        m = torch.empty(max(rows, 1), dtype=torch.float32, device=device)
        return cls(
            m=m,
            s=torch.empty_like(m),
            accept=torch.empty(max(rows, 1), dtype=torch.int8, device=device),  # every row's is written
            argmax=torch.empty(max(rows, 1), dtype=torch.int64, device=device),
            bad=(torch.empty if rows else torch.zeros)(max(rows, 1), dtype=torch.int8, device=device),
        )


class _Operands(NamedTuple):
    """A call's inputs as every launch reads them: contiguous, float32 temperatures, and a stand-in
    tensor (never read then) for absent temperatures or draft probabilities."""

    logits: Tensor
    temp: Tensor
    q: Tensor
    cu: Tensor
    drafts: Tensor
    has_temp: bool
    has_q: bool
    max_spec_len: int
    cols: int
    """``max_spec_len + 1`` rounded up to a power of two: a request's rows and its output row fit."""

    @property
    def num_reqs(self) -> int:
        return self.cu.shape[0]

    @property
    def rows(self) -> int:
        return self.drafts.shape[0]

    @property
    def vocab(self) -> int:
        return self.logits.shape[1]

    @classmethod
    def of(
        cls,
        logits: Tensor,
        temperature: Tensor | None,
        draft_probs: Tensor | None,
        cu_num_draft_tokens: Tensor,
        draft_token_ids: Tensor,
        max_spec_len: int,
        stand_in: Tensor,
    ) -> "_Operands":
        return cls(
            logits=logits,
            temp=temperature.to(torch.float32).contiguous() if temperature is not None else stand_in,
            q=draft_probs.contiguous() if draft_probs is not None else stand_in,
            cu=cu_num_draft_tokens.contiguous(),
            drafts=draft_token_ids.contiguous(),
            has_temp=temperature is not None,
            has_q=draft_probs is not None,
            max_spec_len=max_spec_len,
            cols=triton.next_power_of_2(max_spec_len + 1),
        )


class _Target(NamedTuple):
    """What the last launch writes: each request's output row, to ``out`` or (``from_slot``) to the
    address held at ``out_from``, and (``has_nan_flag``) the call's NaN flag."""

    bonus: Tensor
    out: Tensor
    out_from: Tensor
    from_slot: bool
    nan_flag: Tensor
    has_nan_flag: bool

    @classmethod
    def of(cls, bonus: Tensor, out: Tensor, out_slot: Tensor | None, flags: Tensor, *, has_nan_flag: bool) -> "_Target":
        return cls(
            bonus=bonus.contiguous(),
            out=out,
            out_from=out if out_slot is None else out_slot,
            from_slot=out_slot is not None,
            nan_flag=flags[1:],
            has_nan_flag=has_nan_flag,
        )


def _launch_stats_verify(
    ops: _Operands,
    results: _RowResults,
    counters: Tensor,
    uniforms: Tensor | None,
    flags: Tensor,
    checks: ValueChecks | None,
    drawn: DrawnNoise | None,
    slot_from: Tensor | None,
    out_slot: Tensor | None,
    *,
    block: int | None,
    warps: int | None,
) -> tuple[Tensor, Tensor]:
    """The first launch (``_stats_verify_kernel``): statistics partials of every draft row, each row
    verified by its last chunk program into ``results``, each request's race row and accepted prefix
    marked (returned; every request's, also where none has rows: the later launches read them)."""
    rows, num_reqs, device = ops.rows, ops.num_reqs, ops.logits.device
    m = results.m
    block, warps = _stats_launch(rows, block, warps)
    part_m, part_s, part_i, nchunks, padded = _partial_buffers(rows, ops.vocab, device)
    race_row = torch.empty(max(num_reqs, 1), dtype=torch.int32, device=device)  # marked by the first launch
    accepted = torch.empty_like(race_row)
    marks = (race_row, accepted, counters[rows:])
    drawn_args: tuple[object, ...] = (m, 1, *marks)  # the state is unread without DRAWN
    if drawn is not None:
        state = drawn.state if slot_from is None else slot_from[1:]  # the first launch reads it there
        drawn_args = (state, drawn.uniforms.stride, *marks)
    if num_reqs:  # the marks are read later even where no request has rows
        _stats_verify_kernel[(num_reqs, max(ops.max_spec_len, 1), nchunks)](
            ops.logits,
            ops.temp,
            ops.cu,
            ops.drafts,
            m if uniforms is None else uniforms,
            ops.q,
            part_m,
            part_s,
            part_i,
            m,
            results.s,
            results.accept,
            results.argmax,
            results.bad,
            counters,
            ops.vocab,
            ops.logits.stride(0),
            STATS_CHUNK,
            nchunks,
            ops.cu if checks is None else checks.cu_num_draft_tokens,
            ops.cu,
            flags,
            num_reqs,
            rows,
            *drawn_args,
            m if slot_from is None else slot_from,
            m if out_slot is None else out_slot,
            HAS_TEMP=ops.has_temp,
            HAS_Q=ops.has_q,
            CHUNKS=padded,
            BLOCK=block,
            CHECK=checks is not None,
            ALL_GREEDY=checks is not None and checks.all_greedy,
            ALL_RANDOM=checks is not None and checks.all_random,
            DRAWN=drawn is not None,
            COPY_SLOT=slot_from is not None,
            COLS=ops.cols,
            num_warps=warps,
        )
    return race_row, accepted


def _launch_drawn_race(
    ops: _Operands,
    results: _RowResults,
    race_row: Tensor,
    accepted: Tensor,
    drawn: DrawnNoise,
    target: _Target,
    race_bests: Tensor | None,
    race_warps: int,
) -> None:
    """The race over Philox blocks (``_race_draw_kernel``: the exponentials drawn as it runs, each
    request's best published), then one program per request writing its row (``_finish_drawn_kernel``)."""
    num_reqs, vocab = ops.num_reqs, ops.vocab
    layout = drawn.exponentials
    slots = drawn_race_block(layout.stride, vocab)
    bests = torch.zeros(2 * num_reqs, dtype=torch.int64, device=ops.logits.device) if race_bests is None else race_bests
    _race_draw_kernel[(layout.stride // slots * (layout.increment // 4),)](
        ops.logits,
        ops.temp,
        ops.drafts,
        ops.q,
        results.m,
        results.s,
        race_row,
        bests,
        bests[num_reqs:],
        drawn.state,
        num_reqs,
        vocab,
        ops.logits.stride(0),
        num_reqs * vocab,
        layout.stride,
        drawn.uniforms.increment,
        HAS_TEMP=ops.has_temp,
        HAS_Q=ops.has_q,
        BLOCK=slots,
        num_warps=race_warps,
    )
    _finish_drawn_kernel[(num_reqs,)](
        ops.temp,
        ops.cu,
        ops.drafts,
        results.argmax,
        target.bonus,
        results.bad,
        accepted,
        bests,
        bests[num_reqs:],
        target.out,
        target.out_from,
        target.nan_flag,
        ops.max_spec_len + 1,
        HAS_TEMP=ops.has_temp,
        COLS=ops.cols,
        HAS_NAN_FLAG=target.has_nan_flag,
        OUT_FROM_SLOT=target.from_slot,
        num_warps=1,
    )


def _launch_chunked_race(
    ops: _Operands,
    results: _RowResults,
    race_row: Tensor,
    accepted: Tensor,
    exponentials: Tensor | None,
    request_counters: Tensor,
    target: _Target,
    chunks: int,
    race_block: int,
    race_warps: int,
) -> None:
    """The race over ``chunks`` vocabulary chunks per request on the given exponentials (a tensor
    whenever there is no drawn noise: ``_check_noise_arguments``) (``_race_finish_kernel``), each
    request's row written by its last chunk program."""
    num_reqs, device = ops.num_reqs, ops.logits.device
    scores = torch.empty(num_reqs * chunks * 2, dtype=torch.float32, device=device)
    indices = torch.empty(num_reqs * chunks * 2, dtype=torch.int64, device=device)
    _race_finish_kernel[(num_reqs, chunks)](
        ops.logits,
        ops.temp,
        ops.cu,
        ops.drafts,
        ops.q,
        exponentials,
        results.m,
        results.s,
        race_row,
        accepted,
        results.argmax,
        target.bonus,
        results.bad,
        scores,
        indices,
        request_counters,
        target.out,
        target.out_from,
        target.nan_flag,
        ops.vocab,
        ops.logits.stride(0),
        triton.cdiv(ops.vocab, chunks),
        ops.max_spec_len + 1,
        HAS_TEMP=ops.has_temp,
        HAS_Q=ops.has_q,
        CHUNKS=chunks,
        BLOCK=race_block,
        COLS=ops.cols,
        HAS_NAN_FLAG=target.has_nan_flag,
        OUT_FROM_SLOT=target.from_slot,
        num_warps=race_warps,
    )


def checked_kernels(
    draft_token_ids: Tensor,
    num_draft_tokens: Sequence[int],
    max_spec_len: int,
    cu_num_draft_tokens: Tensor,
    draft_probs: Tensor | None,
    target_logits: Tensor,
    bonus_token_ids: Tensor,
    temperature: Tensor,
    *,
    all_greedy: bool,
    all_random: bool,
    uniforms: Tensor,
    exponentials: Tensor,
) -> tuple[Tensor, int, int]:
    """``fused_kernels`` on host-validated inputs with the value rules checked inside the first launch
    (``ValueChecks``) and one synchronisation: (output, value-rule bits, NaN flag). The eager form of
    what a ``RejectionSampler`` graph runs, for calls that are not replayed.

    The kernels run on the host counts' cumsum (the caller's ``cu_num_draft_tokens`` is checked against
    it) and store the flags to pinned memory: one pinned int64 buffer carries the cumsum to the device
    in one copy and holds the flags after it. ``uniforms`` and ``exponentials`` are the noise.
    The caller raises on nonzero bits or flag (the output is then not to be handed out)."""
    num_reqs = len(num_draft_tokens)
    host = torch.empty(num_reqs + 1, dtype=torch.int64, pin_memory=True)
    values = host.numpy()
    values[:num_reqs] = np.cumsum(num_draft_tokens)
    values[num_reqs] = 0
    expected_cu = host[:num_reqs].to(target_logits.device, non_blocking=True)
    flags = host[num_reqs:].view(torch.int32)
    checks = ValueChecks(
        cu_num_draft_tokens=cu_num_draft_tokens, all_greedy=all_greedy, all_random=all_random, flags=flags
    )
    out, _ = fused_kernels(
        draft_token_ids,
        expected_cu,
        max_spec_len,
        draft_probs,
        target_logits,
        bonus_token_ids,
        temperature,
        uniforms,
        exponentials,
        checks=checks,
    )
    torch.cuda.current_stream(target_logits.device).synchronize()
    value_bits, nan = flags.tolist()
    return out, value_bits, nan
