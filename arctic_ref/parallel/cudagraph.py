"""CUDA-graph size tables and padding as pure, printable code (docs/parallel.md §4)."""

import bisect
from collections.abc import Sequence
from dataclasses import dataclass


def default_capture_sizes(
    max_num_batched_tokens: int,
    cuda_graph_sizes: Sequence[int] = (512,),
    *,
    native_sequence_parallelism: bool = False,
    tensor_parallel_size: int = 1,
) -> tuple[int, ...]:
    """vLLM 0.9.x ``_set_cudagraph_sizes``: one value c → [1, 2, 4] + range(8, c + 1, 8); several
    values → sorted; then drop sizes > max_num_batched_tokens (and, with native SP and T > 1,
    sizes not divisible by T)."""
    if not cuda_graph_sizes or any(c < 1 for c in cuda_graph_sizes):
        raise ValueError(f"cuda_graph_sizes must be positive ints, got {list(cuda_graph_sizes)}")
    one = len(cuda_graph_sizes) == 1
    sizes = [1, 2, 4, *range(8, cuda_graph_sizes[0] + 1, 8)] if one else sorted(cuda_graph_sizes)
    sizes = [s for s in sizes if s <= max_num_batched_tokens]
    if native_sequence_parallelism and tensor_parallel_size > 1:
        sizes = [s for s in sizes if s % tensor_parallel_size == 0]
    return tuple(sizes)


def pad_to(n: int, sizes: Sequence[int]) -> int:
    """The smallest captured size ≥ n (``pad_to(0) == 0``); n above the largest → ValueError."""
    asc = sorted(sizes)
    if n < 0:
        raise ValueError(f"token count must be >= 0 (got {n})")
    if n == 0:
        return 0
    if not asc or n > asc[-1]:
        raise ValueError(f"n({n}) > the largest captured size({asc[-1] if asc else None})")
    return asc[bisect.bisect_left(asc, n)]


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def pad_sp(n: int, sizes: Sequence[int], sp: int) -> int:
    """``pad_to(ceil(n/S))·S``: the base-mode padding with S > 1."""
    return pad_to(-(-n // sp), sizes) * sp


def dp_padding(num_tokens: int, dp_num_tokens: Sequence[int], enforce_eager: bool) -> int:
    """vLLM 0.9.x ``get_dp_padding``: 0 with fewer than 2 DP ranks or eager, else the largest count
    minus ours (the counts are an input here, not a collective)."""
    if len(dp_num_tokens) < 2 or enforce_eager:
        return 0
    return max(dp_num_tokens) - num_tokens


@dataclass(frozen=True, slots=True)
class GraphTables:
    """Per-rank sizes and the shapes each model captures (seed ``capture_model``)."""

    base: tuple[int, ...]
    shift: tuple[int, ...]
    sizes: tuple[int, ...]
    enabled: bool = True

    @classmethod
    def build(
        cls, sizes: Sequence[int], *, sp: int, threshold: int, max_num_batched_tokens: int, enabled: bool = True
    ) -> "GraphTables":
        """base: s·S for s in sizes with thr < s·S ≤ max; shift: s ≤ thr (thr = 0 when shift is off)."""
        asc = tuple(sorted(sizes))
        base = tuple(sorted((s * sp for s in asc if threshold < s * sp <= max_num_batched_tokens), reverse=True))
        shift = tuple(sorted((s for s in asc if s <= threshold), reverse=True))
        return cls(base=base, shift=shift, sizes=asc, enabled=enabled)

    @classmethod
    def eager(cls) -> "GraphTables":
        return cls(base=(), shift=(), sizes=(), enabled=False)
