"""The bad-input table as one check (docs/suffix-decoding.md §2.2): each row's call on a fresh,
seeded object must raise ValueError or TypeError and change nothing; upstream's deviations X1–X7
are reported as known differences. The tree's and the cache's tables both run this way."""

from collections.abc import Callable
from typing import Any

from arctic_ref.testing.check import Verdict

PROBES = ([1], [1, 2], [2, 3], [3, 1, 2], [5], [1, 2, 3, 4])
"""Contexts whose drafts stand for an opaque tree's state."""


def bad_input_verdict(rows: list[tuple[str, str, str]], total: int, what: str) -> Verdict:
    """rows: (label, X id or "", problem) for every row that behaved unlike arctic_ref. Any row fails
    the verdict; it names the X ids as a known difference only when they explain every row, and
    ``settle`` decides (under ``strict``) whether that passes."""
    unexplained = [r for r in rows if not r[1]]
    known = sorted({r[1] for r in rows if r[1]})
    detail = "; ".join(f"{label}: {problem}" + (f" ({x})" if x else "") for label, x, problem in rows)
    return Verdict(
        passed=not rows,
        compared=f"{total} rejected inputs on {what}: each must raise ValueError or TypeError and change nothing",
        count=total,
        detail=detail,
        known_difference="" if unexplained else ", ".join(known),  # a failure X ids do not fully explain is not excused
    )


def bad_input_rows(
    table: tuple[tuple[str, str, Callable[[Any], object]], ...],
    fresh: Callable[[], Any],
    state: Callable[[Any], object],
) -> list[tuple[str, str, str]]:
    """(label, X id, problem) for every row of ``table`` whose call on a ``fresh()`` object was
    accepted, raised something else than ValueError or TypeError, or changed ``state``."""
    rows = []
    for label, x_id, call in table:
        target = fresh()
        before = state(target)
        try:
            call(target)
        except (ValueError, TypeError):
            if state(target) != before:
                rows.append((label, x_id, "raised, but the state changed"))
        except Exception as error:  # any other exception is a different behaviour, reported
            rows.append((label, x_id, f"raised {type(error).__name__}, not ValueError or TypeError"))
        else:
            rows.append((label, x_id, "accepted"))
    return rows
