"""``spawn_ranks``: results per rank; a raising rank fails the run with its traceback; a hung rank
fails it at the timeout; no process is left running."""

import multiprocessing
import time

import pytest

from arctic_ref.parallel.launch import RankFailed, spawn_ranks
from arctic_ref.testing.layouts.launch_probes import hang_on_rank, raise_on_rank, sum_of_ranks

pytestmark = pytest.mark.multiproc


def test_results_come_back_per_rank() -> None:
    assert spawn_ranks(sum_of_ranks, world_size=3, timeout_s=60) == [3, 3, 3]
    assert spawn_ranks(sum_of_ranks, world_size=1) == [0]


def test_a_raising_rank_fails_the_run_with_its_error() -> None:
    with pytest.raises(RankFailed, match=r"rank 1 (also )?failed(.|\n)*ValueError: probe failure on rank 1"):
        spawn_ranks(raise_on_rank, 1, world_size=2, timeout_s=60)
    assert not multiprocessing.active_children()


def test_a_hung_rank_fails_the_run_at_the_timeout() -> None:
    """The timeout leaves rank 0 time to start (spawn, import torch, rendezvous) and finish on a
    loaded two-core machine: at 8 s a CI run of 2026-12-04 found rank 0 still starting."""
    began = time.monotonic()
    with pytest.raises(RankFailed, match=r"ranks \[1\] of 2 did not finish within 20 s"):
        spawn_ranks(hang_on_rank, 1, world_size=2, timeout_s=20)
    assert time.monotonic() - began < 45
    assert not multiprocessing.active_children()


def test_bad_world_sizes() -> None:
    with pytest.raises(ValueError, match=r"world_size must be >= 1 \(got 0\)"):
        spawn_ranks(sum_of_ranks, world_size=0)
