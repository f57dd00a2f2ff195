"""Layout conformance on CPU with gloo (docs/parallel.md §5): every layout L1–L8 gives L0's greedy
tokens in float64 and per-step logits within 1e-9; float32 and bfloat16 on L3 and L7 within the
tolerance table; collective counts per mode; exchanges, KV invariance and shift-logit order. The
fused forward (``--kernels packed``: packed projections and RoPE after the exchange, torch ops) on
L0, L2, L3, L5, L6 and L8 against the reference L0, with the reference's collectives.
One spawn per world size runs all of that world's cases."""

from collections import Counter

import pytest

from arctic_ref.parallel.launch import RankInfo, spawn_ranks
from arctic_ref.parallel.plan import StepMode
from arctic_ref.testing.layout_matrix import (
    BY_NAME,
    CONFORMANCE_PACKED,
    CONFORMANCE_SPECULATIVE,
    LAYOUTS,
    LOW_BASELINES,
    LOW_PRECISION,
    LayoutCase,
    LayoutOutcome,
    compare,
    run_cases,
)
from arctic_ref.testing.layouts.cross_mode import check_cross_mode
from arctic_ref.testing.layouts.exchanges import check_exchanges, check_kv_invariance, check_logits_order
from arctic_ref.testing.layouts.isolation import check_interleaved_layouts
from arctic_ref.testing.layouts.rank_figure import RankFigure, values
from arctic_ref.testing.layouts.volume_check import check_volumes

pytestmark = pytest.mark.multiproc
LAYERS = 4
SPECULATIVE = CONFORMANCE_SPECULATIVE
PACKED = CONFORMANCE_PACKED


def _all_passed(figures: tuple[RankFigure, ...]) -> None:
    assert all(f.passed for f in figures), [f for f in figures if not f.passed]


@pytest.fixture(scope="module")
def outcomes() -> dict[tuple[str, str], LayoutOutcome]:
    solo = run_cases(RankInfo(0, 1, "gloo"), (BY_NAME["L0"], *LOW_BASELINES, SPECULATIVE[0], PACKED[0]))
    assert solo is not None
    found = {(o.case.label, o.case.dtype): o for o in solo}
    for world in (2, 4):
        cases: tuple[LayoutCase, ...] = tuple(c for c in (*LAYOUTS, *SPECULATIVE, *PACKED) if c.world_size == world)
        if world == 4:
            cases += LOW_PRECISION
        result = spawn_ranks(run_cases, cases, world_size=world, timeout_s=600)[0]
        found |= {(o.case.label, o.case.dtype): o for o in result}
    return found


@pytest.mark.parametrize("name", [c.name for c in LAYOUTS[1:]] + [c.label for c in (*SPECULATIVE, *PACKED)])
def test_layout_matches_baseline_in_float64(outcomes: dict[tuple[str, str], LayoutOutcome], name: str) -> None:
    base, other = outcomes[("L0", "float64")], outcomes[(name, "float64")]
    result = compare(base, other)
    print(
        f"\n{name}: max|Δ| {result.max_abs:.2e} over {result.compared_rows} rows, first divergence {result.first_divergence}"
    )
    assert result.identical_tokens, result.first_divergence
    assert result.max_abs <= 1e-9
    assert result.compared_rows == sum(len(r.output_token_ids) for r in base.results)
    assert [r.output_token_ids for r in other.results] == [r.output_token_ids for r in base.results]
    if other.case.drafter != "none":  # docs/runner.md §6 item 1: lossless, and drafts were really made
        assert sum(r.num_draft_tokens for r in other.results) > 0


@pytest.mark.parametrize(("name", "dtype"), [(c.name, c.dtype) for c in LOW_PRECISION])
def test_low_precision_within_tolerance_table(
    outcomes: dict[tuple[str, str], LayoutOutcome], name: str, dtype: str
) -> None:
    result = compare(outcomes[("L0", dtype)], outcomes[(name, dtype)])
    print(
        f"\n{name} {dtype}: max|Δ| {result.max_abs:.2e} mean {result.mean_abs:.2e}, "
        f"identical {result.identical_tokens}, first divergence {result.first_divergence}"
    )
    assert not result.failed, result


def test_shift_layouts_use_both_modes(outcomes: dict[tuple[str, str], LayoutOutcome]) -> None:
    """L6/L8 (threshold 16): prefill steps BASE, decode steps SHIFT; L7: every step SHIFT."""
    for name in ("L6", "L8"):
        modes = outcomes[(name, "float64")].modes
        assert modes[StepMode.BASE] > 0 and modes[StepMode.SHIFT] > 0, (name, modes)
    assert set(outcomes[("L7", "float64")].modes) == {StepMode.SHIFT}


def _steps(outcome: LayoutOutcome) -> int:
    return len({r.step for r in outcome.records})


