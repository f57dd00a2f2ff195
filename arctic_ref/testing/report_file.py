"""``write_report``: a check run's rows as Markdown (``.md``), JSON (``.json``) or JUnit XML
(``.xml``), chosen by the path's suffix, for CI systems that read one of them."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from arctic_ref.testing.battery import BatteryResult, Outcome

SUFFIXES = (".md", ".json", ".xml")


def check_report_path(path: Path) -> None:
    """ValueError naming the suffix when it is not one of ``SUFFIXES`` (call it before a long run)."""
    if path.suffix not in SUFFIXES:
        raise ValueError(f"--report {path}: the suffix must be one of {', '.join(SUFFIXES)}, got {path.suffix!r}")


def write_report(results: list[BatteryResult], path: Path) -> None:
    check_report_path(path)
    path.write_text({".md": _markdown, ".json": _json, ".xml": _junit}[path.suffix](results))


def _markdown(results: list[BatteryResult]) -> str:
    lines = ["| check | result | compared | seconds | figures and detail |", "|---|---|---|---|---|"]
    for r in results:
        figures = ", ".join(f"{k} {v}" for k, v in r.figures.items())
        note = "; ".join(part for part in (figures, r.detail) if part).replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {r.name} | {r.outcome} | {r.compared} | {r.seconds:.1f} | {note} |")
    return "\n".join(lines) + "\n"


def _json(results: list[BatteryResult]) -> str:
    rows = [
        {
            "name": r.name,
            "outcome": str(r.outcome),
            "compared": r.compared,
            "seconds": round(r.seconds, 3),
            "figures": r.figures,
            "detail": r.detail,
        }
        for r in results
    ]
    return json.dumps({"results": rows, "failed": sum(r.outcome is Outcome.FAIL for r in results)}, indent=2) + "\n"


def _junit(results: list[BatteryResult]) -> str:
    suite = ET.Element(
        "testsuite",
        name="arctic-ref check",
        tests=str(len(results)),
        failures=str(sum(r.outcome is Outcome.FAIL for r in results)),
        skipped=str(sum(r.outcome is Outcome.SKIP for r in results)),
        time=f"{sum(r.seconds for r in results):.3f}",
    )
    for r in results:
        case = ET.SubElement(suite, "testcase", classname="arctic-ref", name=r.name, time=f"{r.seconds:.3f}")
        if r.outcome is Outcome.FAIL:
            ET.SubElement(case, "failure", message=r.detail.splitlines()[0] if r.detail else "failed").text = r.detail
        elif r.outcome is Outcome.SKIP:
            ET.SubElement(case, "skipped", message=r.detail)
    return ET.tostring(suite, encoding="unicode") + "\n"
