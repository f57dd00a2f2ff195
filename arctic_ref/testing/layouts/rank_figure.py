"""``RankFigure``: one figure a rank check measured, with the bound it must meet, decided where it is
measured (so a battery reads ``passed`` instead of decoding names)."""

from collections.abc import Iterable
from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True, kw_only=True)
class RankFigure:
    name: str
    value: float
    bound: str
    """What ``value`` had to satisfy: "true", "<= 1e-12", "> 0.001"."""
    passed: bool
    detail: str = ""


def holds(name: str, condition: bool, detail: str = "") -> RankFigure:
    """A yes/no figure: value 1.0 when ``condition`` holds."""
    return RankFigure(name=name, value=float(condition), bound="true", passed=condition, detail=detail)


def at_most(name: str, value: float, limit: float) -> RankFigure:
    return RankFigure(name=name, value=value, bound=f"<= {limit:g}", passed=value <= limit)


def above(name: str, value: float, limit: float) -> RankFigure:
    return RankFigure(name=name, value=value, bound=f"> {limit:g}", passed=value > limit)


def prefixed(prefix: str, figures: Iterable[RankFigure]) -> tuple[RankFigure, ...]:
    """The same figures named ``prefix.name``."""
    return tuple(replace(f, name=f"{prefix}.{f.name}") for f in figures)


def values(figures: Iterable[RankFigure]) -> dict[str, float]:
    """name → value, for assertions on the exact figures."""
    return {f.name: f.value for f in figures}
