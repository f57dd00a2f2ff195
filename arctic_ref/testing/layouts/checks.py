"""The layouts component: checks of arctic_ref's own parallel layouts, which take no implementation
of yours (the ``exchange`` component runs an exchange of yours inside them): the group tables, the
KV-head theorem T1, the CUDA-graph tables, padding, and the multi-process matrix (every layout
against L0, collectives counted, exchanges and volumes, speculative losslessness)."""

import logging
from functools import partial
from typing import Final

from arctic_ref.check_options import CheckOptions
from arctic_ref.testing.check import Check, CheckRow, RunFailed, SharedRun, Verdict, checks_from_rows
from arctic_ref.testing.layouts.conformance import (
    cudagraph_tables,
    kv_heads_theorem,
    layout_conformance,
    layout_tables,
    padding_neutral,
)

logger = logging.getLogger(__name__)


def checks(options: CheckOptions) -> list[Check]:
    """The tables, then the four rows of the matrix."""
    return [*_tables(), *_matrix()]


def _tables() -> list[Check]:
    rows: list[CheckRow] = [
        (
            "layout",
            "layout: group tables S·T ≤ 16, messages V1-V10",
            "TP, SP and shift groups consistent for every S·T ≤ 16; the validation messages V1-V10",
            layout_tables,
        ),
        (
            "heads",
            "heads: KV-cache invariance T1 (base vs shift)",
            "every rank holds the same KV heads in base and shift mode (theorem T1)",
            kv_heads_theorem,
        ),
        (
            "cudagraph",
            "cudagraph: pad tables, capture plans, runtime examples",
            "pad tables, capture plans and the runtime examples of docs/parallel.md",
            cudagraph_tables,
        ),
        (
            "padding",
            "padding: forced graph padding leaves real rows unchanged",
            "padded rows never change a real row's logits",
            padding_neutral,
        ),
    ]
    return checks_from_rows("layouts", rows)


MATRIX_ROWS: Final = (
    ("layouts", "layouts: L1-L8 vs L0 (f64), L3/L7 f32+bf16, L3/L6 packed", "every layout gives L0's tokens"),
    ("collectives", "collectives: counts per step and mode", "each step makes exactly its layout's collectives"),
    (
        "exchanges",
        "exchanges, volumes, kv-invariance T2, cross-mode T3, logits-order, no-globals (world 2, 4)",
        "exchanges, volumes and the theorems T2, T3 on 2 and 4 ranks",
    ),
    ("spec-lossless", "spec-lossless: 7 drafters on L0, L3, L6", "greedy output with each drafter equals L0's"),
)


def _matrix() -> list[Check]:
    """The four rows of one multi-process run (world 1, 2, 4), selected together as ``layouts``."""
    group: SharedRun[None, list[Verdict]] = SharedRun(lambda _: layout_conformance(_progress))

    def row(index: int) -> Verdict:
        verdicts = group.get(None)
        if isinstance(verdicts, RunFailed):
            return Verdict(passed=False, detail=verdicts.message)
        return verdicts[index]

    return [
        Check(component="layouts", id=check_id, title=title, meaning=meaning, run=partial(row, index), group="layouts")
        for index, (check_id, title, meaning) in enumerate(MATRIX_ROWS)
    ]


def _progress(message: str) -> None:
    logger.info(message)
