"""``Comm``: the collectives one process group offers (docs/parallel.md §1.4), and ``RankGroups``.

``all_gather`` concatenates on dim 0 in *declared* member order. ``torch.distributed.new_group``
sorts its ranks, so ``TorchComm`` reorders the raw collective output with
``ParallelLayout.gather_perm`` (§3.5); ``all_gather_raw`` keeps the collective order and exists only
to reproduce the upstream shard-permutation bug.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

import torch
import torch.distributed as dist
from torch import Tensor

from arctic_ref.parallel.layout import ParallelLayout


@runtime_checkable
class Comm(Protocol):
    """One group's collectives; ``rank`` is this process's position in ``members``."""

    @property
    def members(self) -> tuple[int, ...]: ...
    @property
    def rank(self) -> int: ...
    @property
    def size(self) -> int: ...
    def all_reduce(self, x: Tensor) -> Tensor: ...
    def all_to_all(self, x: Tensor) -> Tensor: ...
    def all_gather(self, x: Tensor) -> Tensor: ...


@dataclass(frozen=True, slots=True)
class SoloComm:
    """A group of one: every collective is the identity and no call is made."""

    member: int = 0

    @property
    def members(self) -> tuple[int, ...]:
        return (self.member,)

    @property
    def rank(self) -> int:
        return 0

    @property
    def size(self) -> int:
        return 1

    def all_reduce(self, x: Tensor) -> Tensor:
        return x

    def all_to_all(self, x: Tensor) -> Tensor:
        return x

    def all_gather(self, x: Tensor) -> Tensor:
        return x


@dataclass(frozen=True, slots=True)
class TorchComm:
    """A ``torch.distributed`` group (gloo or NCCL)."""

    members: tuple[int, ...]
    rank: int
    group: dist.ProcessGroup

    @property
    def size(self) -> int:
        return len(self.members)

    def all_reduce(self, x: Tensor) -> Tensor:
        out = x.contiguous().clone()
        dist.all_reduce(out, group=self.group)
        return out

    def all_to_all(self, x: Tensor) -> Tensor:
        """Equal splits on dim 0: block i goes to member i (members sorted = declared for SP groups)."""
        if list(self.members) != sorted(self.members):
            raise ValueError(f"all_to_all needs members in rank order, got {self.members}")
        out = torch.empty_like(x.contiguous())
        dist.all_to_all_single(out, x.contiguous(), group=self.group)
        return out

    def all_gather_raw(self, x: Tensor) -> Tensor:
        """Chunks in sorted global-rank order (the collective's own order)."""
        x = x.contiguous()
        out = torch.empty((self.size * x.shape[0], *x.shape[1:]), dtype=x.dtype, device=x.device)
        dist.all_gather_into_tensor(out, x, group=self.group)
        return out

    def all_gather(self, x: Tensor) -> Tensor:
        raw = self.all_gather_raw(x)
        perm = ParallelLayout.gather_perm(self.members)
        if perm == tuple(range(self.size)):
            return raw
        chunks = raw.view(self.size, x.shape[0], *x.shape[1:])
        return chunks[list(perm)].reshape(raw.shape)


CommOp = Literal["all_reduce", "all_to_all", "all_gather"]
GroupKind = Literal["tp", "sp", "shift"]
"""The three groups a rank belongs to (docs/parallel.md §1.2)."""


@dataclass(frozen=True, slots=True)
class CommCall:
    op: CommOp
    group: GroupKind
    members: tuple[int, ...]
    elements_sent: int
    bytes_sent: int


@dataclass(frozen=True, slots=True)
class CountingComm:
    """Wraps a Comm and records every call: op, group and the elements a rank sends (ring all-reduce
    2(n−1)/n·x, all-to-all (n−1)/n·x, all-gather (n−1)·x received)."""

    inner: Comm
    name: GroupKind
    log: list[CommCall] = field(default_factory=list)

    @property
    def members(self) -> tuple[int, ...]:
        return self.inner.members

    @property
    def rank(self) -> int:
        return self.inner.rank

    @property
    def size(self) -> int:
        return self.inner.size

    def _record(self, op: CommOp, x: Tensor, elements: float | int) -> None:
        if self.size > 1:
            count = round(elements)
            self.log.append(CommCall(op, self.name, self.members, count, count * x.element_size()))

    def all_reduce(self, x: Tensor) -> Tensor:
        self._record("all_reduce", x, 2 * (self.size - 1) / self.size * x.numel())
        return self.inner.all_reduce(x)

    def all_to_all(self, x: Tensor) -> Tensor:
        self._record("all_to_all", x, (self.size - 1) / self.size * x.numel())
        return self.inner.all_to_all(x)

    def all_gather(self, x: Tensor) -> Tensor:
        self._record("all_gather", x, (self.size - 1) * x.numel())
        return self.inner.all_gather(x)


@dataclass(frozen=True, slots=True)
class RankGroups:
    """This rank's TP, SP and shift groups."""

    rank: int
    tp: Comm
    sp: Comm
    shift: Comm


def _wrap(members: Sequence[int], rank: int, group: dist.ProcessGroup | None) -> Comm:
    if len(members) == 1 or group is None:
        return SoloComm(rank)
    return TorchComm(tuple(members), list(members).index(rank), group)


def build_groups(layout: ParallelLayout, rank: int) -> RankGroups:
    """Every rank creates every group in one fixed order (all TP, all SP, then shift), as
    ``torch.distributed.new_group`` requires; needs an initialised default group when world > 1."""
    if layout.world_size == 1:
        solo = SoloComm(rank)
        return RankGroups(rank=rank, tp=solo, sp=solo, shift=solo)
    made: dict[tuple[str, tuple[int, ...]], dist.ProcessGroup | None] = {}
    for kind, groups in (("tp", layout.tp_groups()), ("sp", layout.sp_groups()), ("shift", (layout.shift_group(),))):
        for members in groups:
            made[(kind, members)] = dist.new_group(sorted(members)) if len(members) > 1 else None
    tp, sp, shift = layout.tp_group_of(rank), layout.sp_group_of(rank), layout.shift_group()
    return RankGroups(
        rank=rank,
        tp=_wrap(tp, rank, made[("tp", tp)]),
        sp=_wrap(sp, rank, made[("sp", sp)]),
        shift=_wrap(shift, rank, made[("shift", shift)]),
    )


def counting(groups: RankGroups) -> tuple[RankGroups, list[CommCall]]:
    """The same groups, every call recorded into one shared log."""
    log: list[CommCall] = []
    return (
        RankGroups(
            rank=groups.rank,
            tp=CountingComm(groups.tp, "tp", log),
            sp=CountingComm(groups.sp, "sp", log),
            shift=CountingComm(groups.shift, "shift", log),
        ),
        log,
    )
