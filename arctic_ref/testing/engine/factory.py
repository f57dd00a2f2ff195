"""The engine factory a ``MODULE:ATTR`` names and its package's ``SamplingParams``, found the same
way in the checking process (``engine_loading``, which shows the user's value imports) and in each
worker (``worker``, which builds engines with them)."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arctic_ref.testing.loading import TargetError, load_target, require_callable


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineFactory:
    """What builds an engine and what builds its sampling parameters."""

    build: Callable[..., Any]
    """``build(**vllm_kwargs)``: an engine with ``generate`` and ``get_metrics``."""
    sampling_params: Callable[..., Any]
    """``sampling_params(**kwargs)``: one request's sampling parameters."""


def load_factory(option: str, value: str, *, base_dir: Path | None) -> EngineFactory:
    """The factory ``value`` = ``MODULE:ATTR`` names and its ``SamplingParams``; a one-line
    ``TargetError`` naming ``option`` when either is missing."""
    build = require_callable(option, value, load_target(option, value, base_dir=base_dir))
    return EngineFactory(build=build, sampling_params=find_sampling_params(option, value, build))


def find_sampling_params(option: str, value: str, factory: Callable[..., Any]) -> Callable[..., Any]:
    """The engine package's own ``SamplingParams``: an attribute of the factory, else of the module
    ``value`` names, else of the factory's module, else of its top-level package."""
    found = getattr(factory, "SamplingParams", None)
    if callable(found):
        return found  # type: ignore[no-any-return]
    module_of = getattr(factory, "__module__", None) or ""
    for name in dict.fromkeys((value.partition(":")[0], module_of, module_of.split(".")[0])):
        if not name:
            continue
        try:
            found = load_target(option, f"{name}:SamplingParams")
        except TargetError:
            continue
        if callable(found):
            return found  # type: ignore[no-any-return]
    raise TargetError(f"{option}={value}: found no SamplingParams in {value.partition(':')[0]!r} or beside its factory")
