"""``plan_step`` per rank (docs/parallel.md §4.3, §2): the token slices each SP rank takes, the groups each
mode uses, and the padding rules at their edges (graphs off, native SP, no SP)."""

import pytest

from arctic_ref.parallel import GraphTables, ParallelLayout, ShiftPolicy, SoloComm, StepMode, plan_step
from arctic_ref.parallel.comm import RankGroups
from arctic_ref.parallel.ulysses import ULYSSES

SIZES = (1, 2, 4, 8)
TP, SP, SHIFT = SoloComm(1), SoloComm(2), SoloComm(3)  # distinct, so a plan's groups show which it took


def _groups(rank: int) -> RankGroups:
    return RankGroups(rank=rank, tp=TP, sp=SP, shift=SHIFT)


@pytest.mark.parametrize("sp", [2, 4])
@pytest.mark.parametrize("n", [1, 5, 8, 13, 33, 100])
def test_sp_ranks_take_consecutive_equal_slices(sp: int, n: int) -> None:
    layout = ParallelLayout(sp, 1, sp)
    tables = GraphTables.build(SIZES, sp=sp, threshold=0, max_num_batched_tokens=256)
    plans = [plan_step(n, policy=ShiftPolicy(layout), graphs=tables, groups=_groups(r)) for r in range(sp)]
    padded = plans[0].num_input_tokens
    assert padded % sp == 0 and padded >= n
    for rank, plan in enumerate(plans):
        s = layout.sp_rank(rank)
        assert plan.rows_per_rank * sp == padded
        assert plan.token_slice == slice(s * plan.rows_per_rank, (s + 1) * plan.rows_per_rank)
    covered = sorted(i for plan in plans for i in range(padded)[plan.token_slice])
    assert covered == list(range(padded))


def test_each_mode_uses_its_groups() -> None:
    layout = ParallelLayout(2, 1, 2)
    policy = ShiftPolicy(layout, enabled=True, threshold=4)
    tables = GraphTables.build(SIZES, sp=2, threshold=4, max_num_batched_tokens=256)
    base = plan_step(9, policy=policy, graphs=tables, groups=_groups(0), exchange=ULYSSES)
    shift = plan_step(3, policy=policy, graphs=tables, groups=_groups(0))
    assert base.mode is StepMode.BASE and shift.mode is StepMode.SHIFT
    assert (base.groups.tp, base.groups.sp, base.groups.vocab, base.groups.exchange) == (TP, SP, TP, ULYSSES)
    assert (shift.groups.tp, shift.groups.sp, shift.groups.vocab) == (SHIFT, None, SHIFT)
    assert shift.token_slice is None and shift.rows_per_rank == shift.num_input_tokens


def test_without_sp_nothing_is_sliced() -> None:
    layout = ParallelLayout(1, 1, 1)
    tables = GraphTables.build(SIZES, sp=1, threshold=0, max_num_batched_tokens=256)
    for n in (1, 3, 8, 9):
        plan = plan_step(n, policy=ShiftPolicy(layout), graphs=tables, groups=_groups(0))
        assert plan.token_slice is None and plan.rows_per_rank == plan.num_input_tokens


def test_graphs_off_run_at_the_scheduled_count() -> None:
    for sp, n, padded in ((1, 1, 1), (1, 7, 7), (2, 7, 8), (2, 1, 2)):
        layout = ParallelLayout(sp, 1, sp)
        plan = plan_step(n, policy=ShiftPolicy(layout), graphs=GraphTables.eager(), groups=_groups(0))
        assert (plan.num_input_tokens, plan.graph_size) == (padded, None), (sp, n)


@pytest.mark.parametrize(
    ("tp", "native", "n", "padded"),
    [(2, True, 9, 10), (2, False, 9, 9), (1, True, 9, 9), (2, True, 7, 8)],
    ids=["native-tp2-rounds", "plain-tp2-does-not", "native-tp1", "native-in-table"],
)
def test_native_sp_rounds_beyond_the_table_to_tp(tp: int, native: bool, n: int, padded: int) -> None:
    """Rule 3: above the largest captured size, native SP with TP > 1 rounds up to a multiple of TP."""
    layout = ParallelLayout(tp, tp, 1, native_sequence_parallelism=native)
    tables = GraphTables.build(SIZES, sp=1, threshold=0, max_num_batched_tokens=256)
    plan = plan_step(n, policy=ShiftPolicy(layout), graphs=tables, groups=_groups(0))
    assert plan.num_input_tokens == padded


def test_shift_policy_defaults_and_its_edges() -> None:
    """Threshold 512 by default (AI-13: the code's value, not the docs' 256); shift needs SP > 1."""
    assert ShiftPolicy(ParallelLayout(2, 1, 2)).threshold == 512
    policy = ShiftPolicy(ParallelLayout(2, 1, 2), enabled=True)
    assert policy.mode(512) is StepMode.SHIFT and policy.mode(513) is StepMode.BASE
    assert ShiftPolicy(ParallelLayout(1, 1, 1)).mode(3) is StepMode.BASE
    with pytest.raises(ValueError, match="requires ulysses_sequence_parallel_size > 1"):
        ShiftPolicy(ParallelLayout(1, 1, 1), enabled=True)


def test_disabled_tables_never_pad() -> None:
    layout = ParallelLayout(1, 1, 1)
    tables = GraphTables.build(SIZES, sp=1, threshold=0, max_num_batched_tokens=256, enabled=False)
    plan = plan_step(3, policy=ShiftPolicy(layout), graphs=tables, groups=_groups(0))
    assert (plan.num_input_tokens, plan.graph_size) == (3, None)
