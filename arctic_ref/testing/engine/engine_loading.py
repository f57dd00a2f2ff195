"""Turning ``--arctic-ref-engine=MODULE:ATTR`` into an ``EngineTarget``, with one-line errors for
what the user must fix: a factory that does not import, a package without ``SamplingParams``, and a
model the engine cannot load (a probe build, in a worker, says why: vLLM's CPU attention rejects
``head_dim`` 16, for one)."""

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from arctic_ref.testing.engine.checkpoint import write_engine_model
from arctic_ref.testing.engine.engine_target import EngineRequest, EngineSetup, EngineTarget
from arctic_ref.testing.engine.factory import load_factory
from arctic_ref.testing.engine.known_bugs import engine_identity
from arctic_ref.testing.engine.worker_pool import run_in_workers
from arctic_ref.testing.loading import TargetError

OUR_ENGINE: Final = "arctic_ref.runner.llm:LLM"
"""The reference runner as an engine: the built-in target of ``arctic-ref check``."""
CPU_KWARGS: Final[Mapping[str, object]] = {
    "skip_tokenizer_init": True,
    "enforce_eager": True,
    "gpu_memory_utilization": 0.2,
    "disable_log_stats": False,
}
"""What every build gets besides its setup: token-id prompts only, no graph capture, a small
memory share, and statistics on (the ``drafts`` check reads them)."""
_SCRATCH: list[tempfile.TemporaryDirectory[str]] = []
"""The kit's checkpoints, removed when the process ends."""


def kit_model() -> str:
    """A fresh directory holding the kit's checkpoint (``checkpoint.write_engine_model``)."""
    scratch = tempfile.TemporaryDirectory(prefix="arctic-ref-engine-")
    _SCRATCH.append(scratch)
    return str(write_engine_model(Path(scratch.name)))


def load_engine(
    option: str,
    value: str,
    *,
    model: str | None,
    dtype: str,
    base_dir: Path | None,
    probe: bool = True,
    model_option: str = "--arctic-ref-engine-model",
) -> EngineTarget:
    """The target ``value`` names, after importing it here (its ``SamplingParams`` found) and,
    with ``probe``, one spec-off build in a worker on ``model`` (the kit's when None) that generates
    two tokens (some engines refuse a model only when they first run it). ``model_option``: how the
    user spelled the model's option (the plugin's or the CLI's), for the error that names it."""
    factory = load_factory(option, value, base_dir=base_dir)
    if model is not None and not (Path(model) / "config.json").is_file():
        raise TargetError(f"{model_option}={model}: no config.json there (a Hugging Face checkpoint directory)")
    target = EngineTarget(
        name=value,
        option=option,
        model=model or kit_model(),
        base_dir=None if base_dir is None else str(base_dir),
        fixed_kwargs=dict(CPU_KWARGS) | {"dtype": dtype},
        identity=engine_identity(factory.build),
    )
    if probe:
        probe_request = EngineRequest(prompt=(0, 1, 2), max_tokens=2)
        (result,) = run_in_workers(
            target, [(EngineSetup(max_num_seqs=1, max_model_len=64), [[probe_request]])], seconds=600.0
        )
        failure = str(result) if isinstance(result, Exception) else result.failure
        if failure:
            raise TargetError(f"{option}={value}: cannot serve {target.model}: {failure}")
    return target
