"""The paged KV cache of one rank (docs/runner.md §3.6): per layer K and V ``[num_blocks, 16, heads, d]``,
block 0 reserved, ``slot = block·16 + pos % 16``, pad rows −1. The block tables that map requests to
blocks are the engine's (``arctic_ref.runner.block_tables``)."""

from dataclasses import dataclass

import torch
from torch import Tensor

BLOCK_SIZE = 16


@dataclass(frozen=True, slots=True)
class KVCache:
    keys: tuple[Tensor, ...]
    values: tuple[Tensor, ...]

    @classmethod
    def allocate(
        cls,
        *,
        layers: int,
        num_blocks: int,
        heads: int,
        head_dim: int,
        dtype: torch.dtype,
        device: torch.device,
        fill: float = float("nan"),
    ) -> "KVCache":
        """Unused blocks hold ``fill`` (NaN by default), so a read of an unwritten slot shows."""
        shape = (num_blocks, BLOCK_SIZE, heads, head_dim)
        return cls(
            keys=tuple(torch.full(shape, fill, dtype=dtype, device=device) for _ in range(layers)),
            values=tuple(torch.full(shape, fill, dtype=dtype, device=device) for _ in range(layers)),
        )

    def write(self, layer: int, slots: Tensor, k: Tensor, v: Tensor) -> None:
        """k, v ``[N, heads, d]`` at ``slots [N]``; slot −1 (pad rows) writes nothing."""
        keep = slots >= 0
        flat_k = self.keys[layer].view(-1, *self.keys[layer].shape[2:])
        flat_v = self.values[layer].view(-1, *self.values[layer].shape[2:])
        flat_k[slots[keep]] = k[keep]
        flat_v[slots[keep]] = v[keep]

    def write_static(self, layer: int, slots: Tensor, k: Tensor, v: Tensor) -> None:
        """The graph-capturable write: pad rows (slot −1) land in reserved block 0, which no real
        row ever reads; ``index_copy_`` keeps shapes static."""
        safe = torch.where(slots >= 0, slots, torch.zeros_like(slots))
        self.keys[layer].view(-1, *self.keys[layer].shape[2:]).index_copy_(0, safe, k)
        self.values[layer].view(-1, *self.values[layer].shape[2:]).index_copy_(0, safe, v)

    def read(self, layer: int, slots: Tensor) -> tuple[Tensor, Tensor]:
        flat_k = self.keys[layer].view(-1, *self.keys[layer].shape[2:])
        flat_v = self.values[layer].view(-1, *self.values[layer].shape[2:])
        return flat_k[slots], flat_v[slots]
