"""The GPU CI gate as one command, whatever the card: ``python -m benchmarks.gate [pytest args]``.

It names the visible GPU's card from its CUDA device name (``NVIDIA H100 80GB HBM3`` → ``h100``),
takes that card's stored run 1 (``benchmarks/baselines/<card>-run1.json``) and runs each gated suite
in its own pytest process with ``--benchmark-compare-fail`` on medians at that suite's threshold
(``SUITES``): the exit status is the first failing suite's, 0 when both pass (a suite whose
tests a ``-k`` filter deselects passes, unless every suite's were). Extra arguments go to
both pytest runs after ours (``-s`` to print every target); ``--benchmark-json=F`` stores the two
suites' runs merged into one file, the layout of a stored baseline.

Each suite's threshold is what unchanged code held on a noisy machine, in runs of the same code
(the README's threshold table; the stored files are the latest two runs per card): the decode steps (milliseconds of GPU work) moved at most 4.2% between runs, so 10%; the sampler's
whole calls (tens of µs, mostly host time) moved up to 1.67× between runs of the same code (8 × 4
on one H200, 47.3 against 78.8 µs), so 100%. A 30% gate over both failed unchanged code on
2026-12-06 (1 × 4 at 60.5 against 43.0 µs).

A card without stored baselines is an error that names the card and the cards that have them,
never a comparison against another card's figures (an H100's decode medians are 24–33% over the
H200's, so across cards the gate measures the card, not the code). Without CUDA it exits with 2.
"""

import json
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import pytest
import torch

BENCHMARKS = Path(__file__).resolve().parent
BASELINES = BENCHMARKS / "baselines"
CARD = re.compile(r"\b([A-Z]{1,2}\d{2,4}[A-Z]?)\b")
JSON_FLAG = "--benchmark-json"
SUITE_TIMEOUT_S = 1800
"""A suite's pytest process is stopped after this long (about 110 s on an H200) and the gate fails."""
TIMED_OUT = 124
NO_TESTS = int(pytest.ExitCode.NO_TESTS_COLLECTED)
"""A suite whose tests were all deselected (``-k``) has nothing to compare; only when every suite
has none does the gate fail with this."""


@dataclass(frozen=True, slots=True)
class Suite:
    """One gated pytest file and the median regression, in percent, that fails it."""

    path: Path
    threshold_percent: int

    @property
    def compare_fail(self) -> str:
        return f"median:{self.threshold_percent}%"


SUITES = (Suite(BENCHMARKS / "test_rejection_gpu.py", 100), Suite(BENCHMARKS / "gpu" / "test_decode.py", 10))


def card_of(device_name: str) -> str:
    """The card's key in baseline file names: the first model token of a CUDA device name, lower
    case (``NVIDIA H200`` → ``h200``, ``NVIDIA A100-SXM4-80GB`` → ``a100``)."""
    found = CARD.search(device_name)
    if found is None:
        raise ValueError(f"no card model (like H100) in the device name {device_name!r}")
    return found.group(1).lower()


def stored_cards(baselines: Path = BASELINES) -> list[str]:
    """The cards with a stored run 1, sorted."""
    return sorted(path.name.removesuffix("-run1.json") for path in baselines.glob("*-run1.json"))


def baseline_for(device_name: str, baselines: Path = BASELINES) -> Path:
    """The stored run 1 of the card named by ``device_name``; a ``ValueError`` naming the card and
    the stored cards when there is none."""
    card = card_of(device_name)
    path = baselines / f"{card}-run1.json"
    if not path.is_file():
        raise ValueError(
            f"no stored baseline for {card} ({device_name!r}); stored: {', '.join(stored_cards(baselines)) or 'none'}. "
            f"Store one: pytest {' '.join(str(suite.path) for suite in SUITES)} --benchmark-only {JSON_FLAG}={path}"
        )
    return path


