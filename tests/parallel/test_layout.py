"""Rank grids, groups and the validation messages of docs/parallel.md §1."""

import pytest

from arctic_ref.parallel import GraphTables, ParallelLayout, ShiftPolicy
from arctic_ref.parallel.heads import base_kv_heads, kv_head_of_query, query_heads, shift_kv_heads


@pytest.mark.parametrize(
    ("sp", "tp", "tp_groups", "sp_groups", "shift_group", "shift_ranks"),
    [
        (2, 2, ((0, 1), (2, 3)), ((0, 2), (1, 3)), (0, 2, 1, 3), (0, 2, 1, 3)),
        (
            4,
            2,
            ((0, 1), (2, 3), (4, 5), (6, 7)),
            ((0, 2, 4, 6), (1, 3, 5, 7)),
            (0, 2, 4, 6, 1, 3, 5, 7),
            (0, 4, 1, 5, 2, 6, 3, 7),
        ),
        (
            2,
            4,
            ((0, 1, 2, 3), (4, 5, 6, 7)),
            ((0, 4), (1, 5), (2, 6), (3, 7)),
            (0, 4, 1, 5, 2, 6, 3, 7),
            (0, 2, 4, 6, 1, 3, 5, 7),
        ),
        (4, 1, ((0,), (1,), (2,), (3,)), ((0, 1, 2, 3),), (0, 1, 2, 3), (0, 1, 2, 3)),
    ],
    ids=["S2T2", "S4T2", "S2T4", "S4T1"],
)
def test_worked_group_tables(
    sp: int, tp: int, tp_groups: tuple, sp_groups: tuple, shift_group: tuple, shift_ranks: tuple
) -> None:  # type: ignore[type-arg]
    layout = ParallelLayout(sp * tp, tp, sp)
    assert layout.tp_groups() == tp_groups
    assert layout.sp_groups() == sp_groups
    assert layout.shift_group() == shift_group
    assert tuple(layout.shift_rank(g) for g in range(sp * tp)) == shift_ranks
    assert all(layout.shift_group()[layout.shift_rank(g)] == g for g in range(sp * tp))


@pytest.mark.parametrize(
    ("members", "perm"),
    [((0, 2, 1, 3), (0, 2, 1, 3)), ((0, 2, 4, 6, 1, 3, 5, 7), (0, 2, 4, 6, 1, 3, 5, 7)), ((0, 1), (0, 1))],
)
def test_gather_perm_worked_examples(members: tuple[int, ...], perm: tuple[int, ...]) -> None:
    """S=2,T=2 → [0,2,1,3]; S=4,T=2 → [0,2,4,6,1,3,5,7] (docs/parallel.md §3.5)."""
    assert ParallelLayout.gather_perm(members) == perm
    # raw chunks come in sorted-rank order; indexing with perm gives declared member order
    assert [sorted(members)[i] for i in perm] == list(members)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"world_size": 6, "tensor_parallel_size": 2, "ulysses_sequence_parallel_size": 2},
            "world_size(6) != tensor_parallel_size(2) * ulysses_sequence_parallel_size(2); pipeline parallelism is not supported",
        ),
        (
            {"world_size": 1, "tensor_parallel_size": 0, "ulysses_sequence_parallel_size": 1},
            "tensor_parallel_size must be >= 1 (got 0)",
        ),
        (
            {"world_size": 0, "tensor_parallel_size": 1, "ulysses_sequence_parallel_size": 1},
            "world_size must be >= 1 (got 0)",
        ),
        (
            {
                "world_size": 2,
                "tensor_parallel_size": 1,
                "ulysses_sequence_parallel_size": 2,
                "native_sequence_parallelism": True,
            },
            "ulysses sequence parallelism (sp=2) cannot be combined with native sequence parallelism",
        ),
    ],
    ids=["V1", "V2-tp", "V2-world", "V9"],
)
def test_layout_validation_messages(kwargs: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValueError) as info:
        ParallelLayout(**kwargs)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("tp", "sp", "heads", "kv", "inter", "shift", "message"),
    [
        (2, 4, 12, 4, 352, False, "num_attention_heads(12) is not divisible by tp(2) * sp(4) = 8"),
        (2, 1, 8, 3, 352, False, "num_key_value_heads(3) and tensor_parallel_size(2): one must divide the other"),
        (
            1,
            3,
            6,
            2,
            351,
            False,
            "kv heads per tp rank(2) and ulysses_sequence_parallel_size(3): one must divide the other",
        ),
        (1, 1, 8, 3, 352, False, "num_attention_heads(8) is not divisible by num_key_value_heads(3)"),
        (2, 4, 8, 8, 348, True, "intermediate_size(348) is not divisible by 8 (tp * sp, shift enabled)"),
    ],
    ids=["V3", "V4", "V5", "V6", "V7"],
)
def test_model_validation_messages(
    tp: int, sp: int, heads: int, kv: int, inter: int, shift: bool, message: str
) -> None:
    with pytest.raises(ValueError) as info:
        ParallelLayout(tp * sp, tp, sp).validate_model(
            num_attention_heads=heads, num_key_value_heads=kv, intermediate_size=inter, shift=shift
        )
    assert str(info.value) == message


