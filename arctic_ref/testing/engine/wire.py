"""What the checking process and an engine worker (``worker``) say to each other, as JSON.

The parent writes a job: the target (its ``MODULE:ATTR``, the option that named it, the directory
put first on ``sys.path``) and a list of runs, each the keyword arguments of one build and its
batches of requests. The worker answers one line per finished run: the run (tokens, counters,
preemptions, why it stopped early), or why it failed. Both sides encode and decode here, so the
format is spelled once."""

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arctic_ref.testing.engine.engine_target import EngineRequest, EngineRun, SpecCounters


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRun:
    """One build and what is sent to it."""

    kwargs: Mapping[str, Any]
    """The factory's keyword arguments (the model, the setup's, the fixed ones)."""
    batches: tuple[tuple[EngineRequest, ...], ...]
    """One ``generate`` call each."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """What one worker process is asked to do."""

    target: str
    """``MODULE:ATTR``: the factory the worker imports."""
    option: str
    """The option that named ``target``, as the user typed it (``--arctic-ref-engine``,
    ``--impl engine``): the worker's messages name it as the parent's do."""
    base_dir: str | None
    """Put first on the worker's ``sys.path``."""
    runs: tuple[JobRun, ...]


def encode_job(job: Job) -> str:
    return json.dumps(
        {
            "target": job.target,
            "option": job.option,
            "base_dir": job.base_dir,
            "runs": [
                {"kwargs": dict(run.kwargs), "batches": [[_request_json(r) for r in batch] for batch in run.batches]}
                for run in job.runs
            ],
        }
    )


def decode_job(text: str) -> Job:
    raw = json.loads(text)
    return Job(
        target=raw["target"],
        option=raw["option"],
        base_dir=raw.get("base_dir"),
        runs=tuple(
            JobRun(
                kwargs=run["kwargs"],
                batches=tuple(
                    tuple(EngineRequest(**{**r, "prompt": tuple(r["prompt"])}) for r in batch)
                    for batch in run["batches"]
                ),
            )
            for run in raw["runs"]
        ),
    )


def encode_result(result: EngineRun | str) -> str:
    """One results line: the run (its ``seconds`` left out: the parent times the worker), or a
    ``str`` saying why the run failed."""
    if isinstance(result, str):
        return json.dumps({"failed": result})
    out: dict[str, Any] = {
        "tokens": [list(t) for t in result.tokens],
        "counters": _counters_json(result.counters),
        "per_call": [_counters_json(c) for c in result.per_call],
        "preemptions": result.preemptions,
    }
    if result.failure:
        out["stopped"] = result.failure
    return json.dumps(out)


def decode_result(line: str, *, seconds: float) -> EngineRun | str:
    """The run one results line holds, timed ``seconds``, or why it failed."""
    raw = json.loads(line)
    if "failed" in raw:
        return str(raw["failed"])
    return EngineRun(
        tokens=tuple(tuple(t) for t in raw["tokens"]),
        counters=_counters_from_json(raw["counters"]),
        per_call=tuple(_counters_from_json(c) for c in raw["per_call"]),
        preemptions=raw["preemptions"],
        seconds=seconds,
        failure=raw.get("stopped", ""),
    )


def _request_json(r: EngineRequest) -> dict[str, Any]:
    return {
        "prompt": list(r.prompt),
        "max_tokens": r.max_tokens,
        "temperature": r.temperature,
        "top_k": r.top_k,
        "top_p": r.top_p,
        "seed": r.seed,
    }


def _counters_json(c: SpecCounters) -> dict[str, Any]:
    return {
        "drafts": c.drafts,
        "draft_tokens": c.draft_tokens,
        "accepted": c.accepted,
        "accepted_per_pos": list(c.accepted_per_pos),
    }


def _counters_from_json(raw: Mapping[str, Any]) -> SpecCounters:
    return SpecCounters(
        drafts=int(raw["drafts"]),
        draft_tokens=int(raw["draft_tokens"]),
        accepted=int(raw["accepted"]),
        accepted_per_pos=tuple(int(v) for v in raw["accepted_per_pos"]),
    )
