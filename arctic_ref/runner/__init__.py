"""The reference runner: scheduler, engine step, generation (docs/runner.md)."""

from arctic_ref.runner.engine import EngineConfig, RequestResult, SampleRecord, build_runner, run_requests
from arctic_ref.runner.requests import RequestState, SamplingParams, ScheduledRequest, SchedulerOutput
from arctic_ref.runner.runner import ReferenceRunner, RunnerOutput, StepStats
from arctic_ref.runner.scheduler import SchedulerConfig, SimpleScheduler

__all__ = [
    "EngineConfig",
    "ReferenceRunner",
    "RequestResult",
    "RequestState",
    "RunnerOutput",
    "SampleRecord",
    "SamplingParams",
    "ScheduledRequest",
    "SchedulerConfig",
    "SchedulerOutput",
    "SimpleScheduler",
    "StepStats",
    "build_runner",
    "run_requests",
]