def test_shift_policy_messages_and_inclusive_threshold() -> None:
    with pytest.raises(ValueError, match=r"^shift parallelism requires ulysses_sequence_parallel_size > 1 \(got 1\)$"):
        ShiftPolicy(ParallelLayout(2, 2, 1), enabled=True)
    with pytest.raises(ValueError, match=r"^shift_parallel_threshold must be >= 0 \(got -1\)$"):
        ShiftPolicy(ParallelLayout(2, 1, 2), enabled=True, threshold=-1)
    policy = ShiftPolicy(ParallelLayout(2, 1, 2), enabled=True, threshold=64)
    assert [policy.mode(n).value for n in (1, 64, 65)] == ["shift", "shift", "base"]
    assert ShiftPolicy(ParallelLayout(2, 1, 2)).mode(1).value == "base"  # disabled


def _valid_configs() -> list[tuple[int, int, int, int]]:
    out = []
    for p in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16):
        for tp in (t for t in range(1, p + 1) if p % t == 0):
            sp = p // tp
            for heads in range(1, 65):
                for kv in (k for k in range(1, heads + 1) if heads % k == 0):
                    try:
                        ParallelLayout(p, tp, sp).validate_model(
                            num_attention_heads=heads, num_key_value_heads=kv, intermediate_size=p, shift=True
                        )
                    except ValueError:
                        continue
                    out.append((heads, kv, sp, tp))
    return out


def test_kv_cache_invariance_theorem_exhaustively() -> None:
    """docs/parallel.md §3.3 T1: for every valid (H ≤ 64, K, S, T) with P ≤ 16, each GPU holds the same
    query and KV heads in base and shift mode, and every held query head's GQA partner is held."""
    configs = _valid_configs()
    for heads, kv, sp, tp in configs:
        layout = ParallelLayout(sp * tp, tp, sp)
        for rank in range(sp * tp):
            assert base_kv_heads(layout, rank, kv) == shift_kv_heads(layout, rank, kv), (heads, kv, sp, tp, rank)
            held = shift_kv_heads(layout, rank, kv)
            assert all(kv_head_of_query(q, heads, kv) in held for q in query_heads(layout, rank, heads))
    # Every (S, T) with P = S·T ≤ 16 and every H ≤ 64, K | H passing V3–V7 (shift on): 2,256
    # configurations. The spec quotes 1,880 for its enumeration, which it does not spell out;
    # this one holds every configuration the validation admits.
    assert len(configs) == 2256, len(configs)


def test_graph_tables_are_printable_values() -> None:
    tables = GraphTables.build((1, 2, 4, 8), sp=2, threshold=4, max_num_batched_tokens=512)
    assert tables == GraphTables(base=(16, 8), shift=(4, 2, 1), sizes=(1, 2, 4, 8))
    assert "GraphTables(base=(16, 8)" in repr(tables)


@pytest.mark.parametrize("name", ["world_size", "tensor_parallel_size", "ulysses_sequence_parallel_size"])
def test_layout_sizes_must_be_ints_not_bools(name: str) -> None:
    sizes: dict[str, object] = {"world_size": 1, "tensor_parallel_size": 1, "ulysses_sequence_parallel_size": 1}
    for bad in (True, False):  # ints to isinstance, refused by name (other types: the beartype hook)
        with pytest.raises(TypeError, match=f"{name} must be an int"):
            ParallelLayout(**{**sizes, name: bad})  # type: ignore[arg-type]


@pytest.mark.parametrize(("tp", "sp"), [(1, 1), (2, 1), (1, 2), (2, 2), (1, 4), (4, 2)])
def test_query_heads_partition_the_heads(tp: int, sp: int) -> None:
    """Every rank's query-head chunk r = t·S + s, of size H/P: together exactly the H heads, once each."""
    layout = ParallelLayout(tp * sp, tp, sp)
    heads = 16
    chunks = [query_heads(layout, rank, heads) for rank in range(layout.world_size)]
    assert all(len(c) == heads // layout.world_size for c in chunks)
    assert sorted(h for c in chunks for h in c) == list(range(heads))


def test_coords_bounds_and_the_shift_default_of_validate_model() -> None:
    """Every rank in [0, world) has coordinates, the world size itself does not; ``validate_model``
    checks the MLP split against tp alone unless shift is asked for."""
    layout = ParallelLayout(4, 2, 2)
    assert [layout.coords(r) for r in range(4)] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for bad in (4, -1):
        with pytest.raises(ValueError, match=rf"^rank\({bad}\) outside \[0, 4\)$"):
            layout.coords(bad)
    layout.validate_model(num_attention_heads=8, num_key_value_heads=8, intermediate_size=6)  # 6 % tp(2) == 0
    with pytest.raises(ValueError, match=r"intermediate_size\(6\) is not divisible by 4 \(tp \* sp, shift enabled\)"):
        layout.validate_model(num_attention_heads=8, num_key_value_heads=8, intermediate_size=6, shift=True)
