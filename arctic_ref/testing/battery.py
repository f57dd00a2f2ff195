"""What a battery of ``arctic-ref check`` returns: one row of the report."""

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

Progress = Callable[[str], None]


class Outcome(StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"


@dataclass(frozen=True, slots=True, kw_only=True)
class BatteryResult:
    """One row of the report."""

    name: str
    outcome: Outcome
    compared: int
    """How many results were compared with an oracle."""
    figures: dict[str, str] = field(default_factory=dict)
    detail: str = ""
    seconds: float = 0.0
    battery_id: str = ""
    """The id ``--only`` (or ``--impl``'s component) that produced this row."""
