"""The one list of checks behind every front door. ``arctic-ref check`` runs ``our_checks``,
``arctic-ref check --impl`` and the pytest plugin run ``component_checks`` on a ``MODULE:ATTR`` of
yours; all three run each ``Check`` with ``run_and_settle`` (which applies ``strict``) and report
``Verdict`` values. A check is named ``<component>/<id>``, defined once, in its component's
``checks.py``."""

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from arctic_ref.check_options import COMPONENTS, TARGET_COMPONENTS, CheckOptions, Component, TargetComponent
from arctic_ref.testing.check import Check, Verdict, run_and_settle
from arctic_ref.testing.loading import TargetError


def component_checks(
    component: Component, value: str | None, options: CheckOptions, *, base_dir: Path | None = None
) -> list[Check]:
    """The checks of ``component``: on the implementation ``value`` names (``MODULE:ATTR``, loaded
    and shown to have the component's surface first, else a one-line ``TargetError``), or on ours
    when ``value`` is None."""
    # Each component's module is imported when it is asked for, and not before: checking one
    # component never loads another's dependencies (the exchange's loads torch.distributed's
    # launcher, the suffix modules load Hypothesis's state machines).
    if component == "suffix-tree":
        from arctic_ref.testing.suffix_tree import checks as suffix_tree

        return suffix_tree.checks(None if value is None else suffix_tree.load(value, options, base_dir), options)
    if component == "suffix-cache":
        from arctic_ref.testing.suffix_cache import checks as suffix_cache

        return suffix_cache.checks(None if value is None else suffix_cache.load(value, options, base_dir), options)
    if component == "sampler":
        from arctic_ref.testing.sampler import checks as sampler

        return sampler.checks(None if value is None else sampler.load(value, options, base_dir), options)
    if component == "drafter":
        from arctic_ref.testing.drafter import checks as drafter

        return drafter.checks(None if value is None else drafter.load(value, options, base_dir), options)
    if component == "exchange":
        from arctic_ref.testing.exchange import checks as exchange

        return exchange.checks(None if value is None else exchange.load(value, options, base_dir), options)
    if component == "engine":
        from arctic_ref.testing.engine import checks as engine

        return engine.checks(None if value is None else engine.load(value, options, base_dir), options)
    if value is not None:
        raise TargetError(f"{options.option(component)}={value}: the {component} component checks arctic_ref's only")
    if component == "drafting":
        from arctic_ref.testing.drafting import checks as drafting

        return drafting.checks(options)
    if component == "layouts":
        from arctic_ref.testing.layouts import checks as layouts

        return layouts.checks(options)
    from arctic_ref.testing.model import checks as model

    return model.checks(options)


RUN_ORDER: tuple[Component, ...] = (
    "suffix-tree",
    "suffix-cache",
    "sampler",
    "drafting",
    "drafter",
    "model",
    "layouts",
    "exchange",
    "engine",
)
"""``arctic-ref check``'s order: the multi-process exchange matrix, then the whole engine, last."""
assert sorted(RUN_ORDER) == sorted(COMPONENTS)


def our_checks(options: CheckOptions) -> list[Check]:
    """Every component's checks on arctic_ref's own implementation (``arctic-ref check``)."""
    return [check for component in RUN_ORDER for check in component_checks(component, None, options)]


def select(checks: Sequence[Check], only: Iterable[str]) -> list[Check]:
    """The checks ``only`` names, in their order: each name is a check id (``layout``), a qualified
    id (``suffix-tree/bad-input``) or a group (``layouts``); an unknown name is a ``ValueError``
    listing the known ones."""
    wanted = set(only)
    names = {name for check in checks for name in _names(check)}
    unknown = sorted(wanted - names)
    if unknown:
        known = ", ".join(dict.fromkeys(name for check in checks for name in _names(check)))
        raise ValueError(f"unknown checks {unknown}; known: {known}")
    return [check for check in checks if wanted & set(_names(check))]


def select_each(built: Sequence[tuple[str, list[Check]]], only: Iterable[str]) -> list[tuple[str, list[Check]]]:
    """``select`` on the checks of every ``--impl`` together (a name is unknown when no ``--impl``
    has it), then each ``--impl``'s checks that ``only`` names."""
    chosen = {id(check) for check in select([check for _, checks in built for check in checks], only)}
    return [(spec, [check for check in checks if id(check) in chosen]) for spec, checks in built]


def _names(check: Check) -> tuple[str, ...]:
    return (check.id, check.qualified_id, *((check.group,) if check.group else ()))


def parse_impl(spec: str) -> tuple[TargetComponent, str]:
    """``COMPONENT=MODULE:ATTR``; ``TargetError`` naming the flag otherwise."""
    component, sep, value = spec.partition("=")
    for known in TARGET_COMPONENTS:
        if sep and component == known:
            return known, value
    raise TargetError(
        f"--impl {spec}: expected COMPONENT=MODULE:ATTR with COMPONENT one of {', '.join(TARGET_COMPONENTS)}"
    )


def impl_checks(specs: Sequence[str], options: CheckOptions, base_dir: Path) -> list[tuple[str, list[Check]]]:
    """(the ``--impl``, its checks) for every ``--impl``, all built before any runs (a bad one is a
    usage error)."""
    built = []
    for spec in specs:
        component, value = parse_impl(spec)
        built.append((spec, component_checks(component, value, options, base_dir=base_dir)))
    return built


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckRun:
    """One check, what it found, and how long it took: a row of the report."""

    check: Check
    verdict: Verdict
    seconds: float
    source: str = ""
    """The ``--impl`` it came from; empty for a check of ours."""
    name: str = ""
    """The check's id as the run shows it: bare, or ``component/id`` where the bare id names
    checks of several components in the run."""


def run_checks(
    checks: Sequence[Check], progress: Callable[[str], None], *, strict: bool, source: str = ""
) -> list[CheckRun]:
    """Each check in turn under its time bound, settled by ``strict`` (``run_and_settle``), with a
    progress line before and after."""
    components: dict[str, set[str]] = {}
    for check in checks:
        components.setdefault(check.id, set()).add(check.component)
    runs = []
    for index, check in enumerate(checks, start=1):
        name = check.qualified_id if len(components[check.id]) > 1 else check.id
        progress(f"[{index}/{len(checks)}] {name} ...")
        began = time.perf_counter()
        verdict = run_and_settle(check, strict=strict)
        seconds = time.perf_counter() - began
        progress(f"[{index}/{len(checks)}] {name}: {verdict.outcome} ({seconds:.1f} s)")
        runs.append(CheckRun(check=check, verdict=verdict, seconds=seconds, source=source, name=name))
    return runs
