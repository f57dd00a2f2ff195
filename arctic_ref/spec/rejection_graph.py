"""``RejectionSampler``: ``rejection_sample`` with its fixed cost removed on CUDA, by replaying the whole
call (noise, then the two fused kernels, which also check the values) as one CUDA graph per input signature.

An eager call's fixed cost is host time, not GPU time: the blocking device-to-host copies for the
value rules of docs/verification.md §1.2 and for the NaN rule (item 5), the two noise draws and about
twenty launches, while the kernels themselves take tens of µs.

The graph path keeps the contract:

- **Same output, same generator.** The kernels draw the noise themselves, bit for bit as torch
  would from the default CUDA generator's seed and offset (``torch_philox``; the host hands them
  over in the slot below and advances the offset by the draws' increments): up to
  ``DRAWN_MAX_VALUES`` exponentials inside the race, beyond into noise tensors
  (``draw_from_state``). Either way output and final generator state are bit-identical to
  ``rejection_sample`` under the same seed. Calls of 2³¹ exponentials or more, which torch draws
  in two parts, run eagerly.
- **Bad input raises before anything changes.** Host rules (types, shapes, counts) are checked
  before a capture; a replay's key fixes everything they read, so a hit passes them. Value rules are
  checked inside the graph (``ValueChecks``, in the first kernel) and come back with the NaN flag in
  a pinned buffer the kernels store to directly; the wait for the replay is the call's only
  synchronisation. On a value error the default generator's offset is restored to its value before
  the call and ``validate_inputs`` raises its usual message; the output is never handed out. The
  kernels never read out of bounds on bad values: they take the request boundaries from the host's
  counts, and clamp draft ids for loads.
- **Every call returns a fresh tensor**, written by the replay itself: the host puts its address
  (and the generator's seed and offset) in pinned memory; the first launch reads the seed and offset
  there and copies all three to the device (``fused_kernels``' ``slot_from``; where the noise goes
  to tensors, a copy node at the head of the graph does), and the race's launches write there. The
  tensors come ``RING`` at a time as views of one block (``_Outputs``), so a call allocates nothing.
- **Host time is the cost at small batches**, so the hot path makes few torch calls: the key, the
  generator's seed and offset and its advance (kernel draws), the replay (with no torch RNG node it
  fills nothing before launching), one stream synchronisation (the stream object is rebuilt only
  when the current stream changes), and the flags read. Where the noise goes to tensors, the
  exponential draw runs on a side stream inside the graph, one program per SM, beside the first
  launch, which does not read it (``draw_from_state``; torch's own ``exponential_`` fills every
  SM, so nothing would run beside it).
- **No copy nodes where the race draws.** A copy node costs host time at every replay, beyond its
  1–1.5 µs on the GPU, so where the race draws the noise the first launch reads the pinned slot
  and copies it to the device for the later launches, and the kernels store the flags to pinned
  memory themselves. Every launch reading the pinned slot itself costs more (a thousand race
  programs reading over the bus), and so does writing the output rows from the race's last
  segment per request instead of a third launch (an acquire-release atomic per segment).
- **Graphs read the caller's tensors in place** (nothing is copied, nothing written). A graph is keyed
  by every tensor's address, shape, stride and dtype, the counts and the flags, and is captured the
  second time its key is seen; the first sighting, any other shape of call (per-request generators,
  all-greedy batches, top-k/top-p, other profiles or dtypes, CPU tensors) and a full cache run the
  eager ``rejection_sample``. Callers that pass the same buffers every step (a runner's persistent
  inputs, vLLM's) replay; callers that allocate fresh tensors every call still get exact results.
"""

import ctypes
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Final

import torch
from torch import Tensor

from arctic_ref.parallel.graph_capture import capture_graph
from arctic_ref.spec.metadata import SamplingMetadata, SpecDecodeMetadata
from arctic_ref.spec.profile import INTENDED, SamplerProfile
from arctic_ref.spec.rejection import (
    BonusTokenIds,
    bonus_column,
    rejection_sample,
    validate_host_inputs,
    validate_inputs,
)
from arctic_ref.spec.rejection_triton import (
    DRAWN_MAX_VALUES,
    MIN_VOCAB,
    NAN_MESSAGE,
    DrawnNoise,
    ValueChecks,
    fused_kernels,
    fused_supported,
)
from arctic_ref.spec.torch_philox import MAX_VALUES, draw_from_state, signed_seed
from arctic_ref.types import Logits, Output, PerRequest, Probs, TokenIds

GRAPH_CACHE_CAPACITY: Final = 16
"""Graphs kept per sampler (least recently used dropped first); each holds its own memory pool."""
CAPTURE_AFTER: Final = 2
"""A key is captured the time it is seen this often (a one-off shape never pays for a capture)."""

