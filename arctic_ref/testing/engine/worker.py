"""The process an engine runs in (``python -m arctic_ref.testing.engine.worker JOB RESULTS``).

Every engine build happens in a worker, never in the checking process: an engine that crashes the
interpreter, hangs, or leaves state behind (vLLM 0.32's CPU build cannot build a second engine in a
process that has built an n-gram one: docs/bugs.md V-19) costs that worker only. The parent writes a
job (JSON: the target, then a list of runs, each a setup and its batches), the worker appends one
JSON line per finished run to the results file, so a crash part-way loses only the run in flight.
Runs whose speculative method is ``ngram`` go last in a job (``order_runs``)."""

import gc
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from arctic_ref.testing.check import describe_exception
from arctic_ref.testing.engine.engine_target import EngineRequest, SpecCounters, read_counters


def load(name: str, base_dir: str | None) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(the factory ``name`` = ``MODULE:ATTR`` names, the package's ``SamplingParams``)."""
    from arctic_ref.testing.engine.engine_loading import find_sampling_params
    from arctic_ref.testing.loading import load_target, require_callable

    option = "--arctic-ref-engine"
    factory = require_callable(
        option, name, load_target(option, name, base_dir=None if base_dir is None else Path(base_dir))
    )
    return factory, find_sampling_params(option, name, factory)


def counters_of(engine: Any) -> tuple[SpecCounters, int | None]:
    return read_counters(engine.get_metrics())


def one_run(
    factory: Callable[..., Any],
    params: Callable[..., Any],
    kwargs: Mapping[str, Any],
    batches: Sequence[Sequence[EngineRequest]],
) -> dict[str, Any]:
    """Build, send each batch, read the counters around each: a JSON-ready result, or the stage
    that failed and the engine's exception."""
    stage = "build"
    tokens: list[list[int]] = []
    per_call: list[SpecCounters] = []
    try:
        engine = factory(**kwargs)
        for method in ("generate", "get_metrics"):
            if not callable(getattr(engine, method, None)):
                return {"failed": f"the {type(engine).__name__} it returns has no {method}()"}
        stage = "get_metrics"
        before, _ = counters_of(engine)
        start = before
        for batch in batches:
            stage = "generate"
            sampling = [params(**r.sampling_kwargs()) for r in batch]
            outputs = engine.generate([{"prompt_token_ids": list(r.prompt)} for r in batch], sampling, use_tqdm=False)
            stage = "reading generate's output"
            got = [[int(t) for t in output.outputs[0].token_ids] for output in outputs]
            if len(got) != len(batch):
                return {"failed": f"generate: {len(batch)} prompts but {len(got)} outputs"}
            tokens += got
            stage = "get_metrics"
            after, _ = counters_of(engine)
            per_call.append(after.minus(before).trimmed())
            before = after
        end, preemptions = counters_of(engine)
    except Exception as error:  # the engine's exception is the finding: reported, never raised
        if stage == "build" or (not per_call and stage != "generate"):
            return {"failed": f"{stage} {describe_exception(error)}"}
        return {
            "tokens": tokens,
            "counters": _counters_json(SpecCounters()),
            "per_call": [_counters_json(c) for c in per_call],
            "preemptions": None,
            "stopped": f"batch {len(per_call)}: {stage} {describe_exception(error)}",
        }
    finally:
        engine = None
        gc.collect()
    return {
        "tokens": tokens,
        "counters": _counters_json(end.minus(start).trimmed()),
        "per_call": [_counters_json(c) for c in per_call],
        "preemptions": preemptions,
    }


def _counters_json(c: SpecCounters) -> dict[str, Any]:
    return {
        "drafts": c.drafts,
        "draft_tokens": c.draft_tokens,
        "accepted": c.accepted,
        "accepted_per_pos": list(c.accepted_per_pos),
    }


def counters_from_json(raw: Mapping[str, Any]) -> SpecCounters:
    return SpecCounters(
        drafts=int(raw["drafts"]),
        draft_tokens=int(raw["draft_tokens"]),
        accepted=int(raw["accepted"]),
        accepted_per_pos=tuple(int(v) for v in raw["accepted_per_pos"]),
    )


def run_worker(job_path: str, results_path: str) -> int:
    job = json.loads(Path(job_path).read_text())
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    try:
        factory, params = load(job["target"], job.get("base_dir"))
    except Exception as error:
        Path(results_path).write_text(json.dumps({"failed": f"load: {error}"}) + "\n")
        return 0
    with open(results_path, "a") as out:
        for run in job["runs"]:
            batches = [
                [EngineRequest(**{**r, "prompt": tuple(r["prompt"])}) for r in batch] for batch in run["batches"]
            ]
            result = one_run(factory, params, run["kwargs"], batches)
            out.write(json.dumps(result) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(run_worker(sys.argv[1], sys.argv[2]))
