"""Padding tables and step plans (docs/parallel.md §4): examples and Hypothesis properties."""

import bisect

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_ref.parallel import (
    GraphTables,
    ParallelLayout,
    ShiftPolicy,
    SoloComm,
    StepMode,
    default_capture_sizes,
    dp_padding,
    pad_sp,
    pad_to,
    plan_step,
)
from arctic_ref.parallel.comm import RankGroups

SIZES = default_capture_sizes(512)


def _literal_vllm_table(max_size: int) -> list[int]:
    """vLLM's construction: a descending loop filling a lookup table."""
    sizes = sorted(SIZES, reverse=True)
    table = [0] * (max_size + 1)
    for i, size in enumerate(sizes):
        end = sizes[i + 1] if i + 1 < len(sizes) else 0
        for n in range(end + 1, size + 1):
            table[n] = size
    return table


def test_default_sizes() -> None:
    assert len(SIZES) == 67
    assert SIZES[:5] == (1, 2, 4, 8, 16) and SIZES[-1] == 512
    assert default_capture_sizes(100) == (1, 2, 4, *range(8, 97, 8))
    assert default_capture_sizes(512, (64, 8, 32)) == (8, 32, 64)
    assert default_capture_sizes(512, native_sequence_parallelism=True, tensor_parallel_size=2)[0] == 2


LITERAL = _literal_vllm_table(512)


@given(st.integers(0, 512), st.integers(0, 512))
def test_pad_to_properties(n: int, m: int) -> None:
    p = pad_to(n, SIZES)
    assert p >= n and pad_to(p, SIZES) == p
    assert (n <= m) <= (p <= pad_to(m, SIZES)) or n > m
    if n >= 1:
        assert p in SIZES and p == LITERAL[n] == SIZES[bisect.bisect_left(SIZES, n)]


@given(st.integers(513, 4 * 512))
def test_pad_to_above_the_table_is_an_error(n: int) -> None:
    with pytest.raises(ValueError, match=rf"n\({n}\) > the largest captured size\(512\)"):
        pad_to(n, SIZES)


@given(st.integers(1, 1024), st.integers(1, 1024), st.sampled_from([2, 4, 8]))
def test_pad_sp_properties(n: int, m: int, sp: int) -> None:
    p = pad_sp(n, SIZES, sp)
    assert p % sp == 0 and p >= n and pad_sp(p, SIZES, sp) == p
    if n <= m:
        assert p <= pad_sp(m, SIZES, sp)


def _groups() -> RankGroups:
    solo = SoloComm(0)
    return RankGroups(rank=0, tp=solo, sp=solo, shift=solo)


@pytest.mark.parametrize(
    ("sp", "threshold", "n", "mode", "padded", "graph"),
    [
        (2, 64, 3, "shift", 4, 4),
        (2, 64, 61, "shift", 64, 64),
        (2, 64, 64, "shift", 64, 64),
        (2, 64, 65, "base", 80, 80),
        (2, 64, 1025, "base", 1026, None),
        (1, None, 3, "base", 4, 4),
        (2, 500, 497, "shift", 504, None),
    ],
)
def test_runtime_padding_examples(
    sp: int, threshold: int | None, n: int, mode: str, padded: int, graph: int | None
) -> None:
    """docs/parallel.md §4.3 table, plus the seed's eager-at-padded-shape case (thr 500, n 497 → 504)."""
    layout = ParallelLayout(sp, 1, sp)
    policy = ShiftPolicy(layout, enabled=threshold is not None, threshold=threshold or 0)
    tables = GraphTables.build(SIZES, sp=sp, threshold=threshold or 0, max_num_batched_tokens=2048)
    plan = plan_step(n, policy=policy, graphs=tables, groups=_groups())
    assert (plan.mode.value, plan.num_input_tokens, plan.graph_size) == (mode, padded, graph)


@given(st.integers(1, 2048), st.sampled_from([1, 2, 4]), st.integers(0, 600), st.booleans())
def test_every_plan_is_consistent(n: int, sp: int, threshold: int, enabled: bool) -> None:
    layout = ParallelLayout(sp, 1, sp)
    enabled = enabled and sp > 1
    policy = ShiftPolicy(layout, enabled=enabled, threshold=threshold)
    tables = GraphTables.build(SIZES, sp=sp, threshold=threshold if enabled else 0, max_num_batched_tokens=2048)
    plan = plan_step(n, policy=policy, graphs=tables, groups=_groups())
    assert plan.num_input_tokens >= n
    if plan.mode is StepMode.BASE and sp > 1:
        assert plan.num_input_tokens % sp == 0 and plan.rows_per_rank * sp == plan.num_input_tokens
        if plan.graph_size is not None and enabled:
            assert plan.num_input_tokens > threshold
    assert not (set(tables.base) & set(tables.shift)) or threshold == 0 or not enabled


def test_dp_padding() -> None:
    assert dp_padding(10, [10], enforce_eager=False) == 0
    assert dp_padding(10, [10, 24], enforce_eager=False) == 14
    assert dp_padding(10, [10, 24], enforce_eager=True) == 0
    layout = ParallelLayout(2, 1, 2)
    tables = GraphTables.build(SIZES, sp=2, threshold=0, max_num_batched_tokens=512)
    plan = plan_step(8, policy=ShiftPolicy(layout), graphs=tables, groups=_groups(), dp_num_tokens=[8, 24])
    assert plan.num_input_tokens == 24
    with pytest.raises(ValueError, match=r"DP padding gave 21 tokens, not a multiple of sp\(2\)"):
        plan_step(8, policy=ShiftPolicy(layout), graphs=tables, groups=_groups(), dp_num_tokens=[8, 21])


def test_capture_size_rules_one_at_a_time() -> None:
    """Each rule of ``default_capture_sizes`` alone: a single value expands (even 1), several are
    sorted, native SP filters only with T > 1 and only when asked, and an empty or non-positive
    list is refused."""
    assert default_capture_sizes(64, (1,)) == (1, 2, 4)
    assert default_capture_sizes(64, (16,)) == (1, 2, 4, 8, 16)
    assert default_capture_sizes(64, (15,)) == (1, 2, 4, 8)  # range(8, c + 1, 8) stops at c
    assert default_capture_sizes(64, (3, 8)) == (3, 8)
    assert default_capture_sizes(64, (3, 8), tensor_parallel_size=2) == (3, 8)  # native SP off: no filter
    assert default_capture_sizes(64, (3, 8), native_sequence_parallelism=True) == (3, 8)  # T = 1: no filter
    assert default_capture_sizes(64, (3, 8), native_sequence_parallelism=True, tensor_parallel_size=2) == (8,)
    for bad in ((), (0,), (8, 0), (-1,)):
        with pytest.raises(ValueError, match=r"cuda_graph_sizes must be positive ints, got \["):
            default_capture_sizes(64, bad)


def test_pad_to_zero_and_the_table_edges() -> None:
    """No tokens pad to no tokens; the shift table includes the threshold itself, the base table
    starts above it and includes max_num_batched_tokens itself; the eager table is disabled and empty."""
    assert pad_to(0, SIZES) == 0 and pad_sp(0, SIZES, 2) == 0
    tables = GraphTables.build((1, 2, 4, 8), sp=2, threshold=8, max_num_batched_tokens=16)
    assert tables.shift == (8, 4, 2, 1) and tables.base == (16,) and tables.enabled
    assert GraphTables.eager() == GraphTables(base=(), shift=(), sizes=(), enabled=False)
