"""Where a broken engine reaches into a live vLLM 0.32 ``LLM`` (in-process engine core, the V1 CPU
model runner): one place that knows the attribute paths, checked in the installed source
(``vllm/v1/engine/llm_engine.py``, ``core_client.py`` ``InprocClient``, ``core.py`` ``EngineCore``,
``executor/uniproc_executor.py``, ``worker/cpu_worker.py``)."""

from dataclasses import dataclass
from typing import Any

from vllm import LLM


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineParts:
    """The instances a fault is planted in. Each belongs to this one engine: changing an attribute of
    one changes nothing outside it (each worker process builds engines of one target only)."""

    scheduler: Any
    """``vllm.v1.core.sched.scheduler.Scheduler``: plans each step, rolls back rejected drafts."""
    runner: Any
    """``vllm.v1.worker.cpu_model_runner.CPUModelRunner``: forward, sample/verify, bookkeeping, propose."""
    drafter: Any
    """``NgramProposer`` or ``SuffixDecodingProposer`` (None when drafting is off)."""
    sampler: Any
    """``vllm.v1.sample.rejection_sampler.RejectionSampler`` (None when drafting is off)."""


def parts_of(llm: LLM) -> EngineParts:
    """The parts of an engine built with ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` (the kit's worker sets it)."""
    core = llm.llm_engine.engine_core.engine_core
    runner = core.model_executor.driver_worker.worker.model_runner
    if runner.use_async_scheduling:
        raise ValueError("broken engines plant faults on vLLM's synchronous path; async scheduling is on")
    return EngineParts(
        scheduler=core.scheduler,
        runner=runner,
        drafter=getattr(runner, "drafter", None),
        sampler=getattr(runner, "rejection_sampler", None),
    )
