"""``load_target``: import ``MODULE:ATTR`` the way the user's own test run would, with one-line
errors that name the option, the value and what was wrong."""

import importlib
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


class TargetError(ValueError):
    """A ``MODULE:ATTR`` that does not import, or names the wrong kind of object; one line."""


def load_target(option: str, value: str, *, base_dir: Path | None = None) -> Any:
    """The object ``value`` = ``MODULE:ATTR`` names (``ATTR`` may be dotted). ``base_dir`` (the
    invocation directory) goes first on ``sys.path`` when absent, as ``python -m pytest`` does."""
    module_name, sep, attr = value.partition(":")
    if not sep or not module_name or not attr:
        raise TargetError(f"{option}={value}: expected MODULE:ATTR, e.g. mypkg.cache:make_cache")
    if base_dir is not None and str(base_dir) not in sys.path:
        sys.path.insert(0, str(base_dir))
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as error:  # any failure to import is the user's to fix, in one line
        raise TargetError(
            f"{option}={value}: module {module_name!r} does not import ({type(error).__name__}: {error})"
        ) from None
    for part in attr.split("."):
        if not hasattr(target, part):
            raise TargetError(f"{option}={value}: {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    return target


def require_callable(option: str, value: str, target: Any) -> Callable[..., Any]:
    if not callable(target):
        raise TargetError(f"{option}={value}: {type(target).__name__} object is not callable")
    return target  # type: ignore[no-any-return]


def arity(option: str, value: str, factory: Callable[..., Any], parameters: int) -> int:
    """How to call ``factory``: with ``parameters`` positional arguments if its signature allows,
    else with none; a ``TargetError`` if it allows neither."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return parameters  # a builtin or extension type: assume upstream's constructor
    for count in (parameters, 0):
        try:
            signature.bind(*range(count))
        except TypeError:
            continue
        return count
    raise TargetError(f"{option}={value}: takes neither no arguments nor {parameters} ({signature})")


def build(option: str, value: str, factory: Callable[..., Any], *args: Any) -> Any:
    """``factory(*args)``; an exception becomes a ``TargetError`` naming it."""
    try:
        return factory(*args)
    except Exception as error:  # a factory that raises is a usage error, reported in one line
        call = f"{value}({', '.join(map(repr, args))})"
        raise TargetError(f"{option}={value}: {call} raised {type(error).__name__}: {error}") from None


def require_methods(option: str, value: str, target: object, methods: tuple[str, ...]) -> None:
    missing = [m for m in methods if not callable(getattr(target, m, None))]
    if missing:
        raise TargetError(f"{option}={value}: the {type(target).__name__} it returns lacks {', '.join(missing)}")
