"""``run_impl_checks``: ``arctic-ref check --impl COMPONENT=MODULE:ATTR`` — the plugin's checks of a
user's implementation, as report rows."""

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import get_args

from arctic_ref.testing.battery import BatteryResult, Outcome
from arctic_ref.testing.targets.loading import TargetError
from arctic_ref.testing.targets.registry import TargetOptions, target_checks
from arctic_ref.testing.targets.verdict import Component, TargetCheck, failure_text, run_check


def parse_impl(spec: str) -> tuple[Component, str]:
    """``COMPONENT=MODULE:ATTR``; ``TargetError`` naming the flag otherwise."""
    component, sep, value = spec.partition("=")
    known = get_args(Component)
    if not sep or component not in known:
        raise TargetError(f"--impl {spec}: expected COMPONENT=MODULE:ATTR with COMPONENT one of {', '.join(known)}")
    return component, value  # type: ignore[return-value]


def build_impl_checks(specs: Sequence[str], options: TargetOptions, base_dir: Path) -> list[tuple[str, TargetCheck]]:
    """(the ``--impl`` it came from, check) for every check of every ``--impl``, built before any
    runs (a bad one is a usage error)."""
    checks: list[tuple[str, TargetCheck]] = []
    for spec in specs:
        component, value = parse_impl(spec)
        checks += [(spec, check) for check in target_checks(component, value, options, base_dir=base_dir)]
    return checks


def run_impl_checks(checks: Sequence[tuple[str, TargetCheck]], progress: Callable[[str], None]) -> list[BatteryResult]:
    rows = []
    for index, (spec, check) in enumerate(checks, start=1):
        progress(f"[{index}/{len(checks)}] {spec} {check.id} ...")
        began = time.perf_counter()
        verdict = run_check(check)
        outcome = Outcome.SKIP if verdict.skipped else Outcome.PASS if verdict.passed else Outcome.FAIL
        detail = verdict.skipped or ("" if verdict.passed else failure_text(check, verdict))
        if verdict.passed and verdict.known_difference:
            detail = f"known upstream differences {verdict.known_difference}: {verdict.detail}"
        rows.append(
            BatteryResult(
                name=f"{check.component} {check.id}",
                outcome=outcome,
                compared=1,
                figures={},
                detail=detail,
                seconds=time.perf_counter() - began,
                battery_id=spec,
            )
        )
    return rows
