"""Ulysses exchanges over the SP group (DeepSpeed-Ulysses, arXiv 2309.14509; docs/parallel.md §2.2)."""

from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

from jaxtyping import Float
from torch import Tensor

from arctic_ref.parallel.comm import Comm


def seq_to_heads(x: Float[Tensor, "local_tokens width"], comm: Comm) -> Float[Tensor, "all_tokens group_width"]:
    """[n, sp·c] → [sp·n, c]. In: this rank's n tokens (slice s), all sp head groups of the TP
    shard, group-major columns. Out: all N = sp·n tokens in global order, head group s only.
    One all-to-all over the SP group."""
    n, width = x.shape
    sp = comm.size
    if width % sp:
        raise ValueError(f"width({width}) is not divisible by sp({sp})")
    c = width // sp
    blocks = x.view(n, sp, c).transpose(0, 1).contiguous()  # block i → member i
    return comm.all_to_all(blocks.view(sp * n, c)).view(sp * n, c)


def heads_to_seq(y: Float[Tensor, "all_tokens group_width"], comm: Comm) -> Float[Tensor, "local_tokens width"]:
    """[sp·n, c] → [n, sp·c]. In: all N tokens, head group s. Out: this rank's n tokens, all sp head
    groups in order. One all-to-all over the SP group; the exact inverse of ``seq_to_heads``."""
    total, c = y.shape
    sp = comm.size
    if total % sp:
        raise ValueError(f"token count({total}) is not divisible by sp({sp})")
    n = total // sp
    received = comm.all_to_all(y.contiguous()).view(sp, n, c)  # block i: member i's head group
    return received.transpose(0, 1).reshape(n, sp * c)


@runtime_checkable
class Exchange(Protocol):
    """The pair of all-to-alls a forward uses over its SP group: where a user's Ulysses exchange
    plugs into the reference forward (``plan_step(..., exchange=...)``) to be checked layout by layout."""

    def seq_to_heads(self, x: Tensor, comm: Comm) -> Tensor: ...
    def heads_to_seq(self, y: Tensor, comm: Comm) -> Tensor: ...


@dataclass(frozen=True, slots=True)
class UlyssesExchange:
    """The reference exchange: this module's ``seq_to_heads`` and ``heads_to_seq``."""

    def seq_to_heads(self, x: Tensor, comm: Comm) -> Tensor:
        return seq_to_heads(x, comm)

    def heads_to_seq(self, y: Tensor, comm: Comm) -> Tensor:
        return heads_to_seq(y, comm)


ULYSSES: Final = UlyssesExchange()
