"""``spawn_ranks``: run one function on N local processes joined by torch.distributed (gloo on CPU,
NCCL on CUDA), with a file rendezvous in a temporary directory. A rank that raises fails the whole
run with that rank's traceback; a run past ``timeout_s`` is killed and reported; nothing is left
running either way."""

import os
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar, TypeVarTuple

import torch
import torch.distributed as dist
from torch.multiprocessing.spawn import ProcessExitedException, ProcessRaisedException, start_processes

Args = TypeVarTuple("Args")
Result = TypeVar("Result")


@dataclass(frozen=True, slots=True)
class RankInfo:
    rank: int
    world_size: int
    backend: str


class RankFailed(RuntimeError):
    """A rank raised, or the run timed out; the message names the rank and carries its error."""


def _entry(
    index: int,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    world: int,
    backend: str,
    workdir: str,
    timeout_s: float | int,
) -> None:
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    warnings.filterwarnings("ignore", category=FutureWarning, module="torch.distributed")  # all_gather_into_tensor
    if backend == "nccl":
        torch.cuda.set_device(index)
    dist.init_process_group(
        backend,
        init_method=f"file://{workdir}/rendezvous",
        rank=index,
        world_size=world,
        timeout=timedelta(seconds=timeout_s),
    )
    try:
        result = fn(RankInfo(index, world, backend), *args)
        torch.save(result, Path(workdir) / f"result-{index}.pt")
    except BaseException:
        (Path(workdir) / f"error-{index}.txt").write_text(traceback.format_exc())
        raise
    finally:
        dist.destroy_process_group()


def _other_errors(workdir: str, seen: int) -> str:
    """Tracebacks of every other rank that failed: the first failure noticed need not be the cause
    (a peer of a crashed rank fails in its next collective)."""
    notes = [
        f"\nrank {path.stem.removeprefix('error-')} also failed:\n{path.read_text()}"
        for path in sorted(Path(workdir).glob("error-*.txt"))
        if path.stem != f"error-{seen}"
    ]
    return "".join(notes)


def spawn_ranks(
    fn: Callable[[RankInfo, *Args], Result],
    *args: *Args,
    world_size: int,
    backend: str = "gloo",
    timeout_s: float | int = 300.0,
) -> list[Result]:
    """``fn(RankInfo, *args)`` on every rank (``fn`` must be importable by name); returns each rank's
    result. world_size 1 runs in-process without a process group."""
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1 (got {world_size})")
    if backend == "nccl" and world_size > torch.cuda.device_count():
        raise ValueError(f"world_size({world_size}) > visible GPUs({torch.cuda.device_count()})")
    if world_size == 1:
        return [fn(RankInfo(0, 1, backend), *args)]
    with tempfile.TemporaryDirectory(prefix="arctic-ref-ranks-") as workdir:
        context = start_processes(  # type: ignore[no-untyped-call]
            _entry,
            args=(fn, args, world_size, backend, workdir, timeout_s),
            nprocs=world_size,
            join=False,
            start_method="spawn",
        )
        deadline = time.monotonic() + timeout_s
        try:
            while not context.join(timeout=max(0.1, min(1.0, deadline - time.monotonic()))):
                if time.monotonic() > deadline:
                    alive = [i for i, p in enumerate(context.processes) if p.is_alive()]
                    raise RankFailed(f"ranks {alive} of {world_size} did not finish within {timeout_s:.0f} s")
        except ProcessRaisedException as error:
            raise RankFailed(
                f"rank {error.error_index} failed:\n{error}{_other_errors(workdir, error.error_index)}"
            ) from None
        except ProcessExitedException as error:
            detail = Path(workdir) / f"error-{error.error_index}.txt"
            text = detail.read_text() if detail.exists() else f"exit code {error.exit_code}"
            raise RankFailed(
                f"rank {error.error_index} exited:\n{text}{_other_errors(workdir, error.error_index)}"
            ) from None
        finally:
            for process in context.processes:
                if process.is_alive():
                    process.kill()
                process.join(timeout=5)
        return [torch.load(Path(workdir) / f"result-{i}.pt", weights_only=False) for i in range(world_size)]
