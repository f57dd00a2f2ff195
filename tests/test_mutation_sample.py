"""A seeded sample of mutants per package (``mutation/run.py``, the tool behind ``tox -e mutation``):
every sampled mutant must be killed by the package's tests, unless it is in the reviewed
equivalent list (those are reported without a run, ``--skip-equivalent``: nothing kills them, so
each would run its package's whole suite). Ten per package, two at a time; about two minutes on
CI's two cores."""

import subprocess
import sys
from pathlib import Path

from mutation.mutants import Mutant
from mutation.run import SHADOWED, changed_lines, imports_the_copy, split_listed

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = 10


def test_sampled_mutants_are_killed(tmp_path: Path) -> None:
    report = tmp_path / "mutation.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mutation.run",
            "--package",
            "all",
            "--sample",
            str(SAMPLE),
            "--seed",
            "0",
            "--jobs",
            "2",
            "--limit",
            "400",
            "--skip-equivalent",
            "--report",
            str(report),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    print(run.stdout)
    assert run.returncode == 0, f"a sampled mutant survived (or the run failed):\n{run.stdout}\n{run.stderr[-3000:]}"
    assert report.is_file()


def test_a_copy_is_what_its_file_lies_under(tmp_path: Path) -> None:
    assert imports_the_copy(str(tmp_path / "arctic_ref" / "__init__.py"), tmp_path)
    assert not imports_the_copy(str(ROOT / "arctic_ref" / "__init__.py"), tmp_path)
    assert not imports_the_copy(None, tmp_path)


FORK_TWO_CHILDREN = """
import os, tempfile
from pathlib import Path
from mutation.run import _make_copy, _start
with tempfile.TemporaryDirectory() as name:
    base = Path(name)
    empty = base / "empty"
    empty.mkdir()
    for copy in (_make_copy(base), empty):
        _, status = os.waitpid(_start(copy, ("tests/test_value_types.py",)), 0)
        print(os.waitstatus_to_exitcode(status))
"""


def test_a_child_whose_tests_import_another_arctic_ref_says_so() -> None:
    """A child with a copy of the package passes its tests (0); a child whose copy holds no package
    imports the repository's instead, as any ``arctic_ref`` ahead of the copy on ``sys.path`` would,
    and exits ``SHADOWED`` rather than 0, so its mutant cannot be scored as a survivor."""
    run = subprocess.run(
        [sys.executable, "-c", FORK_TWO_CHILDREN], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert run.stdout.split() == ["0", str(SHADOWED)], run.stdout + run.stderr[-3000:]
    assert "not the copy in" in run.stderr


def test_changed_lines_are_those_added_or_changed_since_a_revision(tmp_path: Path) -> None:
    """``--changed-since``: a changed line, two added ones and none for a deleted one (its neighbours keep)."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    (tmp_path / "m.py").write_text("a = 1\nb = 2\nc = 3\nd = 4\n")
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "m.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    (tmp_path / "m.py").write_text("a = 1\nb = 5\nc = 3\nx = 0\ny = 0\n")  # b changed, d deleted, x y added
    assert changed_lines("m.py", "HEAD", root=tmp_path) == {2, 4, 5}
    assert changed_lines("m.py", "HEAD~0", root=tmp_path) == {2, 4, 5}


def test_listed_mutants_are_reported_equivalent_without_a_run() -> None:
    mutants = [
        Mutant(module="m.py", index=i, line=i, description="Add -> Sub", source_line=f"a = b + {i}") for i in range(3)
    ]
    to_run, skipped = split_listed(mutants, {mutants[1].key})
    assert to_run == [mutants[0], mutants[2]]
    assert [(r.mutant, r.outcome, r.seconds) for r in skipped] == [(mutants[1], "equivalent", 0.0)]
    assert split_listed(mutants, set()) == (mutants, [])
