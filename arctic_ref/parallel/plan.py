"""``ShiftPolicy`` → ``StepPlan``: which model runs a step, at what padded shape, over which groups
(docs/parallel.md §3.1–3.2, §4.3). The plan is a value passed into the forward; nothing global changes."""

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from arctic_ref.parallel.comm import Comm, RankGroups
from arctic_ref.parallel.cudagraph import GraphTables, dp_padding, pad_to, round_up
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.parallel.ulysses import ULYSSES, Exchange


class StepMode(StrEnum):
    BASE = "base"
    SHIFT = "shift"


@dataclass(frozen=True, slots=True)
class ShiftPolicy:
    """SHIFT iff S > 1, enabled and n ≤ threshold (inclusive; n = scheduled tokens, drafts included).
    Default threshold 512 (arctic_inference args.py; its docs say 256)."""

    layout: ParallelLayout
    enabled: bool = False
    threshold: int = 512

    def __post_init__(self) -> None:
        if self.threshold < 0:
            raise ValueError(f"shift_parallel_threshold must be >= 0 (got {self.threshold})")
        if self.enabled and self.layout.sp == 1:
            raise ValueError(f"shift parallelism requires ulysses_sequence_parallel_size > 1 (got {self.layout.sp})")

    def mode(self, num_tokens: int) -> StepMode:
        shift = self.layout.sp > 1 and self.enabled and num_tokens <= self.threshold
        return StepMode.SHIFT if shift else StepMode.BASE


@dataclass(frozen=True, slots=True, kw_only=True)
class ModeGroups:
    """The groups one mode's collectives use: BASE tp=TP, sp=SP, vocab=TP; SHIFT tp=shift, sp=None."""

    tp: Comm
    sp: Comm | None
    vocab: Comm
    exchange: Exchange = ULYSSES
    """The all-to-all pair over ``sp`` (the reference's, or an implementation under test)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StepPlan:
    mode: StepMode
    num_scheduled_tokens: int
    num_input_tokens: int
    rows_per_rank: int
    token_slice: slice | None
    graph_size: int | None
    groups: ModeGroups


def padded_tokens(n: int, mode: StepMode, layout: ParallelLayout, graphs: GraphTables) -> tuple[int, int | None]:
    """(N, graph shape or None) by §4.3 rules 1–4 (before DP padding)."""
    sp, tp = layout.sp, layout.tp
    biggest = max(graphs.sizes) if graphs.enabled and graphs.sizes else 0
    if mode is StepMode.BASE and sp > 1:
        padded = round_up(n, sp)
        if padded // sp <= biggest:
            padded = pad_to(padded // sp, graphs.sizes) * sp
    elif n <= biggest:
        padded = pad_to(n, graphs.sizes)
    elif layout.native_sequence_parallelism and tp > 1:
        padded = round_up(n, tp)
    else:
        padded = n
    captured = graphs.base if mode is StepMode.BASE else graphs.shift
    return padded, padded if graphs.enabled and padded in captured else None


def plan_step(
    n: int,
    *,
    policy: ShiftPolicy,
    graphs: GraphTables,
    groups: RankGroups,
    dp_num_tokens: Sequence[int] = (),
    exchange: Exchange = ULYSSES,
) -> StepPlan:
    if n < 1:
        raise ValueError(f"a step needs >= 1 scheduled token (got {n})")
    layout = policy.layout
    mode = policy.mode(n)
    padded, graph = padded_tokens(n, mode, layout, graphs)
    padded += dp_padding(padded, dp_num_tokens, enforce_eager=not graphs.enabled)
    sliced = mode is StepMode.BASE and layout.sp > 1
    if sliced and padded % layout.sp:
        raise ValueError(f"DP padding gave {padded} tokens, not a multiple of sp({layout.sp})")
    rows = padded // layout.sp if sliced else padded
    s = layout.sp_rank(groups.rank)
    if mode is StepMode.BASE:
        mode_groups = ModeGroups(tp=groups.tp, sp=groups.sp, vocab=groups.tp, exchange=exchange)
    else:
        mode_groups = ModeGroups(tp=groups.shift, sp=None, vocab=groups.shift)
    return StepPlan(
        mode=mode,
        num_scheduled_tokens=n,
        num_input_tokens=padded,
        rows_per_rank=rows,
        token_slice=slice(s * rows, (s + 1) * rows) if sliced else None,
        graph_size=graph,
        groups=mode_groups,
    )
