"""``arctic-ref check``: the batteries, each defined beside the kit it runs, in the order they run,
and the report table."""

import time
from collections.abc import Callable
from dataclasses import replace

from arctic_ref.testing.battery import BatteryResult, Outcome, Progress
from arctic_ref.testing.drafts.draft_batteries import (
    draft_replays_in_runner,
    draft_selection,
    speculator_checks,
    suffix_runner_rules,
)
from arctic_ref.testing.hf.hf_batteries import model_vs_transformers
from arctic_ref.testing.layouts.layout_batteries import (
    cudagraph_tables,
    kv_heads_theorem,
    layout_conformance,
    layout_tables,
    padding_neutral,
)
from arctic_ref.testing.rejection.rejection_batteries import rejection_kit
from arctic_ref.testing.suffix.suffix_batteries import (
    suffix_integrity,
    suffix_replay,
    suffix_vs_naive,
    suffix_vs_upstream,
)


def _timed(run: Callable[[], BatteryResult]) -> BatteryResult:
    began = time.perf_counter()
    result = run()
    return replace(result, seconds=time.perf_counter() - began)


def all_batteries() -> list[tuple[str, Callable[[], BatteryResult]]]:
    """Every single-process battery of ``arctic-ref check``, by id, in the order it runs them; the
    multi-process ``layouts`` group (layouts, collectives, exchanges, spec-lossless) runs last."""
    return [
        ("suffix-naive", suffix_vs_naive),
        ("suffix-upstream", suffix_vs_upstream),
        ("suffix-replay-path", lambda: suffix_replay(False, 60)),
        ("suffix-replay-tree", lambda: suffix_replay(True, 20)),
        ("suffix-invariants", suffix_integrity),
        ("rejection-kit", rejection_kit),
        ("draft-selection", draft_selection),
        ("draft-runner", draft_replays_in_runner),
        ("layout", layout_tables),
        ("heads", kv_heads_theorem),
        ("cudagraph", cudagraph_tables),
        ("model-hf", model_vs_transformers),
        ("suffix-runner", suffix_runner_rules),
        ("padding", padding_neutral),
        ("speculator", speculator_checks),
    ]


def run_batteries(progress: Progress, only: frozenset[str] | None = None) -> list[BatteryResult]:
    """The selected batteries (all by default); unknown ids → ValueError naming them."""
    unknown = sorted((only or frozenset()) - set(BATTERY_IDS))
    if unknown:
        raise ValueError(f"unknown batteries {unknown}; known: {', '.join(BATTERY_IDS)}")
    results = []
    batteries = [(label, battery) for label, battery in all_batteries() if only is None or label in only]
    with_layouts = only is None or "layouts" in only
    total = len(batteries) + with_layouts  # the progress counter counts ids, as --only does
    for index, (label, battery) in enumerate(batteries, start=1):
        progress(f"[{index}/{total}] {label} ...")
        try:
            result = _timed(battery)
        except Exception as error:  # a crashing battery is a failed battery, reported with its error
            result = BatteryResult(
                name=label, outcome=Outcome.FAIL, compared=0, detail=f"{type(error).__name__}: {error}"
            )
        progress(f"[{index}/{total}] {label}: {result.outcome} ({result.seconds:.1f} s)")
        results.append(replace(result, battery_id=label))
    if not with_layouts:
        return results
    progress(
        f"[{total}/{total}] layouts: layouts, collectives, exchanges, spec-lossless (multi-process, world 1, 2, 4) ..."
    )
    try:
        group = layout_conformance(progress)
    except Exception as error:  # a crashing battery is a failed battery
        group = [
            BatteryResult(name="layouts", outcome=Outcome.FAIL, compared=0, detail=f"{type(error).__name__}: {error}")
        ]
    progress(f"[{total}/{total}] layouts: {', '.join(str(r.outcome) for r in group)} ({group[0].seconds:.1f} s)")
    return results + [replace(r, battery_id="layouts") for r in group]


def format_report(results: list[BatteryResult]) -> str:
    """A plain-text table: one row per result, with the ``--only`` id that produced it."""
    rows = [("id", "battery", "result", "compared", "seconds", "figures")]
    for r in results:
        figures = ", ".join(f"{k} {v}" for k, v in r.figures.items())
        rows.append(
            (
                r.battery_id,
                r.name,
                str(r.outcome),
                str(r.compared),
                f"{r.seconds:.1f}",
                figures + (f" | {r.detail}" if r.detail else ""),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = []
    for n, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:5])) + "  " + row[5])
        if n == 0:
            lines.append("-" * (sum(widths) + 10 + len(row[5])))
    return "\n".join(lines)


BATTERY_IDS = (*(label for label, _ in all_batteries()), "layouts")
"""The ids ``--only`` accepts: ``all_batteries()`` in order, then the multi-process group."""
