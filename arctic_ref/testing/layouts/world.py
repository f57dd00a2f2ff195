"""One spawn of a world size as the ``layouts`` component runs it: the layout cases of that world,
then the multi-rank checks (exchanges, volumes, and at world 4 the theorems T2 and T3, shift-logit
order and isolation). The rank worker is a module-level function so ``spawn_ranks`` can start it by
name."""

from dataclasses import dataclass

from arctic_ref.parallel.launch import RankInfo
from arctic_ref.testing.layout_matrix import LayoutCase, LayoutOutcome, run_case
from arctic_ref.testing.layouts.cross_mode import check_cross_mode
from arctic_ref.testing.layouts.exchanges import check_exchanges, check_kv_invariance, check_logits_order
from arctic_ref.testing.layouts.isolation import check_interleaved_layouts
from arctic_ref.testing.layouts.rank_figure import RankFigure, prefixed
from arctic_ref.testing.layouts.volume_check import check_volumes


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldOutcome:
    """Everything one spawn of a world size produced, as rank 0 saw it: its layout outcomes and its
    check figures. The other ranks' figures are not returned (a rank that raises fails the spawn);
    ``conformance/`` asserts the checks on every rank."""

    layouts: list[LayoutOutcome]
    checks: tuple[RankFigure, ...]


def run_world(info: RankInfo, cases: tuple[LayoutCase, ...]) -> WorldOutcome | None:
    """The layout cases of this world size, then the exchange and volume checks, and at world 4
    KV invariance (T2), cross-mode steps (T3), shift-logit order and isolation: one spawn per world
    size, as ``arctic-ref check`` runs it."""
    layouts = [run_case(info, case) for case in cases]
    world = info.world_size
    checks = (
        *prefixed("exchanges", check_exchanges(info)),
        *prefixed(f"volumes.S2xT{world // 2}", check_volumes(info, (2, world // 2))),
    )
    if world == 4:
        for kernels in ("reference", "packed"):
            checks += prefixed(f"cross-mode-T3.{kernels}", check_cross_mode(info, kernels))
        for sp, tp in ((2, 2), (4, 1)):
            checks += prefixed(f"kv-invariance.S{sp}xT{tp}", check_kv_invariance(info, (sp, tp)))
        checks += prefixed("logits-order", check_logits_order(info))
        checks += prefixed("no-globals", check_interleaved_layouts(info))
    return WorldOutcome(layouts=layouts, checks=checks) if info.rank == 0 else None
