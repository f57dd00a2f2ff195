"""``PhiloxDraw``: where torch's CUDA ``rand`` (float64) and ``exponential_`` (float32) put each value,
so a Triton kernel can draw the same values itself, bit for bit, from the default generator's seed
and offset (no noise tensor written and read back; no torch RNG node in a CUDA graph).

torch (``ATen/native/cuda/DistributionTemplates.h``, 2.x) draws ``numel`` values with a grid-stride
loop of ``grid`` blocks of 256 threads, ``grid = min(SMs · (max threads per SM / 256), ⌈numel / 256⌉)``.
Thread ``idx`` owns curand's Philox4x32-10 state ``curand_init(seed, idx, offset)``: its i-th call
returns the block Philox(key = seed, counter = (offset / 4 + i, idx)), four 32-bit words. With
``stride = 256 · grid``, value ``li`` comes from thread ``li mod stride``, call ``li div (stride ·
unroll)``, word ``(li div stride) mod unroll``:

- ``exponential_`` (float32, unroll 4): u = word · 2⁻³² + 2⁻³³ (curand_uniform), then
  E = 2⁻²⁴ if u ≥ 1 − 2⁻²⁴ else −__logf(u) (``transformation::exponential``; ATen's float ``log`` is
  the fast ``__logf`` on CUDA, which libdevice's ``fast_logf`` is);
- ``rand`` (float64, unroll 2): two words (lo, hi) make z = lo ^ (hi << 21), u = z · 2⁻⁵³ + 2⁻⁵⁴
  (curand_uniform2_double), and 1 becomes 0 (``uniform_kernel``).

Each draw advances the generator's offset by ``⌈numel / (stride · unroll)⌉ · 4``. Checked against
torch on the GPU (``gpu_tests/test_torch_philox.py``); values beyond 2³¹ take torch's 32-bit-indexing
split, which this does not model (``PhiloxDraw`` refuses them)."""

from dataclasses import dataclass
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

