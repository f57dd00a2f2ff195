"""A Ulysses exchange of one's own: the two all-to-alls over the SP group, written directly on the
``Comm`` (docs/parallel.md §2.2): [n, sp·c] (my tokens, every head group) ↔ [sp·n, c] (every token, my
head group)."""

import torch
from torch import Tensor

from arctic_ref.parallel.comm import Comm


class MyExchange:
    def seq_to_heads(self, x: Tensor, comm: Comm) -> Tensor:
        c = x.shape[1] // comm.size
        blocks = [x[:, i * c : (i + 1) * c] for i in self.head_order(comm.size)]  # block i goes to member i
        return comm.all_to_all(torch.cat(blocks, dim=0).contiguous())

    def heads_to_seq(self, y: Tensor, comm: Comm) -> Tensor:
        n = y.shape[0] // comm.size
        received = comm.all_to_all(y.contiguous())  # block j: my tokens, member j's head group
        return torch.cat([received[j * n : (j + 1) * n] for j in range(comm.size)], dim=1)

    def head_order(self, size: int) -> list[int]:
        return list(range(size))


def make_exchange() -> MyExchange:
    return MyExchange()
