"""Rank functions that misbehave on purpose, importable by name for ``spawn_ranks`` tests: one rank
raises, or one rank hangs in a collective the others never join."""

import time

import torch
import torch.distributed as dist

from arctic_ref.parallel.launch import RankInfo


def sum_of_ranks(info: RankInfo) -> int:
    x = torch.tensor([float(info.rank)])
    if dist.is_initialized():  # world 1 runs in-process without a group
        dist.all_reduce(x)
    return int(x.item())


def raise_on_rank(info: RankInfo, bad_rank: int) -> int:
    if info.rank == bad_rank:
        raise ValueError(f"probe failure on rank {info.rank}")
    return info.rank


def hang_on_rank(info: RankInfo, bad_rank: int) -> int:
    if info.rank == bad_rank:
        time.sleep(3600)
    return info.rank
