"""The report of a check run, in one place: the plain-text table ``arctic-ref check`` prints, and
the same rows as Markdown (``.md``), JSON (``.json``) or JUnit XML (``.xml``), chosen by the path's
suffix, for CI systems that read one of them."""

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from arctic_ref.testing.check import Outcome, failure_text
from arctic_ref.testing.front_door import CheckRun

SUFFIXES = (".md", ".json", ".xml")


def check_report_path(path: Path) -> None:
    """ValueError naming the suffix when it is not one of ``SUFFIXES`` (call it before a long run)."""
    if path.suffix not in SUFFIXES:
        raise ValueError(f"--report {path}: the suffix must be one of {', '.join(SUFFIXES)}, got {path.suffix!r}")


def detail_of(run: CheckRun) -> str:
    """The row's note: the known upstream differences of a pass, the reason of a skip, the failure
    text of a failure (what was compared, the first difference, how to replay)."""
    verdict = run.verdict
    if verdict.skipped:
        return verdict.skipped
    if verdict.passed:
        if verdict.known_difference:
            return f"known upstream differences {verdict.known_difference}: {verdict.detail}"
        return verdict.detail
    if run.source:  # a check of yours: the whole message, as the plugin prints it
        return failure_text(run.check, verdict)
    return verdict.detail


def format_report(runs: Sequence[CheckRun]) -> str:
    """A plain-text table, one row per check, one line per row (a note's first line; the whole note
    of every failed row follows the table)."""
    rows = [("id", "check", "result", "compared", "seconds", "figures")]
    for run in runs:
        figures = ", ".join(f"{k} {v}" for k, v in run.verdict.figures.items())
        note = detail_of(run)
        first = note.splitlines()[0] if note else ""
        more = " (more below)" if len(note.splitlines()) > 1 else ""
        rows.append(
            (
                run.source or run.name or run.check.qualified_id,
                run.check.label,
                str(run.verdict.outcome),
                str(run.verdict.count),
                f"{run.seconds:.1f}",
                figures + (f" | {first}{more}" if first else ""),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = []
    for n, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:5])) + "  " + row[5])
        if n == 0:
            lines.append("-" * (sum(widths) + 10 + len(row[5])))
    for run in runs:
        note = detail_of(run)
        if run.verdict.outcome is Outcome.FAIL and len(note.splitlines()) > 1:
            lines += ["", f"{run.check.qualified_id} ({run.check.label}):", note]
    return "\n".join(lines)


def write_report(runs: Sequence[CheckRun], path: Path) -> None:
    check_report_path(path)
    path.write_text({".md": _markdown, ".json": _json, ".xml": _junit}[path.suffix](runs))


def _markdown(runs: Sequence[CheckRun]) -> str:
    lines = ["| check | result | compared | seconds | figures and detail |", "|---|---|---|---|---|"]
    for run in runs:
        figures = ", ".join(f"{k} {v}" for k, v in run.verdict.figures.items())
        note = "; ".join(part for part in (figures, detail_of(run)) if part).replace("|", "\\|").replace("\n", " ")
        lines.append(
            f"| {run.check.label} | {run.verdict.outcome} | {run.verdict.count} | {run.seconds:.1f} | {note} |"
        )
    return "\n".join(lines) + "\n"


def _json(runs: Sequence[CheckRun]) -> str:
    rows = [
        {
            "id": run.check.qualified_id,
            "name": run.check.label,
            "outcome": str(run.verdict.outcome),
            "compared": run.verdict.count,
            "seconds": round(run.seconds, 3),
            "figures": dict(run.verdict.figures),
            "detail": detail_of(run),
        }
        for run in runs
    ]
    failed = sum(run.verdict.outcome is Outcome.FAIL for run in runs)
    return json.dumps({"results": rows, "failed": failed}, indent=2) + "\n"


def _junit(runs: Sequence[CheckRun]) -> str:
    suite = ET.Element(
        "testsuite",
        name="arctic-ref check",
        tests=str(len(runs)),
        failures=str(sum(run.verdict.outcome is Outcome.FAIL for run in runs)),
        skipped=str(sum(run.verdict.outcome is Outcome.SKIP for run in runs)),
        time=f"{sum(run.seconds for run in runs):.3f}",
    )
    for run in runs:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"arctic-ref.{run.check.component}",
            name=run.check.label,
            time=f"{run.seconds:.3f}",
        )
        note = detail_of(run)
        if run.verdict.outcome is Outcome.FAIL:
            ET.SubElement(case, "failure", message=note.splitlines()[0] if note else "failed").text = note
        elif run.verdict.outcome is Outcome.SKIP:
            ET.SubElement(case, "skipped", message=note)
    return ET.tostring(suite, encoding="unicode") + "\n"