RING: Final = 64
"""Output tensors allocated at once per graph (``_Outputs``)."""

_TensorKey = tuple[int, tuple[int, ...], tuple[int, ...], torch.dtype]
_Key = tuple[object, ...]


class _Outputs:
    """Fresh int32 output tensors of one shape, ``RING`` allocated at a time as views of one block:
    each view's memory is its own (the block lives while any view does), and handing one out costs
    no allocation and no torch call."""

    def __init__(self, shape: tuple[int, int], device: torch.device) -> None:
        self.shape = shape
        self.device = device
        self._ready: list[tuple[Tensor, int]] = []

    def take(self) -> tuple[Tensor, int]:
        """A tensor never handed out before, and its address."""
        if not self._ready:
            block = torch.empty((RING, *self.shape), dtype=torch.int32, device=self.device)
            self._ready = [(view, view.data_ptr()) for view in reversed(block.unbind(0))]
        return self._ready.pop()


@dataclass(frozen=True, slots=True, kw_only=True)
class _Captured:
    """One captured call: its graph, the host counts' cumsum it runs on, and its outputs."""

    graph: torch.cuda.CUDAGraph
    expected_cu: Tensor
    outputs: _Outputs
    host_slot: Tensor
    """Pinned int64 [3]: the address the replay writes its output to (a fresh tensor per call), the
    default generator's seed and its offset; the graph copies them to the device first."""
    host_values: ctypes.Array[ctypes.c_int64]
    """``host_slot``'s values, written from the host without a torch call."""
    slot: Tensor
    """int64 [3] on the device: the graph's copy of ``host_slot``, which the kernels read."""
    offset_step: int
    """How far one replay advances the default generator's offset (the kernels draw; the host
    advances it)."""
    host_flags: Tensor
    """Pinned int32 [2], written by the kernels themselves: the value-rule bits (``ValueChecks``),
    then the NaN flag."""
    counters: Tensor
    """The kernels' arrival counters, zero between replays."""
    race_bests: Tensor
    """The race's published bests (``fused_kernels``' ``race_bests``), zero between replays."""

    def hand_over(self, generator: torch.Generator) -> bool:
        """Puts the generator's seed and offset in the slot and advances the offset as the eager
        draws would; False (nothing done) where the offset is not a multiple of 4, which torch keeps
        and the kernels' draws assume."""
        offset = generator.get_offset()
        if offset % 4:
            return False
        self.host_values[1] = signed_seed(generator.initial_seed())
        self.host_values[2] = offset
        generator.set_offset(offset + self.offset_step)
        return True


def _tensor_key(tensor: Tensor) -> _TensorKey:
    return (tensor.data_ptr(), tensor.shape, tensor.stride(), tensor.dtype)  # torch.Size hashes as a tuple


def _graph_key(
    draft_token_ids: object,
    num_draft_tokens: object,
    max_spec_len: object,
    cu_num_draft_tokens: object,
    draft_probs: object,
    target_logits: object,
    bonus_token_ids: object,
    meta: object,
    profile: SamplerProfile,
) -> _Key | None:
    """The signature a graph replays for, or None where the call takes the eager path."""
    tensors = (draft_token_ids, cu_num_draft_tokens, target_logits, bonus_token_ids)
    if not all(isinstance(t, Tensor) and t.is_cuda and t.is_contiguous() for t in tensors):
        return None
    if draft_probs is not None and not (
        isinstance(draft_probs, Tensor) and draft_probs.is_cuda and draft_probs.is_contiguous()
    ):
        return None
    if not isinstance(meta, SamplingMetadata) or meta.temperature is None or meta.all_greedy or meta.generators:
        return None
    if type(max_spec_len) is not int or not isinstance(num_draft_tokens, list) or not meta.temperature.is_cuda:
        return None
    if not set(map(type, num_draft_tokens)) <= {int}:  # bools would equal ints in the key
        return None
    assert isinstance(target_logits, Tensor)
    if not fused_supported(target_logits, meta.top_k, meta.top_p, profile.name):
        return None
    if len(num_draft_tokens) * target_logits.shape[1] >= MAX_VALUES:  # torch splits such draws (torch_philox)
        return None
    return (
        *(_tensor_key(t) for t in tensors),  # type: ignore[arg-type]
        None if draft_probs is None else _tensor_key(draft_probs),
        _tensor_key(meta.temperature.contiguous()),
        tuple(num_draft_tokens),
        max_spec_len,
        meta.all_random,
        profile,
    )


