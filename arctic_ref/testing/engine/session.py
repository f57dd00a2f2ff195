"""One engine check run's shared state: the engine, the float64 reference of the checkpoint it
serves, and every engine run made so far (the ``reference`` check reads the ``lossless`` check's
spec-off run instead of starting the engine again)."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from arctic_ref.check_options import Level
from arctic_ref.testing.engine.checkpoint import ReferenceModel
from arctic_ref.testing.engine.engine_target import EngineFailure, EngineRun, EngineTarget
from arctic_ref.testing.engine.worker_pool import PlannedRun, run_in_workers

WORKER_SECONDS: Final = 900.0
"""The most one worker process may take (its builds and runs together)."""


@dataclass(slots=True)
class EngineSession:
    """The engine under test and what it has answered so far."""

    target: EngineTarget
    level: Level
    _reference: ReferenceModel | None = None
    _runs: dict[str, EngineRun | EngineFailure] = field(default_factory=dict)

    def reference(self) -> ReferenceModel:
        if self._reference is None:
            self._reference = ReferenceModel.load(Path(self.target.model))
        return self._reference

    def runs(self, planned: Sequence[PlannedRun]) -> list[EngineRun | EngineFailure]:
        """Each planned run's result (an ``EngineFailure`` when the engine failed it), made in
        worker processes; runs made before are not repeated."""
        keys = [repr((setup, [list(batch) for batch in batches])) for setup, batches in planned]
        fresh = [i for i, key in enumerate(keys) if key not in self._runs]
        fresh = list({keys[i]: i for i in fresh}.values())
        for i, result in zip(
            fresh, run_in_workers(self.target, [planned[i] for i in fresh], seconds=WORKER_SECONDS), strict=True
        ):
            self._runs[keys[i]] = result
        return [self._runs[key] for key in keys]

    def complete_runs(self, planned: Sequence[PlannedRun]) -> list[EngineRun | EngineFailure]:
        """``runs``, with a run that stopped part-way turned into its ``EngineFailure``."""
        return [complete(planned[i][0].label, r) for i, r in enumerate(self.runs(planned))]

    def run(self, planned: PlannedRun) -> EngineRun:
        """One run that finished every batch; its ``EngineFailure`` raised otherwise."""
        (result,) = self.complete_runs([planned])
        if isinstance(result, EngineFailure):
            raise result
        return result


def complete(label: str, result: EngineRun | EngineFailure) -> EngineRun | EngineFailure:
    if isinstance(result, EngineRun) and result.failure:
        return EngineFailure(f"{label}: {result.failure}")
    return result
