"""The bug catalogue's coverage table (``tests/bug_coverage.py``) held to the code: every id
of docs/bugs.md once, every cited test defined, every battery known, docs/bugs.md's table rendered
from it; and the replays that live here (AI-15)."""

import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from bug_coverage import CATALOGUE, BugCoverage, render_table

from arctic_ref.check_options import CheckOptions
from arctic_ref.testing.front_door import our_checks

ROOT = Path(__file__).resolve().parents[1]
IDS = [f"AI-{i}" for i in range(1, 26)] + [f"V-{i}" for i in range(1, 24)] + [f"F-{i}" for i in range(1, 7)]
MULTI_PROCESS = {"layouts", "collectives", "exchanges", "spec-lossless"}


def test_every_id_once_in_catalogue_order() -> None:
    assert [row.id for row in CATALOGUE] == IDS


def _defined(path: Path, names: list[str]) -> bool:
    """``class A`` then ``def b`` (or ``class B``) nested in it, as pytest node ids name them."""
    text = path.read_text()
    return all(re.search(rf"^\s*(class|def) {re.escape(name)}\b", text, re.MULTILINE) for name in names)


@pytest.mark.parametrize("row", CATALOGUE, ids=lambda row: row.id)
def test_every_cited_check_exists(row: BugCoverage) -> None:
    batteries = {check.id for check in our_checks(CheckOptions())} | MULTI_PROCESS
    for check in (c.strip() for c in row.check.split(",")):
        if check == "—":
            assert row.status in ("absent", "gpu", "open"), f"{row.id}: a {row.status} row names no check"
            continue
        if check.startswith("check:"):
            assert check.removeprefix("check:") in batteries, f"{row.id}: no battery {check}"
            continue
        path, *names = check.split("::")
        assert (ROOT / path).is_file(), f"{row.id}: no file {path}"
        assert _defined(ROOT / path, names), f"{row.id}: {check} is not defined"
    if row.status in ("caught", "inert"):
        assert row.fixture != "—", f"{row.id}: a {row.status} row needs a fixture"


def test_readme_table_is_the_catalogue() -> None:
    bugs = (ROOT / "docs" / "bugs.md").read_text()
    assert render_table() in bugs, "docs/bugs.md's coverage table is stale: paste render_table()"
    counts = Counter(row.status for row in CATALOGUE)
    print("\nbug catalogue: " + ", ".join(f"{status} {n}" for status, n in sorted(counts.items())))


PLANTED_RUNNER = '''"""A runner with AI-15's two mistakes."""


def sample_tokens(logits: list[float]) -> int:
    """The first definition: dead, shadowed below."""
    return 0


def sample_tokens(logits: list[float]) -> int:
    return max(range(len(logits)), key=logits.__getitem__)


def verify(logits: list[float]) -> int:
    return sample_tokens(logits) + SamplingMetadata  # used but never imported
'''
CLEAN_RUNNER = '''"""The intended runner."""


def sample_tokens(logits: list[float]) -> int:
    return max(range(len(logits)), key=logits.__getitem__)


def verify(logits: list[float]) -> int:
    return sample_tokens(logits)
'''


@pytest.mark.skipif(shutil.which("ruff") is None, reason="needs ruff (the lint extra)")
def test_ai15_duplicate_and_unimported_names_are_caught(tmp_path: Path) -> None:
    """AI-15 planted in a module like ``arctic_ref/runner/*.py`` (where jaxtyping makes ruff skip
    F821): ruff's F811 finds the dead duplicate and mypy --strict both mistakes; the intended
    module is clean under the same commands that CI runs."""
    for name, source in (("planted.py", PLANTED_RUNNER), ("clean.py", CLEAN_RUNNER)):
        (tmp_path / name).write_text(source)
    ruff = ["ruff", "check", "--no-cache", "--select", "F811"]
    mypy = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache")]
    planted_ruff = subprocess.run([*ruff, str(tmp_path / "planted.py")], capture_output=True, text=True)
    planted_mypy = subprocess.run([*mypy, str(tmp_path / "planted.py")], capture_output=True, text=True)
    assert planted_ruff.returncode == 1 and "F811" in planted_ruff.stdout, planted_ruff.stdout
    assert planted_mypy.returncode == 1, planted_mypy.stdout
    assert "[no-redef]" in planted_mypy.stdout and "[name-defined]" in planted_mypy.stdout, planted_mypy.stdout
    assert subprocess.run([*ruff, str(tmp_path / "clean.py")], capture_output=True).returncode == 0
    assert subprocess.run([*mypy, str(tmp_path / "clean.py")], capture_output=True).returncode == 0
