"""The process an engine runs in (``python -m arctic_ref.testing.engine.worker JOB RESULTS``).

Every engine build happens in a worker, never in the checking process: an engine that crashes the
interpreter, hangs, or leaves state behind (vLLM 0.32's CPU build cannot build a second engine in a
process that has built an n-gram one: docs/bugs.md V-19) costs that worker only. The parent writes a
job (``wire``: the target and the option that named it, then a list of runs, each a build's
arguments and its batches), the worker appends one line per finished run to the results file, so a crash part-way loses only the run in flight.
Runs whose speculative method is ``ngram`` go last in a job (``order_runs``)."""

import gc
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arctic_ref.testing.check import describe_exception
from arctic_ref.testing.engine.engine_target import EngineRequest, EngineRun, SpecCounters, read_counters
from arctic_ref.testing.engine.factory import EngineFactory, load_factory
from arctic_ref.testing.engine.wire import Job, decode_job, encode_result


def counters_of(engine: Any) -> tuple[SpecCounters, int | None]:
    return read_counters(engine.get_metrics())


def one_run(
    factory: EngineFactory,
    kwargs: Mapping[str, Any],
    batches: Sequence[Sequence[EngineRequest]],
) -> EngineRun | str:
    """Build, send each batch, read the counters around each: the run (``seconds`` 0: the parent
    times the worker), or a ``str`` naming the stage that failed and the engine's exception."""
    stage = "build"
    tokens: list[tuple[int, ...]] = []
    per_call: list[SpecCounters] = []
    try:
        engine = factory.build(**kwargs)
        for method in ("generate", "get_metrics"):
            if not callable(getattr(engine, method, None)):
                return f"the {type(engine).__name__} it returns has no {method}()"
        stage = "get_metrics"
        before, _ = counters_of(engine)
        start = before
        for batch in batches:
            stage = "generate"
            sampling = [factory.sampling_params(**r.sampling_kwargs()) for r in batch]
            outputs = engine.generate([{"prompt_token_ids": list(r.prompt)} for r in batch], sampling, use_tqdm=False)
            stage = "reading generate's output"
            got = [tuple(int(t) for t in output.outputs[0].token_ids) for output in outputs]
            if len(got) != len(batch):
                return f"generate: {len(batch)} prompts but {len(got)} outputs"
            tokens += got
            stage = "get_metrics"
            after, _ = counters_of(engine)
            per_call.append(after.minus(before).trimmed())
            before = after
        end, preemptions = counters_of(engine)
    except Exception as error:  # the engine's exception is the finding: reported, never raised
        if stage == "build" or (not per_call and stage != "generate"):
            return f"{stage} {describe_exception(error)}"
        return EngineRun(
            tokens=tuple(tokens),
            counters=SpecCounters(),
            per_call=tuple(per_call),
            preemptions=None,
            seconds=0.0,
            failure=f"batch {len(per_call)}: {stage} {describe_exception(error)}",
        )
    finally:
        engine = None
        gc.collect()
    return EngineRun(
        tokens=tuple(tokens),
        counters=end.minus(start).trimmed(),
        per_call=tuple(per_call),
        preemptions=preemptions,
        seconds=0.0,
    )


def run_worker(job_path: str, results_path: str) -> int:
    job: Job = decode_job(Path(job_path).read_text())
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    try:
        factory = load_factory(job.option, job.target, base_dir=None if job.base_dir is None else Path(job.base_dir))
    except Exception as error:
        Path(results_path).write_text(encode_result(f"load: {error}") + "\n")
        return 0
    with open(results_path, "a") as out:
        for run in job.runs:
            out.write(encode_result(one_run(factory, run.kwargs, run.batches)) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(run_worker(sys.argv[1], sys.argv[2]))