def split_json_target(argv: Sequence[str]) -> tuple[Path | None, list[str]]:
    """``--benchmark-json=F`` or ``--benchmark-json F`` taken out of ``argv``: (F or None, the rest)."""
    target: Path | None = None
    rest: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == JSON_FLAG:
            value = next(args, None)
            if value is None:
                raise ValueError(f"{JSON_FLAG} needs a file name, got none in {list(argv)}")
            target = Path(value)
        elif arg.startswith(JSON_FLAG + "="):
            target = Path(arg.removeprefix(JSON_FLAG + "="))
        else:
            rest.append(arg)
    return target, rest


def gate_args(suite: Suite, baseline: Path, json_path: Path, extra: Sequence[str]) -> list[str]:
    """pytest's arguments for one suite's gate against ``baseline``, storing its run in ``json_path``,
    then ``extra``."""
    return [
        str(suite.path),
        "--benchmark-only",
        f"--benchmark-compare={baseline}",
        f"--benchmark-compare-fail={suite.compare_fail}",
        f"{JSON_FLAG}={json_path}",
        *extra,
    ]


def merge_runs(parts: Sequence[Path], target: Path) -> None:
    """pytest-benchmark JSON files merged into one: the first file's machine, commit and date, and
    every file's benchmarks in order."""
    if not parts:
        raise ValueError("no pytest-benchmark files to merge")
    runs: list[dict[str, Any]] = [json.loads(part.read_text()) for part in parts]
    merged = runs[0] | {"benchmarks": [bench for run in runs for bench in run["benchmarks"]]}
    target.write_text(json.dumps(merged, indent=4) + "\n")


def run_suites(
    suites: Sequence[Suite],
    baseline: Path,
    extra: Sequence[str],
    target: Path | None,
    timeout_s: float = SUITE_TIMEOUT_S,
) -> int:
    """Each suite in its own pytest process against ``baseline``, with ``extra`` after our arguments:
    the first failing exit status (124 for a suite stopped at ``timeout_s``), else 0. A suite with no
    tests selected (5) fails the gate only when no suite had any. ``target``, if given, gets the
    suites' runs merged."""
    codes: list[int] = []
    with TemporaryDirectory(prefix="arctic-ref-gate-") as folder:
        parts = [Path(folder) / f"suite{index}.json" for index in range(len(suites))]
        for suite, part in zip(suites, parts, strict=True):
            args = gate_args(suite, baseline, part, extra)
            print(f"benchmarks.gate: pytest {' '.join(args)}", flush=True)
            try:
                codes.append(subprocess.run([sys.executable, "-m", "pytest", *args], timeout=timeout_s).returncode)
            except subprocess.TimeoutExpired:
                print(f"benchmarks.gate: {suite.path.name} stopped after {timeout_s} s", file=sys.stderr)
                codes.append(TIMED_OUT)
        written = [part for part in parts if part.is_file()]
        if target is not None and written:
            merge_runs(written, target)
    if all(code == NO_TESTS for code in codes):
        return NO_TESTS
    return next((code for code in codes if code not in (0, NO_TESTS)), 0)


def run_gate(device_name: str, argv: Sequence[str]) -> int:
    """The gate for the card named ``device_name``: ``run_suites``' status, or 2 (with the reason on
    stderr) when the card has no stored baseline or ``--benchmark-json`` has no file name."""
    try:
        target, extra = split_json_target(argv)
        baseline = baseline_for(device_name)
    except ValueError as error:
        print(f"benchmarks.gate: {error}", file=sys.stderr)
        return 2
    print(f"benchmarks.gate: {device_name} against {baseline.name}", flush=True)
    return run_suites(SUITES, baseline, extra, target)


def main(argv: list[str]) -> int:
    if not torch.cuda.is_available():
        print("benchmarks.gate: no CUDA device; the gate runs on a GPU", file=sys.stderr)
        return 2
    return run_gate(torch.cuda.get_device_name(0), argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
