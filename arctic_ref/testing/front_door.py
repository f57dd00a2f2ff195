"""The one list of checks behind every front door. ``arctic-ref check`` runs ``our_checks``,
``arctic-ref check --impl`` and the pytest plugin run ``component_checks`` on a ``MODULE:ATTR`` of
yours; all three run each ``Check`` with ``run_check`` and report ``Verdict`` values. A check is
named ``<component>/<id>``, defined once, in its component's module."""

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from arctic_ref.check_options import COMPONENTS, TARGET_COMPONENTS, CheckOptions, Component, TargetComponent
from arctic_ref.testing.check import Check, Verdict, run_check
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
        from arctic_ref.testing.components import suffix_tree

        return suffix_tree.tree_checks(
            None if value is None else suffix_tree.load_tree(value, options, base_dir), options
        )
    if component == "suffix-cache":
        from arctic_ref.testing.components import suffix_cache

        return suffix_cache.cache_checks(
            None if value is None else suffix_cache.load_cache(value, options, base_dir), options
        )
    if component == "sampler":
        from arctic_ref.testing.sampler import checks as sampler

        return sampler.checks(None if value is None else sampler.load(value, options, base_dir), options)
    if component == "drafter":
        from arctic_ref.testing.components import drafter

        return drafter.drafter_checks(
            None if value is None else drafter.load_drafter(value, options, base_dir), options
        )
    if component == "exchange":
        from arctic_ref.testing.components import exchange

        return exchange.exchange_checks(
            None if value is None else exchange.load_exchange_target(value, options, base_dir), options
        )
    if component == "engine":
        from arctic_ref.testing.components import live_engine

        return live_engine.engine_checks(
            None if value is None else live_engine.load_engine_target(value, options, base_dir), options
        )
    if value is not None:
        raise TargetError(f"{options.option(component)}={value}: the {component} component checks arctic_ref's only")
    from arctic_ref.testing.components import model

    return model.model_checks(options)


RUN_ORDER: tuple[Component, ...] = ("suffix-tree", "suffix-cache", "sampler", "drafter", "model", "exchange", "engine")
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
        raise ValueError(f"unknown batteries {unknown}; known: {known}")
    return [check for check in checks if wanted & set(_names(check))]


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


def run_checks(checks: Sequence[Check], progress: Callable[[str], None], *, source: str = "") -> list[CheckRun]:
    """Each check in turn under its time bound, with a progress line before and after."""
    components: dict[str, set[str]] = {}
    for check in checks:
        components.setdefault(check.id, set()).add(check.component)
    runs = []
    for index, check in enumerate(checks, start=1):
        name = check.qualified_id if len(components[check.id]) > 1 else check.id
        progress(f"[{index}/{len(checks)}] {name} ...")
        began = time.perf_counter()
        verdict = run_check(check)
        seconds = time.perf_counter() - began
        progress(f"[{index}/{len(checks)}] {name}: {verdict.outcome} ({seconds:.1f} s)")
        runs.append(CheckRun(check=check, verdict=verdict, seconds=seconds, source=source, name=name))
    return runs
