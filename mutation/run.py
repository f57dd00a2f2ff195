"""Mutation testing of arctic_ref: each one-change mutant of a package's modules against the fast
tests that concern that package; a report of killed, survived, timed-out and equivalent mutants.

    python -m mutation.run --package suffix                  # every mutant (tox -e mutation)
    python -m mutation.run --package all --sample 10 --seed 0 --jobs 2 --report out.json
    python -m mutation.run --package spec --rerun out.json      # the survivors again, after new tests
    python -m mutation.run --package suffix --changed-since main~3  # only lines changed since then

How it runs: the parent imports torch, numpy, hypothesis and pytest once, then forks one child per
mutant (never importing arctic_ref itself); the child puts a private copy of the package, with the
one module mutated, first on ``sys.path`` and runs ``pytest -x`` on the package's tests under the
Hypothesis ``ci`` profile. If its tests imported any other ``arctic_ref`` (one ahead of the copy on
``sys.path``), the child exits ``SHADOWED`` and the whole run stops: such a run would score every
mutant a survivor (a pytest ``pythonpath = ["."]`` did that once). A failing run kills the mutant;
a run past the time limit (three times the clean run, plus 10 s) counts as timed out (killed). A survivor listed in
``mutation/equivalent.txt`` with its reason is equivalent and left out of the score. With
``--skip-equivalent`` (the CI sample) listed mutants are reported equivalent without a run: nothing
kills them, so each ran the package's whole suite (171 s of the suffix sample's 186 s on two cores,
2026-12-04); a run without the flag still runs them, and a listed mutant that is killed shows so.
"""

import argparse
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final, Literal

import hypothesis
import numpy
import pytest
import scipy.stats
import torch

from mutation.mutants import Mutant, enumerate_mutants, mutated_source

ROOT: Final = Path(__file__).resolve().parents[1]
EQUIVALENT_FILE: Final = ROOT / "mutation" / "equivalent.txt"
PRELOADED: Final = (hypothesis, numpy, pytest, scipy.stats, torch)  # imported once, shared by every fork


@dataclass(frozen=True, slots=True, kw_only=True)
class Package:
    modules: tuple[str, ...]
    tests: tuple[str, ...]
    left_out: str
    """Modules of the package not mutated, and why."""


PACKAGES: Final[dict[str, Package]] = {
    "suffix": Package(
        modules=tuple(
            f"arctic_ref/suffix/{m}.py"
            for m in ("tree", "node", "drafting", "cache", "heap", "validate", "integrity", "draft")
        ),
        tests=(
            "tests/test_value_types.py",
            *(
                f"tests/suffix/test_{t}.py"
                for t in (  # fastest first: most mutants die in the first file
                    "examples",
                    "integrity",
                    "followers",
                    "properties",
                    "mutants",
                    "upstream_differences",
                    "replay",
                    "stateful",
                )
            ),
        ),
        left_out="simulate, trace_file, workload (the simulator, covered by tests/test_cli.py) and plot (a figure)",
    ),
    "spec": Package(
        modules=tuple(
            f"arctic_ref/spec/{m}.py"
            for m in ("rejection", "loop", "sampling", "noise", "metadata", "profile", "drafts")
        ),
        tests=(
            "tests/test_value_types.py",
            "tests/spec/test_rejection_rules.py",
            "tests/spec/test_rejection.py",
            "tests/spec/test_metadata.py",
            "tests/spec/test_draft_rules.py",
            "tests/spec/test_drafts.py",
            "tests/spec/test_kit.py::test_vectorised_with_injected_noise_is_clean",
        ),
        left_out="rejection_triton, rejection_kernels, rejection_graph and torch_philox (CUDA-only paths: gpu_tests/)",
    ),
    "parallel": Package(
        modules=tuple(f"arctic_ref/parallel/{m}.py" for m in ("plan", "cudagraph", "ulysses", "layout", "heads")),
        tests=(
            "tests/test_value_types.py",
            "tests/parallel/test_plan.py",
            "tests/parallel/test_layout.py",
            "tests/parallel/test_cudagraph.py",
            "tests/parallel/test_volume.py",
            "conformance/test_layouts.py::test_ulysses_exchanges",
        ),
        left_out="the modules the issue does not name (comm, volume, graph_capture, launch)",
    ),
    "runner": Package(
        modules=("arctic_ref/runner/drafters.py", "arctic_ref/runner/vllm_drafting.py"),
        tests=(
            "tests/test_value_types.py",
            "tests/runner/test_vllm_drafting.py",
            "tests/runner/test_speculator.py",
            "tests/runner/test_drafting.py::test_adapters_refuse_configs_that_are_not_theirs",
        ),
        left_out="the rest of arctic_ref/runner (engine, scheduler, model runner, speculator: tests/runner, whose "
        "engine runs take minutes per mutant)",
    ),
}

