"""``BlockTables``: which KV-cache blocks each request holds (docs/runner.md §3.6), owned by the engine."""

from dataclasses import dataclass, field

from arctic_ref.model.kv_cache import BLOCK_SIZE
from arctic_ref.types import ReqId


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
