"""Running engine setups in worker processes (``arctic_ref.testing.engine.worker``) and reading
their results back; a worker that dies or overruns fails the run it was in, and a new worker takes
the rest."""

import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from arctic_ref.testing.engine.engine_target import EngineFailure, EngineRequest, EngineRun, EngineSetup, EngineTarget
from arctic_ref.testing.engine.wire import Job, JobRun, decode_result, encode_job

PlannedRun = tuple[EngineSetup, Sequence[Sequence[EngineRequest]]]


def order_runs(planned: Sequence[PlannedRun]) -> list[int]:
    """Indices of ``planned`` with n-gram setups last (docs/bugs.md V-19: after an n-gram engine,
    vLLM 0.32's CPU build cannot build another in the same process)."""
    return sorted(range(len(planned)), key=lambda index: _is_ngram(planned[index]))


def run_in_workers(
    target: EngineTarget, planned: Sequence[PlannedRun], *, seconds: float
) -> list[EngineRun | EngineFailure]:
    """Each planned run's result, in ``planned``'s order. One worker takes the runs in
    ``order_runs`` order (at most one n-gram setup per worker); a worker that exits early or
    overruns ``seconds`` fails its run in flight."""
    order = order_runs(planned)
    out: dict[int, EngineRun | EngineFailure] = {}
    while len(out) < len(planned):
        pending = [i for i in order if i not in out]
        batch = pending[: 1 + next((n for n, i in enumerate(pending) if _is_ngram(planned[i])), len(pending))]
        results = _one_worker(target, [planned[i] for i in batch], seconds)
        for index, result in zip(batch, results, strict=False):
            out[index] = result
    return [out[i] for i in range(len(planned))]


def _is_ngram(run: PlannedRun) -> bool:
    spec = run[0].speculative_config
    return spec is not None and spec.get("method") == "ngram"


def _one_worker(target: EngineTarget, runs: Sequence[PlannedRun], seconds: float) -> list[EngineRun | EngineFailure]:
    with tempfile.TemporaryDirectory(prefix="arctic-ref-worker-") as scratch:
        job, results = Path(scratch) / "job.json", Path(scratch) / "results.jsonl"
        job.write_text(
            encode_job(
                Job(
                    target=target.name,
                    option=target.option,
                    base_dir=target.base_dir,
                    runs=tuple(
                        JobRun(
                            kwargs={"model": target.model, **setup.kwargs(), **target.fixed_kwargs},
                            batches=tuple(tuple(batch) for batch in batches),
                        )
                        for setup, batches in runs
                    ),
                )
            )
        )
        began = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "arctic_ref.testing.engine.worker", str(job), str(results)],
                timeout=seconds,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                check=False,
            )
            ending = f"exit code {done.returncode}; its last words: {_last_words(done.stderr)}"
        except subprocess.TimeoutExpired:
            ending = f"did not finish in {seconds:.0f} s and was killed"
        elapsed = time.perf_counter() - began
        lines = results.read_text().splitlines() if results.exists() else []
    out: list[EngineRun | EngineFailure] = []
    for (setup, _), line in zip(runs, lines, strict=False):
        result = decode_result(line, seconds=elapsed / max(1, len(lines)))
        out.append(EngineFailure(f"{setup.label}: {target.name} {result}") if isinstance(result, str) else result)
    if len(out) < len(runs):
        out.append(EngineFailure(f"{runs[len(out)][0].label}: the worker process ended ({ending})"))
    return out


def _last_words(stderr: str) -> str:
    """The last line of a worker's stderr that is not a log line."""
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith(("INFO", "WARNING", "("))]
    return lines[-1][-300:] if lines else "(nothing)"