class RejectionSampler:
    """``rejection_sample`` with the same arguments and results; on CUDA, repeated calls on the same
    buffers replay one CUDA graph (see the module docstring for when, and what is kept exact). One
    sampler serves one thread: a graph's output address lives in one pinned slot between the host
    writing it and the replay reading it."""

    def __init__(
        self,
        *,
        profile: SamplerProfile = INTENDED,
        capacity: int = GRAPH_CACHE_CAPACITY,
        capture_after: int = CAPTURE_AFTER,
        drawn_max_values: int = DRAWN_MAX_VALUES,
    ) -> None:
        if capacity < 0 or capture_after < 1:
            raise ValueError(f"capacity must be >= 0 and capture_after >= 1, got {capacity} and {capture_after}")
        if drawn_max_values < 0:
            raise ValueError(f"drawn_max_values must be >= 0, got {drawn_max_values}")
        self.profile = profile
        self.drawn_max_values = drawn_max_values
        """Graphs of at most this many exponentials (B · V) draw their noise in the race."""
        self.capacity = capacity
        self.capture_after = capture_after
        self._graphs: OrderedDict[_Key, _Captured] = OrderedDict()
        self._sightings: OrderedDict[_Key, int] = OrderedDict()
        self._stream: tuple[tuple[int, int], torch.cuda.Stream] | None = None
        self.replays = 0
        """Calls served by a graph replay (the rest ran eagerly)."""

    @property
    def num_graphs(self) -> int:
        return len(self._graphs)

    def __call__(
        self,
        draft_token_ids: TokenIds,
        num_draft_tokens: list[int],
        max_spec_len: int,
        cu_num_draft_tokens: PerRequest,
        draft_probs: Probs | None,
        target_logits: Logits,
        bonus_token_ids: BonusTokenIds,
        sampling_metadata: SamplingMetadata,
    ) -> Output:
        args = (
            draft_token_ids,
            num_draft_tokens,
            max_spec_len,
            cu_num_draft_tokens,
            draft_probs,
            target_logits,
            bonus_token_ids,
            sampling_metadata,
        )
        key = _graph_key(*args, self.profile) if self.capacity else None
        if key is None:
            return rejection_sample(*args, profile=self.profile)
        captured = self._graphs.get(key)
        if captured is None:  # a hit needs no host checks: its key fixes what they read, and they passed
            validate_host_inputs(*args, self.profile)
            if self._sighted(key) < self.capture_after:
                return rejection_sample(*args, profile=self.profile)
            captured = self._capture(key, *args)
        self._graphs.move_to_end(key)
        generator = torch.cuda.default_generators[target_logits.device.index or 0]
        if not captured.hand_over(generator):
            return rejection_sample(*args, profile=self.profile)
        out, address = captured.outputs.take()  # handed out only if every check passes
        captured.host_values[0] = address  # the replay writes there
        captured.graph.replay()
        self._current_stream(target_logits.device).synchronize()  # the call's one synchronisation
        value_bits, nan = captured.host_flags.tolist()
        if value_bits:
            generator.set_offset(generator.get_offset() - captured.offset_step)
            validate_inputs(*args, self.profile)
            raise AssertionError(f"the graph's value check ({value_bits}) disagrees with validate_inputs")
        if nan:
            raise ValueError(NAN_MESSAGE)
        self.replays += 1
        return out

    def forward(
        self,
        metadata: SpecDecodeMetadata,
        draft_probs: Probs | None,
        target_logits: Logits,
        bonus_token_ids: BonusTokenIds,
        sampling_metadata: SamplingMetadata,
    ) -> Output:
        """vLLM's ``RejectionSampler.forward``: this call with the drafts, their counts and
        ``max_spec_len`` taken from ``metadata``. ``target_logits`` are the draft rows' logits (the
        runner gathers them at ``metadata.target_logits_indices``), ``bonus_token_ids`` the tokens it
        sampled at ``metadata.bonus_logits_indices``."""
        return self(
            draft_token_ids=metadata.draft_token_ids,
            num_draft_tokens=metadata.num_draft_tokens,
            max_spec_len=metadata.max_spec_len,
            cu_num_draft_tokens=metadata.cu_num_draft_tokens,
            draft_probs=draft_probs,
            target_logits=target_logits,
            bonus_token_ids=bonus_token_ids,
            sampling_metadata=sampling_metadata,
        )

    def _current_stream(self, device: torch.device) -> torch.cuda.Stream:
        """``torch.cuda.current_stream(device)``, built again only when the raw stream changes (building
        it costs several µs of host time; reading the raw handle does not)."""
        index = device.index or 0
        raw = (index, torch._C._cuda_getCurrentRawStream(index))
        if self._stream is None or self._stream[0] != raw:
            self._stream = (raw, torch.cuda.current_stream(device))
        return self._stream[1]

    def _sighted(self, key: _Key) -> int:
        count = self._sightings.pop(key, 0) + 1
        self._sightings[key] = count
        while len(self._sightings) > 4 * max(self.capacity, 1):
            self._sightings.popitem(last=False)
        return count

    def _capture(
        self,
        key: _Key,
        draft_token_ids: Tensor,
        num_draft_tokens: Sequence[int],
        max_spec_len: int,
        cu_num_draft_tokens: Tensor,
        draft_probs: Tensor | None,
        target_logits: Tensor,
        bonus_token_ids: Tensor,
        meta: SamplingMetadata,
    ) -> _Captured:
        """``capture_graph`` of the whole call on these inputs: the kernels draw the noise up to
        ``DRAWN_MAX_VALUES`` exponentials in the race, beyond into noise tensors (``draw_from_state``)."""
        device = target_logits.device
        expected_cu = torch.tensor(list(accumulate(num_draft_tokens)), dtype=torch.int64, device=device)
        host_flags = torch.zeros(2, dtype=torch.int32, pin_memory=True)  # the kernels store to it over the bus
        rows, num_reqs = draft_token_ids.shape[0], len(num_draft_tokens)
        counters = torch.zeros(rows + num_reqs, dtype=torch.int32, device=device)
        race_bests = torch.zeros(2 * num_reqs, dtype=torch.int64, device=device)
        out_shape = (num_reqs, max_spec_len + 1)
        static_out = torch.empty(out_shape, dtype=torch.int32, device=device)  # written by the warm-up calls
        host_slot = torch.tensor([static_out.data_ptr(), 0, 0], dtype=torch.int64, pin_memory=True)
        slot = torch.empty(3, dtype=torch.int64, device=device)
        vocab = target_logits.shape[1]
        noise, drawn, side = _noise_source(slot, rows, num_reqs, vocab, self.drawn_max_values)
        checks = ValueChecks(
            cu_num_draft_tokens=cu_num_draft_tokens,
            all_greedy=meta.all_greedy,
            all_random=meta.all_random,
            flags=host_flags,
        )

        def body() -> Tensor:
            assert meta.temperature is not None
            uniforms = exponentials = None
            if drawn is None:  # a copy node: what the host holds when the replay runs (drawn: the first launch)
                slot.copy_(host_slot, non_blocking=True)
                uniforms, exponentials = draw_from_state(
                    noise.state, noise.uniforms, noise.exponentials, vocab, exponential_stream=side
                )
            out, _ = fused_kernels(
                draft_token_ids,
                expected_cu,
                max_spec_len,
                draft_probs,
                target_logits,
                bonus_column(bonus_token_ids),
                meta.temperature,
                uniforms,
                exponentials,
                checks=checks,
                counters=counters,
                exponential_stream=side,
                out=static_out,
                out_slot=slot[:1],
                drawn=drawn,
                race_bests=race_bests,
                slot_from=None if drawn is None else host_slot,
            )
            return out

        graph, _ = capture_graph(body, device)
        captured = _Captured(
            graph=graph,
            expected_cu=expected_cu,
            outputs=_Outputs(out_shape, device),
            host_slot=host_slot,
            host_values=(ctypes.c_int64 * 3).from_address(host_slot.data_ptr()),
            slot=slot,
            offset_step=noise.increment,
            host_flags=host_flags,
            counters=counters,
            race_bests=race_bests,
        )
        self._keep(key, captured)
        return captured

    def _keep(self, key: _Key, captured: _Captured) -> None:
        """Caches ``captured`` under ``key``, the least recently used graph going first when full."""
        if len(self._graphs) >= self.capacity:
            self._graphs.popitem(last=False)
        self._graphs[key] = captured


def _noise_source(
    slot: Tensor, rows: int, num_reqs: int, vocab: int, drawn_max_values: int
) -> tuple[DrawnNoise, DrawnNoise | None, torch.cuda.Stream | None]:
    """A graph's noise layout (its seed and offset read from ``slot[1:]``), the noise the race draws
    itself (up to ``drawn_max_values`` exponentials, from ``MIN_VOCAB`` columns) or else None, and
    then the side stream that draws the noise tensors instead."""
    noise = DrawnNoise.layout(slot[1:], rows, num_reqs, vocab)
    if vocab >= MIN_VOCAB and num_reqs * vocab <= drawn_max_values:
        return noise, noise, None
    return noise, None, torch.cuda.Stream(slot.device)  # type: ignore[no-untyped-call]