THREADS: Final = 256
"""torch's distribution block size (``block_size_bound``)."""
MAX_VALUES: Final = 2**31
"""Draws of at least this many values are split by torch (32-bit indexing); not modelled."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PhiloxDraw:
    """One torch draw of ``numel`` values ``unroll`` to a Philox block: its threads' stride and how far
    it advances the generator's offset."""

    numel: int
    unroll: int
    stride: int
    increment: int

    @classmethod
    def of(cls, numel: int, unroll: int, device: torch.device) -> "PhiloxDraw":
        """The layout on ``device`` (torch reads the same two properties)."""
        props = torch.cuda.get_device_properties(device)
        return cls.on_grid(numel, unroll, props.multi_processor_count, props.max_threads_per_multi_processor)

    @classmethod
    def on_grid(cls, numel: int, unroll: int, multiprocessors: int, threads_per_multiprocessor: int) -> "PhiloxDraw":
        """The layout on a GPU of ``multiprocessors`` SMs of ``threads_per_multiprocessor`` threads."""
        if not 0 <= numel < MAX_VALUES or unroll not in (2, 4):
            raise ValueError(f"a draw of 0 to 2**31 - 1 values, unroll 2 or 4; got {numel} values, unroll {unroll}")
        if multiprocessors < 1 or threads_per_multiprocessor < THREADS:
            raise ValueError(
                f"a GPU of at least 1 SM of at least {THREADS} threads, got {multiprocessors} SMs of "
                f"{threads_per_multiprocessor}"
            )
        if numel == 0:  # torch draws nothing and leaves the offset
            return cls(numel=0, unroll=unroll, stride=THREADS, increment=0)
        grid = min(multiprocessors * (threads_per_multiprocessor // THREADS), -(-numel // THREADS))
        stride = THREADS * grid
        return cls(numel=numel, unroll=unroll, stride=stride, increment=-(-numel // (stride * unroll)) * 4)


if TRITON_AVAILABLE:

    @triton.jit
    def philox_block(seed, counter, idx):  # type: ignore[no-untyped-def]
        """The four words of Philox4x32-10 at (counter, idx) under key ``seed`` (curand's layout:
        counter in words 0-1, the thread's subsequence in words 2-3)."""
        return tl.philox(
            seed, counter.to(tl.uint32), (counter >> 32).to(tl.uint32), idx.to(tl.uint32), (idx >> 32).to(tl.uint32)
        )

    @triton.jit
    def exponential_of_word(word):  # type: ignore[no-untyped-def]
        """torch's float32 Exp(1) value from one Philox word (curand_uniform, then −__logf)."""
        u = word.to(tl.float32) * 2.3283064365386963e-10 + 1.1641532182693481e-10
        return tl.where(u >= 1.0 - 5.960464477539063e-08, 5.960464477539063e-08, -libdevice.fast_logf(u))

    @triton.jit
    def uniform64_at(seed, offset, li, stride):  # type: ignore[no-untyped-def]
        """Value ``li`` of torch's float64 ``rand`` drawn at generator offset ``offset`` (a multiple
        of 4) with thread stride ``stride``."""
        li = li.to(tl.int64)
        call = li // stride
        idx = li - call * stride
        w0, w1, w2, w3 = philox_block(seed, offset // 4 + call // 2, idx)
        second = (call % 2) == 1
        lo = tl.where(second, w2, w0).to(tl.uint64)
        hi = tl.where(second, w3, w1).to(tl.uint64)
        u = (lo ^ (hi << 21)).to(tl.float64) * 1.1102230246251565e-16 + 5.551115123125783e-17
        return tl.where(u == 1.0, 0.0, u)

    @triton.jit
    def uniform_from_state(state_ptr, li, stride):  # type: ignore[no-untyped-def]
        """``uniform64_at`` with the seed and offset at ``state_ptr`` (int64 [2]). They may be pinned
        host memory that the host rewrites between launches: plain loads see each launch's values,
        as CUDA makes host writes made before a launch visible to it. Volatile loads are not needed,
        and cost a bus read per thread."""
        return uniform64_at(tl.load(state_ptr), tl.load(state_ptr + 1), li, stride)

    @triton.jit
    def _store_exponentials(e_ptr, seed, offset_e, t, numel_e, stride_e):  # type: ignore[no-untyped-def]
        """The four exponentials of thread slots ``t`` (call t div stride, thread t mod stride) of a
        draw at generator offset ``offset_e``, at their places in e (those below ``numel_e``)."""
        call = t // stride_e
        idx = t - call * stride_e
        w0, w1, w2, w3 = philox_block(seed, offset_e // 4 + call, idx)
        base = call * 4 * stride_e + idx
        tl.store(e_ptr + base, exponential_of_word(w0), mask=base < numel_e)
        tl.store(e_ptr + base + stride_e, exponential_of_word(w1), mask=base + stride_e < numel_e)
        tl.store(e_ptr + base + 2 * stride_e, exponential_of_word(w2), mask=base + 2 * stride_e < numel_e)
        tl.store(e_ptr + base + 3 * stride_e, exponential_of_word(w3), mask=base + 3 * stride_e < numel_e)

    @triton.jit  # type: ignore[untyped-decorator]
    def _draw_kernel(  # type: ignore[no-untyped-def]
        u_ptr, e_ptr, seed, offset_u, offset_e, rows, numel_e, stride_u, stride_e, BLOCK: tl.constexpr
    ):
        """Program t of the exponentials' thread slots (call t div stride, thread t mod stride):
        that block's four values; the first programs also write the uniforms."""
        t = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        _store_exponentials(e_ptr, seed, offset_e, t, numel_e, stride_e)
        tl.store(u_ptr + t, uniform64_at(seed, offset_u, t, stride_u), mask=t < rows)

    @triton.jit  # type: ignore[untyped-decorator]
    def _state_uniforms_kernel(u_ptr, state_ptr, rows, stride_u, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        """The uniforms drawn at the seed and offset in ``state`` (int64 [2] on the device)."""
        t = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        tl.store(u_ptr + t, uniform_from_state(state_ptr, t, stride_u), mask=t < rows)

    @triton.jit  # type: ignore[untyped-decorator]
    def _state_exponentials_kernel(  # type: ignore[no-untyped-def]
        e_ptr, state_ptr, skip, numel_e, stride_e, blocks, BLOCK: tl.constexpr, PROGRAMS: tl.constexpr
    ):
        """The exponentials drawn at ``skip`` past the offset in ``state``, by ``PROGRAMS`` programs
        (few, so that another kernel's programs run beside them), each looping over blocks of BLOCK
        thread slots."""
        seed = tl.load(state_ptr)
        offset_e = tl.load(state_ptr + 1) + skip
        for b in range(tl.program_id(0), blocks, PROGRAMS):
            t = tl.cast(b, tl.int64) * BLOCK + tl.arange(0, BLOCK)
            _store_exponentials(e_ptr, seed, offset_e, t, numel_e, stride_e)


def signed_seed(seed: int) -> int:
    """A generator's seed (unsigned 64 bits, as ``initial_seed`` gives it) as the signed int64 with
    the same bits, for a kernel argument or an int64 slot."""
    return seed - 2**64 if seed >= 2**63 else seed


def draw_like_torch(
    seed: int, offset: int, rows: int, num_reqs: int, vocab: int, device: torch.device
) -> tuple[Tensor, Tensor, int]:
    """(``torch.rand(rows, float64)``, ``torch.empty(num_reqs, vocab).exponential_()``, the offset
    after both) as the default generator would draw them from ``seed`` at ``offset`` (a multiple of
    4): ``draw_noise``'s global draws, computed here from the layout above."""
    if offset % 4 or offset < 0:
        raise ValueError(f"offset must be a non-negative multiple of 4, got {offset}")
    uniforms = PhiloxDraw.of(rows, 2, device)
    exponentials = PhiloxDraw.of(num_reqs * vocab, 4, device)
    u = torch.empty(rows, dtype=torch.float64, device=device)
    e = torch.empty(num_reqs, vocab, dtype=torch.float32, device=device)
    slots = max(exponentials.stride * (exponentials.increment // 4), rows)
    _draw_kernel[(triton.cdiv(slots, 256),)](
        u,
        e,
        signed_seed(seed),
        offset,
        offset + uniforms.increment,
        rows,
        num_reqs * vocab,
        uniforms.stride,
        exponentials.stride,
        BLOCK=256,
    )
    return u, e, offset + uniforms.increment + exponentials.increment


STATE_DRAW_BLOCK: Final = 1024
"""Thread slots per loop step of ``_state_exponentials_kernel`` (8 warps, one program per SM)."""


def draw_from_state(
    state: Tensor,
    uniforms: PhiloxDraw,
    exponentials: PhiloxDraw,
    vocab: int,
    *,
    exponential_stream: torch.cuda.Stream | None = None,
) -> tuple[Tensor, Tensor]:
    """(``torch.rand(rows, float64)``, ``torch.empty(B, V).exponential_()``) as the default generator
    draws them from the seed and offset in ``state`` (int64 [2] on the device: the seed as signed 64
    bits, then the offset, a multiple of 4), read as the kernels run, so a CUDA graph draws what the
    host put there before each replay; ``uniforms`` and ``exponentials`` are the two draws' layouts
    (``PhiloxDraw.of(rows, 2)``, ``PhiloxDraw.of(B · V, 4)``), and the exponentials come after the
    uniforms' increment, as ``draw_like_torch``'s. With ``exponential_stream`` the exponentials are
    drawn there, after the work queued so far on the current stream, by one program per SM, so that
    the caller's next launch runs beside them (the caller waits for that stream before reading
    them; torch's own ``exponential_`` fills every SM, so nothing would run beside it)."""
    if state.dtype != torch.int64 or state.shape != (2,) or not state.is_cuda:
        raise ValueError(f"state: int64 [2] on a CUDA device, got {state.dtype} {tuple(state.shape)} on {state.device}")
    if uniforms.unroll != 2 or exponentials.unroll != 4 or vocab < 1 or exponentials.numel % vocab:
        raise ValueError(
            f"layouts of a float64 rand and a float32 exponential_ of rows of {vocab}, got "
            f"{uniforms} and {exponentials}"
        )
    device = state.device
    u = torch.empty(uniforms.numel, dtype=torch.float64, device=device)
    e = torch.empty(exponentials.numel // vocab, vocab, dtype=torch.float32, device=device)
    if uniforms.numel:
        _state_uniforms_kernel[(triton.cdiv(uniforms.numel, THREADS),)](
            u, state, uniforms.numel, uniforms.stride, BLOCK=THREADS
        )
    programs = torch.cuda.get_device_properties(device).multi_processor_count
    blocks = triton.cdiv(exponentials.stride * (exponentials.increment // 4), STATE_DRAW_BLOCK)
    if exponential_stream is not None:
        exponential_stream.wait_stream(torch.cuda.current_stream(device))
        e.record_stream(exponential_stream)
    with torch.cuda.stream(exponential_stream):  # no-op for None
        _state_exponentials_kernel[(programs,)](
            e,
            state,
            uniforms.increment,
            exponentials.numel,
            exponentials.stride,
            blocks,
            BLOCK=STATE_DRAW_BLOCK,
            PROGRAMS=programs,
            num_warps=8,
        )
    return u, e
