"""The exchange component. Yours (an object with ``seq_to_heads`` and ``heads_to_seq`` over a
``Comm``, built on every rank by ``MODULE:FACTORY``) runs inside the reference forward over the
layout matrix (docs/parallel.md §5) against the single-rank baseline, greedy float64, token for
token, with the first divergence named (step, request, position, max |Δlogit|); gloo on CPU, NCCL on
GPUs. Ours is run by the ``layouts`` component (``arctic_ref.testing.layouts.checks``), whose matrix
runs those layouts and more with arctic_ref's exchange."""

import logging
from dataclasses import replace
from functools import partial
from pathlib import Path

import torch

from arctic_ref.check_options import Backend, CheckOptions
from arctic_ref.parallel.launch import RankInfo, spawn_ranks
from arctic_ref.testing.check import Check, RunFailed, SharedRun, Verdict
from arctic_ref.testing.layout_matrix import BY_NAME, LayoutOutcome, compare, load_exchange, run_cases

logger = logging.getLogger(__name__)
EXCHANGE_LAYOUTS = {
    "L2": "Ulysses SP = 2",
    "L3": "SP = 2 x TP = 2",
    "L4": "SP = 4 (KV heads replicated to the SP ranks)",
    "L6": "SP = 2 x TP = 2 with shift: BASE and SHIFT steps on one KV cache",
    "L7": "shift mode on every step (the exchange is unused: a control)",
    "L8": "SP = 2 with shift: mixed steps",
}


def _layout_checks(value: str, *, backend: Backend = "gloo", timeout_s: float = 600.0) -> list[Check]:
    """One check per layout of ``EXCHANGE_LAYOUTS`` with the exchange ``value`` names."""
    device = "cuda" if backend == "nccl" else "cpu"
    cases = {name: replace(BY_NAME[name], exchange=value, device=device) for name in EXCHANGE_LAYOUTS}
    baseline_case = replace(BY_NAME["L0"], device=device)

    def run_world(world: int) -> list[LayoutOutcome]:
        if world == 1:
            outcomes = run_cases(RankInfo(0, 1, backend), (baseline_case,))
        else:
            mine = tuple(c for c in cases.values() if c.world_size == world)
            outcomes = spawn_ranks(run_cases, mine, world_size=world, backend=backend, timeout_s=timeout_s)[0]
        assert outcomes is not None  # rank 0 returns its outcomes
        return outcomes

    worlds: SharedRun[int, list[LayoutOutcome]] = SharedRun(run_world)  # the baseline and one spawn per world size

    def check(name: str) -> Verdict:
        case = cases[name]
        if backend == "nccl" and case.world_size > torch.cuda.device_count():
            return Verdict(
                passed=True,
                compared=EXCHANGE_LAYOUTS[name],
                skipped=f"{name} needs {case.world_size} GPUs, {torch.cuda.device_count()} visible",
            )
        base, mine = worlds.get(1), worlds.get(case.world_size)
        if isinstance(base, RunFailed) or isinstance(mine, RunFailed):
            failed = base if isinstance(base, RunFailed) else mine
            assert isinstance(failed, RunFailed)
            return Verdict(passed=False, compared=EXCHANGE_LAYOUTS[name], detail=failed.message)
        outcome = next(o for o in mine if o.case.name == name)
        result = compare(base[0], outcome)
        return Verdict(
            passed=not result.failed and result.identical_tokens,
            compared=f"{name} ({EXCHANGE_LAYOUTS[name]}) vs L0, float64 greedy on {backend}: {result.compared_rows} "
            f"logit rows, max |Δ| {result.max_abs:.1e}",
            detail=""
            if result.identical_tokens and not result.failed
            else f"first divergence: {result.first_divergence}",
            replay=f"run_layout(replace(BY_NAME[{name!r}], exchange={value!r})) from arctic_ref.testing.layout_matrix",
        )

    return [
        Check(
            component="exchange",
            id=f"layout-{name}",
            meaning=f"{meaning}: L0's tokens with your exchange",
            run=partial(check, name),
            seconds=timeout_s,
        )
        for name, meaning in EXCHANGE_LAYOUTS.items()
    ]


def load(value: str, options: CheckOptions, base_dir: Path | None) -> str:
    """``value`` itself (every rank imports it by name), once built here: a bad value is a usage
    error, not six failed checks."""
    load_exchange(value)
    return value


def checks(value: str | None, options: CheckOptions) -> list[Check]:
    """Yours: one check per layout of ``EXCHANGE_LAYOUTS``. Ours (``None``): none here, since the
    ``layouts`` component's matrix runs every layout with arctic_ref's exchange."""
    if value is None:
        return []
    return _layout_checks(value, backend=options.backend)
