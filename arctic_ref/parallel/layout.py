"""``ParallelLayout``: the (S, T) rank grid, its groups and the model-shape checks (docs/parallel.md §1).

Ranks form an array of shape (S, T), TP innermost: GPU (s, t) is rank ``s·T + t``. TP groups are
contiguous, SP groups strided by T, and the shift group holds all P = S·T ranks TP-major, so the
shift rank of (s, t) is ``t·S + s`` (upstream's head-order trick).
"""

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ParallelLayout:
    """A validated (world, TP, SP) layout; pure, no process groups."""

    world_size: int
    tensor_parallel_size: int
    ulysses_sequence_parallel_size: int
    native_sequence_parallelism: bool = False

    def __post_init__(self) -> None:
        for name in ("world_size", "tensor_parallel_size", "ulysses_sequence_parallel_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int (got {value!r})")
            if value < 1:
                raise ValueError(f"{name} must be >= 1 (got {value})")
        if self.world_size != self.tp * self.sp:
            raise ValueError(
                f"world_size({self.world_size}) != tensor_parallel_size({self.tp}) * "
                f"ulysses_sequence_parallel_size({self.sp}); pipeline parallelism is not supported"
            )
        if self.sp > 1 and self.native_sequence_parallelism:
            raise ValueError(
                f"ulysses sequence parallelism (sp={self.sp}) cannot be combined with native sequence parallelism"
            )

    @property
    def tp(self) -> int:
        return self.tensor_parallel_size

    @property
    def sp(self) -> int:
        return self.ulysses_sequence_parallel_size

    def rank_of(self, s: int, t: int) -> int:
        return s * self.tp + t

    def coords(self, rank: int) -> tuple[int, int]:
        """(s, t) of a global rank."""
        if not 0 <= rank < self.world_size:
            raise ValueError(f"rank({rank}) outside [0, {self.world_size})")
        return rank // self.tp, rank % self.tp

    def tp_rank(self, rank: int) -> int:
        return self.coords(rank)[1]

    def sp_rank(self, rank: int) -> int:
        return self.coords(rank)[0]

    def shift_rank(self, rank: int) -> int:
        s, t = self.coords(rank)
        return t * self.sp + s

    def tp_groups(self) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(self.rank_of(s, t) for t in range(self.tp)) for s in range(self.sp))

    def sp_groups(self) -> tuple[tuple[int, ...], ...]:
        return tuple(tuple(self.rank_of(s, t) for s in range(self.sp)) for t in range(self.tp))

    def shift_group(self) -> tuple[int, ...]:
        """All ranks, position = shift rank."""
        return tuple(self.rank_of(s, t) for t in range(self.tp) for s in range(self.sp))

    def tp_group_of(self, rank: int) -> tuple[int, ...]:
        return self.tp_groups()[self.sp_rank(rank)]

    def sp_group_of(self, rank: int) -> tuple[int, ...]:
        return self.sp_groups()[self.tp_rank(rank)]

    @staticmethod
    def gather_perm(members: Sequence[int]) -> tuple[int, ...]:
        """Index that turns a collective's output (chunks in sorted-rank order) into declared
        member order: ``argsort([members.index(g) for g in sorted(members)])`` (docs/parallel.md §3.5)."""
        shard_of_sorted = [list(members).index(g) for g in sorted(members)]
        return tuple(sorted(range(len(members)), key=shard_of_sorted.__getitem__))

    def validate_model(
        self, *, num_attention_heads: int, num_key_value_heads: int, intermediate_size: int, shift: bool = False
    ) -> None:
        """V3–V7 of docs/parallel.md §1.3, raised with the numbers."""
        heads, kv, inter = num_attention_heads, num_key_value_heads, intermediate_size
        tp, sp, p = self.tp, self.sp, self.tp * self.sp
        if heads % p:
            raise ValueError(f"num_attention_heads({heads}) is not divisible by tp({tp}) * sp({sp}) = {p}")
        if kv % tp and tp % kv:
            raise ValueError(f"num_key_value_heads({kv}) and tensor_parallel_size({tp}): one must divide the other")
        kv_per_tp = max(1, kv // tp)
        if kv_per_tp % sp and sp % kv_per_tp:
            raise ValueError(
                f"kv heads per tp rank({kv_per_tp}) and ulysses_sequence_parallel_size({sp}): one must divide the other"
            )
        if heads % kv:
            raise ValueError(f"num_attention_heads({heads}) is not divisible by num_key_value_heads({kv})")
        divisor = p if shift else tp
        if inter % divisor:
            what = "tp * sp, shift enabled" if shift else "tp"
            raise ValueError(f"intermediate_size({inter}) is not divisible by {divisor} ({what})")
