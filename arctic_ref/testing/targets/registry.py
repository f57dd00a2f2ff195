"""``target_checks``: from a component and a ``MODULE:ATTR`` to its named checks, after the target
was imported and shown to have the required surface (else a one-line ``TargetError``). The pytest
plugin and ``arctic-ref check --impl`` both build their checks here."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import settings

from arctic_ref.testing.layouts.matrix import load_exchange
from arctic_ref.testing.targets.drafter_targets import drafter_checks
from arctic_ref.testing.targets.exchange_targets import Backend, exchange_checks
from arctic_ref.testing.targets.loading import (
    TargetError,
    arity,
    build,
    load_target,
    require_callable,
    require_methods,
)
from arctic_ref.testing.targets.sampler_targets import Level, ProfileName, sampler_checks
from arctic_ref.testing.targets.suffix_targets import CACHE_METHODS, TREE_METHODS, cache_checks, tree_checks
from arctic_ref.testing.targets.verdict import Component, TargetCheck


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetOptions:
    level: Level = "quick"
    device: str = "cpu"
    profile: ProfileName = "intended"
    strict: bool = False
    """Fail on documented upstream differences (X1–X7) too."""
    statistics: bool = True
    """Run the sampler kit's statistical checks (S1–S5)."""
    backend: Backend = "gloo"
    """The exchange's process groups: gloo on CPU, or NCCL (one GPU per rank)."""
    hypothesis_profile: str = "ci"
    """A registered Hypothesis profile (``arctic_ref.testing.profiles``): dev, ci or nightly."""
    option_prefix: str = "--arctic-ref-"
    """How the option is named in messages: ``--arctic-ref-`` for pytest, ``--impl `` for the CLI."""


def option_name(component: Component, options: TargetOptions) -> str:
    return f"{options.option_prefix}{component}"


def target_checks(
    component: Component, value: str, options: TargetOptions, *, base_dir: Path | None = None
) -> list[TargetCheck]:
    """The checks of ``component`` on the implementation ``value`` names."""
    option = option_name(component, options)
    target = require_callable(option, value, load_target(option, value, base_dir=base_dir))
    profile = settings.get_profile(options.hypothesis_profile)
    if component == "sampler":
        return sampler_checks(
            target, level=options.level, device=options.device, profile=options.profile, statistics=options.statistics
        )
    if component == "exchange":
        load_exchange(value)  # in this process first: a bad value is a usage error, not six failed checks
        return exchange_checks(value, backend=options.backend)
    if component == "drafter":
        params = arity(option, value, target, 1)
        probe = build(option, value, target, *([256] * params))
        if not callable(getattr(probe, "propose", None)) and not callable(getattr(probe, "propose_with_hidden", None)):
            raise TargetError(
                f"{option}={value}: the {type(probe).__name__} it returns has neither propose nor propose_with_hidden"
            )
        return drafter_checks(lambda max_model_len: build(option, value, target, *([max_model_len] * params)))
    if component == "suffix-tree":
        return tree_checks(_tree_factory(option, value, target), profile=profile, strict=options.strict)
    make, fixed = _cache_factory(option, value, target)
    return cache_checks(make, profile=profile, strict=options.strict, fixed=fixed)


def _tree_factory(option: str, value: str, factory: Callable[..., Any]) -> Callable[[int], Any]:
    params = arity(option, value, factory, 1)
    require_methods(option, value, build(option, value, factory, *([64] * params)), TREE_METHODS)
    if params:
        return lambda depth: factory(depth)
    return lambda depth: factory()


def _cache_factory(
    option: str, value: str, factory: Callable[..., Any]
) -> tuple[Callable[[int, int], Any], tuple[int, int] | None]:
    params = arity(option, value, factory, 2)
    probe = build(option, value, factory, *((64, -1)[:params]))
    require_methods(option, value, probe, CACHE_METHODS)
    if params:
        return (lambda depth, limit: factory(depth, limit)), None
    fixed = (int(getattr(probe, "max_tree_depth", 64)), int(getattr(probe, "max_cached_requests", -1)))
    return (lambda depth, limit: factory()), fixed
