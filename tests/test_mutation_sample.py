"""A seeded sample of mutants per package (``mutation/run.py``, the tool behind ``tox -e mutation``):
every sampled mutant must be killed by the package's tests, unless it is in the reviewed
equivalent list. Ten per package, two at a time; a few minutes on CI's two cores."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = 10


def test_sampled_mutants_are_killed(tmp_path: Path) -> None:
    report = tmp_path / "mutation.json"
    run = subprocess.run(
        [sys.executable, "-m", "mutation.run", "--package", "all", "--sample", str(SAMPLE), "--seed", "0",
         "--jobs", "2", "--limit", "400", "--report", str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=1500,
    )  # fmt: skip
    print(run.stdout)
    assert run.returncode == 0, f"a sampled mutant survived (or the run failed):\n{run.stdout}\n{run.stderr[-3000:]}"
    assert report.is_file()