Outcome = Literal["killed", "survived", "timeout", "equivalent"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    mutant: Mutant
    outcome: Outcome
    seconds: float


def equivalent_keys() -> dict[str, str]:
    """``module|source line|description`` → the reviewed reason it cannot change behaviour."""
    out: dict[str, str] = {}
    for raw in EQUIVALENT_FILE.read_text().splitlines():
        if raw.strip() and not raw.startswith("#"):
            module, line, description, reason = (part.strip() for part in raw.split("|", 3))
            out[f"{module}|{line}|{description}"] = reason
    return out


SHADOWED: Final = 71
"""A child's exit status when its tests imported an ``arctic_ref`` other than its copy (something put
another one first on ``sys.path``, as pytest's ``pythonpath`` option would): every mutant would
"survive", so the run stops instead of scoring."""


def imports_the_copy(module_file: str | None, copy: Path) -> bool:
    """The imported ``arctic_ref`` (its ``__file__``) is the one in ``copy``."""
    return module_file is not None and Path(module_file).resolve().is_relative_to(copy.resolve())


@dataclass(frozen=True, slots=True)
class _CopyGuard:
    """A pytest plugin for the child: after collection (every test module imported), the tests must
    have imported the copy's ``arctic_ref``; otherwise the child exits with ``SHADOWED``."""

    copy: Path

    def pytest_collection_finish(self) -> None:
        module = sys.modules.get("arctic_ref")
        if module is not None and not imports_the_copy(module.__file__, self.copy):
            print(f"the tests imported {module.__file__}, not the copy in {self.copy}", file=sys.__stderr__, flush=True)
            os._exit(SHADOWED)


def _outcome_code(status: int, others: tuple[int, ...] = ()) -> int:
    """A child's exit code. When it says the tests did not import its copy: the ``others`` children
    killed, then a ``SystemExit``."""
    code = os.waitstatus_to_exitcode(status)
    if code == SHADOWED:
        for pid in others:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        raise SystemExit("the tests did not import the mutated copy of arctic_ref (another one is first on sys.path)")
    return code


def _child(copy: Path, tests: tuple[str, ...]) -> None:
    """In the forked child: the copy first on sys.path, then pytest; never returns."""
    sys.dont_write_bytecode = True
    sys.path.insert(0, str(copy))
    os.environ["HYPOTHESIS_PROFILE"] = "ci"
    torch.set_num_threads(1)
    os.chdir(ROOT)
    sink = io.StringIO()
    with redirect_stdout(sink), redirect_stderr(sink):
        code = pytest.main(
            [
                *tests,
                "-x",
                "-q",
                "-m",
                "not slow",
                "-p",
                "no:cacheprovider",
                "-p",
                "no:benchmark",
                "--no-header",
                "-o",
                "addopts=",
            ],
            plugins=[_CopyGuard(copy)],
        )
    os._exit(int(code))


def _start(copy: Path, tests: tuple[str, ...]) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            _child(copy, tests)
        finally:
            os._exit(70)
    return pid


def _make_copy(base: Path) -> Path:
    copy = Path(tempfile.mkdtemp(dir=base))
    shutil.copytree(ROOT / "arctic_ref", copy / "arctic_ref", ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def split_listed(mutants: list[Mutant], listed: set[str]) -> tuple[list[Mutant], list[Result]]:
    """(the mutants to run, a zero-second "equivalent" result for each one in ``listed``)."""
    skipped = [Result(mutant=m, outcome="equivalent", seconds=0.0) for m in mutants if m.key in listed]
    return [m for m in mutants if m.key not in listed], skipped


def run_mutants(mutants: list[Mutant], tests: tuple[str, ...], *, jobs: int, limit: float) -> list[Result]:
    """Every mutant in a forked child, ``jobs`` at a time, each in its own copy of the package."""
    results: list[Result] = []
    equivalent = equivalent_keys()
    with tempfile.TemporaryDirectory() as base:
        free = [_make_copy(Path(base)) for _ in range(jobs)]
        running: dict[int, tuple[Mutant, Path, float]] = {}
        queue = list(mutants)
        while queue or running:
            while queue and free:
                mutant, copy = queue.pop(0), free.pop()
                target = copy / mutant.module
                target.write_text(mutated_source((ROOT / mutant.module).read_text(), mutant.index))
                running[_start(copy, tests)] = (mutant, copy, time.monotonic())
            time.sleep(0.05)
            for pid, (mutant, copy, began) in list(running.items()):
                done, status = os.waitpid(pid, os.WNOHANG)
                elapsed = time.monotonic() - began
                if not done and elapsed < limit:
                    continue
                if not done:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    outcome: Outcome = "timeout"
                elif _outcome_code(status, tuple(other for other in running if other != pid)) == 0:
                    outcome = "equivalent" if mutant.key in equivalent else "survived"
                else:
                    outcome = "killed"
                results.append(Result(mutant=mutant, outcome=outcome, seconds=elapsed))
                print(
                    f"[{len(results)}/{len(mutants)}] {outcome:10s} {mutant.module}:{mutant.line} {mutant.description}",
                    file=sys.stderr,
                    flush=True,
                )
                shutil.copyfile(ROOT / mutant.module, copy / mutant.module)
                del running[pid]
                free.append(copy)
    return sorted(results, key=lambda r: (r.mutant.module, r.mutant.index))


def clean_run_seconds(tests: tuple[str, ...]) -> float:
    """The unmutated tests must pass; their time sets the limit."""
    with tempfile.TemporaryDirectory() as base:
        began = time.monotonic()
        _, status = os.waitpid(_start(_make_copy(Path(base)), tests), 0)
    if _outcome_code(status) != 0:
        raise SystemExit(f"the clean run of {' '.join(tests)} fails: fix the tests first")
    return time.monotonic() - began


def survivor_keys(report: Path) -> set[str]:
    """The keys of the mutants that survived in a JSON report of an earlier run."""
    keys = set()
    for results in json.loads(report.read_text()).values():
        for result in results:
            if result["outcome"] == "survived":
                keys.add(Mutant(**result["mutant"]).key)
    return keys


def changed_lines(module: str, since: str, root: Path = ROOT) -> set[int]:
    """The lines of ``module`` (in the working tree) added or changed since the git revision ``since``."""
    diff = subprocess.run(
        ["git", "diff", "--unified=0", since, "--", module], cwd=root, check=True, capture_output=True, text=True
    ).stdout
    lines: set[int] = set()
    for hunk in re.finditer(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", diff, re.MULTILINE):
        start, count = int(hunk[1]), int(hunk[2] or 1)
        lines.update(range(start, start + count))
    return lines


def score(results: list[Result]) -> float:
    counted = [r for r in results if r.outcome != "equivalent"]
    return sum(r.outcome in ("killed", "timeout") for r in counted) / max(len(counted), 1)


def report_lines(name: str, results: list[Result]) -> list[str]:
    lines = [
        f"## {name}: {score(results):.1%} killed ({len(results)} mutants)",
        "",
        "| module | killed | survived | timeout | equivalent |",
        "|---|---|---|---|---|",
    ]
    for module in sorted({r.mutant.module for r in results}):
        counts = Counter(r.outcome for r in results if r.mutant.module == module)
        lines.append(
            f"| {module} | {counts['killed']} | {counts['survived']} | {counts['timeout']} | {counts['equivalent']} |"
        )
    survivors = [r.mutant for r in results if r.outcome == "survived"]
    lines += ["", *(f"- survived: `{m.module}:{m.line}` {m.description}: `{m.source_line}`" for m in survivors)]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mutation.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", choices=[*PACKAGES, "all"], default="all")
    parser.add_argument("--sample", type=int, default=0, help="mutants per package, seeded (0: every mutant)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--report", type=Path, help="write the results as JSON here")
    parser.add_argument("--module", action="append", help="only these modules (repeatable; paths as in the report)")
    parser.add_argument(
        "--limit", type=float, help="seconds per mutant (default: 3 × a clean run + 10, which is run first)"
    )
    parser.add_argument(
        "--rerun", type=Path, help="only the mutants that survived in this earlier --report (after new tests)"
    )
    parser.add_argument(
        "--changed-since", metavar="REV", help="only mutants on lines added or changed since this git revision"
    )
    parser.add_argument(
        "--skip-equivalent",
        action="store_true",
        help="report the mutants listed in mutation/equivalent.txt as equivalent without running them",
    )
    args = parser.parse_args(argv)
    names = list(PACKAGES) if args.package == "all" else [args.package]
    everything: dict[str, list[Result]] = {}
    for name in names:
        package = PACKAGES[name]
        modules = [m for m in package.modules if not args.module or m in args.module]
        mutants = [m for module in modules for m in enumerate_mutants(module, (ROOT / module).read_text())]
        if args.changed_since:
            changed = {module: changed_lines(module, args.changed_since) for module in modules}
            mutants = [m for m in mutants if m.line in changed[m.module]]
        if args.rerun:
            survivors = survivor_keys(args.rerun)
            mutants = [m for m in mutants if m.key in survivors]
        if args.sample:
            mutants = random.Random(f"{args.seed}:{name}").sample(mutants, min(args.sample, len(mutants)))
        mutants, skipped = split_listed(mutants, set(equivalent_keys()) if args.skip_equivalent else set())
        limit = args.limit or 3 * clean_run_seconds(package.tests) + 10
        began = time.monotonic()
        results = run_mutants(mutants, package.tests, jobs=args.jobs, limit=limit) + skipped
        everything[name] = sorted(results, key=lambda r: (r.mutant.module, r.mutant.index))
        print("\n".join(report_lines(name, everything[name])))
        print(
            f"\n({time.monotonic() - began:.0f} s; time limit per mutant {limit:.0f} s; not mutated: {package.left_out})\n"
        )
    if args.report:
        args.report.write_text(json.dumps({n: [asdict(r) for r in rs] for n, rs in everything.items()}, indent=1))
    return 1 if any(r.outcome == "survived" for rs in everything.values() for r in rs) else 0


if __name__ == "__main__":
    raise SystemExit(main())
