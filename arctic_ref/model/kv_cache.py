"""The paged KV cache of one rank (runner.md §3.6): per layer K and V ``[num_blocks, 16, heads, d]``,
block 0 reserved, ``slot = block·16 + pos % 16``, pad rows −1; and the block tables."""

from dataclasses import dataclass, field

import torch
from torch import Tensor

from arctic_ref.types import ReqId

BLOCK_SIZE = 16


@dataclass(frozen=True, slots=True)
class KVCache:
    keys: tuple[Tensor, ...]
    values: tuple[Tensor, ...]

    @classmethod
    def allocate(
        cls, *, layers: int, num_blocks: int, heads: int, head_dim: int, dtype: torch.dtype, device: torch.device,
        fill: float = float("nan"),
    ) -> "KVCache":  # fmt: skip
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


@dataclass(slots=True)
class BlockTables:
    """Owned by the engine: block lists per request, grown on demand, freed on finish."""

    num_blocks: int
    tables: dict[ReqId, list[int]] = field(default_factory=dict)
    free: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.free = list(range(self.num_blocks - 1, 0, -1))  # block 0 is reserved

    def ensure(self, req: ReqId, num_tokens: int) -> None:
        table = self.tables.setdefault(req, [])
        needed = -(-num_tokens // BLOCK_SIZE)
        if needed - len(table) > len(self.free):
            raise ValueError(f"KV pool exhausted: {req} needs {needed - len(table)} blocks, {len(self.free)} free")
        while len(table) < needed:
            table.append(self.free.pop())

    def slots(self, req: ReqId, positions: range) -> list[int]:
        table = self.tables[req]
        return [table[p // BLOCK_SIZE] * BLOCK_SIZE + p % BLOCK_SIZE for p in positions]

    def release(self, req: ReqId) -> None:
        self.free.extend(reversed(self.tables.pop(req, [])))