@pytest.mark.parametrize(
    ("name", "per_step"),
    [
        ("L1", {("all_reduce", "tp"): 1 + 2 * LAYERS, ("all_gather", "tp"): 1}),
        ("L2", {("all_to_all", "sp"): 2 * LAYERS, ("all_gather", "sp"): 1}),
        (
            "L3",
            {
                ("all_reduce", "tp"): 1 + 2 * LAYERS,
                ("all_to_all", "sp"): 2 * LAYERS,
                ("all_gather", "sp"): 1,
                ("all_gather", "tp"): 1,
            },
        ),
        ("L7", {("all_reduce", "shift"): 1 + 2 * LAYERS, ("all_gather", "shift"): 1}),
    ],
    ids=["TP", "Ulysses", "SPxTP", "SHIFT"],
)
def test_collective_counts_per_mode(
    outcomes: dict[tuple[str, str], LayoutOutcome], name: str, per_step: dict[tuple[str, str], int]
) -> None:
    """docs/parallel.md §5.3: counts per forward step, times the number of steps (every step samples)."""
    outcome = outcomes[(name, "float64")]
    steps = _steps(outcome)
    assert outcome.collectives == Counter({key: count * steps for key, count in per_step.items()})


@pytest.mark.parametrize("name", [c.name for c in PACKED if c.drafter == "none"])
def test_packed_forward_makes_the_reference_collectives(
    outcomes: dict[tuple[str, str], LayoutOutcome], name: str
) -> None:
    """The fused forward's structure calls the same collectives, on the same groups, as often."""
    packed, reference = outcomes[(f"{name}/packed", "float64")], outcomes[(name, "float64")]
    assert packed.collectives == reference.collectives
    assert packed.modes == reference.modes


@pytest.mark.parametrize("world", [2, 4])
def test_ulysses_exchanges(world: int) -> None:
    for figures in spawn_ranks(check_exchanges, world_size=world, timeout_s=120):
        assert values(figures) == {
            "seq_to_heads_equals_oracle": 1.0,
            "round_trip_bitwise": 1.0,
            "all_gather_token_order": 1.0,
        }
        _all_passed(figures)


@pytest.mark.parametrize("sizes", [(2, 2), (4, 1)], ids=["S2xT2", "S4xT1"])
def test_kv_cache_is_the_same_in_base_and_shift_mode(sizes: tuple[int, int]) -> None:
    """docs/parallel.md §3.3 T2: per rank and layer, K and V at the prompt's slots agree to 1e-12."""
    for figures in spawn_ranks(check_kv_invariance, sizes, world_size=4, timeout_s=120):
        assert values(figures)["finite"] == 1.0
        assert values(figures)["max_abs"] <= 1e-12, figures
        _all_passed(figures)


@pytest.mark.parametrize(("world", "sizes"), [(2, (2, 1)), (4, (2, 2))], ids=["S2xT1", "S2xT2"])
def test_comm_volumes_equal_the_formulas(world: int, sizes: tuple[int, int]) -> None:
    """docs/parallel.md §2.4 and §5.3: every BASE and SHIFT step's CountingComm elements and bytes per
    (op, group) equal ``comm_volume`` exactly; call counts per op family agree with CommDebugMode."""
    for figures in spawn_ranks(check_volumes, sizes, world_size=world, timeout_s=120):
        assert values(figures) == {
            "volumes_equal_formulas": 1.0,
            "bytes_equal_formulas": 1.0,
            "both_modes_seen": 1.0,
            "comm_debug_mode_agrees": 1.0,
        }
        _all_passed(figures)


@pytest.mark.parametrize("kernels", ["reference", "packed"])
def test_cross_mode_steps_t3(kernels: str) -> None:
    """docs/parallel.md §3.3 T3 (S2×T2, threshold 8): the modes BASE, 5×SHIFT, BASE, 2×SHIFT as
    specified; logits ≤ 1e-9 of the single-rank baseline and identical greedy tokens."""
    for figures in spawn_ranks(check_cross_mode, kernels, world_size=4, timeout_s=180):
        found = values(figures)
        assert found["modes_as_specified"] == 1.0
        assert found["rows_compared"] == 1.0
        assert found["tokens_identical"] == 1.0
        assert found["max_abs"] <= 1e-9, figures
        _all_passed(figures)


def test_shift_logits_come_back_in_vocab_order() -> None:
    """docs/parallel.md §3.5: corrected gather ≡ baseline; the seed's raw gather swaps shards 1 and 2."""
    for figures in spawn_ranks(check_logits_order, world_size=4, timeout_s=120):
        found = values(figures)
        assert found["fixed_max_abs"] <= 1e-9
        assert found["raw_vs_swapped_max_abs"] <= 1e-9
        assert found["raw_vs_baseline_max_abs"] > 1e-3  # the fixture really reintroduces the bug
        _all_passed(figures)


def test_interleaved_runners_equal_their_solo_runs_and_touch_no_globals() -> None:
    """docs/runner.md §1.4 item 4 (world 4): SP2×TP2 with shift and TP4 on the same ranks, stepped
    alternately; no arctic_ref module global changes while they run."""
    for figures in spawn_ranks(check_interleaved_layouts, world_size=4, timeout_s=300):
        assert values(figures) == {"interleaved_equal_solo": 1.0, "layouts_agree": 1.0, "unchanged_globals": 1.0}, (
            figures
        )
        _all_passed(figures)
