"""Multi-rank checks beyond the layout matrix (docs/parallel.md §2.2, §3.3 T2, §3.5): the Ulysses
exchanges against their all-gather oracle, KV-cache invariance between BASE and SHIFT, and the
shard order of gathered shift logits (with the raw collective order reintroduced as the bug fixture).
Each worker returns, on every rank, a dict of figures the tests assert on."""

from dataclasses import dataclass

import torch
from torch import Tensor

from arctic_ref.model.config import tiny_config
from arctic_ref.model.weights import random_weights
from arctic_ref.parallel.comm import Comm, RankGroups, SoloComm, TorchComm, build_groups
from arctic_ref.parallel.launch import RankInfo
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.parallel.ulysses import heads_to_seq, seq_to_heads
from arctic_ref.runner.engine import EngineConfig, SampleRecord, build_runner, request_id, run_requests
from arctic_ref.runner.requests import SamplingParams
from arctic_ref.runner.scheduler import SchedulerConfig
from arctic_ref.testing.layouts.rank_figure import RankFigure, above, at_most, holds


def check_exchanges(info: RankInfo) -> tuple[RankFigure, ...]:
    """S = world, T = 1: seq_to_heads equals the SP all-gather restricted to this rank's column
    block; heads_to_seq inverts it bit for bit; the hidden all-gather is in token order."""
    layout = ParallelLayout(info.world_size, 1, info.world_size)
    sp = build_groups(layout, info.rank).sp
    n, c = 5, 6
    x = torch.randn(n, sp.size * c, dtype=torch.float64, generator=torch.Generator().manual_seed(info.rank))
    y = seq_to_heads(x, sp)
    everything = sp.all_gather(x)  # [S·n, S·c], rank order = token order
    oracle = everything[:, sp.rank * c : (sp.rank + 1) * c]
    back = heads_to_seq(y, sp)
    expected_rows = torch.cat(
        [
            torch.randn(n, sp.size * c, dtype=torch.float64, generator=torch.Generator().manual_seed(r))
            for r in range(sp.size)
        ]
    )
    return (
        holds("seq_to_heads_equals_oracle", torch.equal(y, oracle)),
        holds("round_trip_bitwise", torch.equal(back, x)),
        holds("all_gather_token_order", torch.equal(everything, expected_rows)),
    )


def _kv_after_prefill(info: RankInfo, layout: ParallelLayout, groups: RankGroups, threshold: int) -> list[Tensor]:
    """Prefill a 13-token prompt with shift enabled at ``threshold``; K and V of its slots per layer."""
    model = tiny_config()
    engine = EngineConfig(
        model=model, layout=layout, shift_threshold=threshold, scheduler=SchedulerConfig(max_num_batched_tokens=64)
    )
    runner = build_runner(engine, random_weights(model, 0), groups)
    run_requests(runner, engine.scheduler, [list(range(3, 16))], [SamplingParams(max_tokens=1)])
    slots = torch.tensor(runner.blocks.slots(request_id(0), range(13)))  # still allocated: no step followed
    return [
        torch.cat([runner.cache.read(i, slots)[0], runner.cache.read(i, slots)[1]])
        for i in range(model.num_hidden_layers)
    ]


def check_kv_invariance(info: RankInfo, sizes: tuple[int, int]) -> tuple[RankFigure, ...]:
    """T2: the same prompt prefilled in BASE (threshold 0) and in SHIFT (threshold ≥ 13) leaves the
    same K and V, per rank and layer, at the prompt's slots."""
    sp, tp = sizes
    layout = ParallelLayout(info.world_size, tp, sp)
    groups = build_groups(layout, info.rank)
    base = _kv_after_prefill(info, layout, groups, threshold=0)
    shift = _kv_after_prefill(info, layout, groups, threshold=64)
    return (
        at_most("max_abs", max(float((a - b).abs().max()) for a, b in zip(base, shift, strict=True)), 1e-12),
        holds("finite", all(bool(torch.isfinite(a).all()) for a in base)),
    )


@dataclass(frozen=True, slots=True)
class RawGatherComm:
    """The bug fixture: gathers in the collective's sorted-rank order, as the seed did."""

    inner: TorchComm

    @property
    def members(self) -> tuple[int, ...]:
        return self.inner.members

    @property
    def rank(self) -> int:
        return self.inner.rank

    @property
    def size(self) -> int:
        return self.inner.size

    def all_reduce(self, x: Tensor) -> Tensor:
        return self.inner.all_reduce(x)

    def all_to_all(self, x: Tensor) -> Tensor:
        return self.inner.all_to_all(x)

    def all_gather(self, x: Tensor) -> Tensor:
        return self.inner.all_gather_raw(x)


def _first_logits(layout: ParallelLayout, groups: RankGroups, threshold: int | None) -> Tensor:
    model = tiny_config()
    engine = EngineConfig(
        model=model, layout=layout, shift_threshold=threshold, scheduler=SchedulerConfig(max_num_batched_tokens=64)
    )
    runner = build_runner(engine, random_weights(model, 0), groups)
    records: list[SampleRecord] = []
    run_requests(runner, engine.scheduler, [list(range(1, 17))], [SamplingParams(max_tokens=1)], records=records)
    return records[0].logits


def check_logits_order(info: RankInfo) -> tuple[RankFigure, ...]:
    """S=2, T=2, every step SHIFT: corrected gather equals the single-rank logits; the raw gather
    equals them with vocab shards 1 and 2 swapped (docs/parallel.md §3.5 item 4)."""
    layout = ParallelLayout(4, 2, 2)
    groups = build_groups(layout, info.rank)
    solo: Comm = SoloComm(info.rank)
    baseline = _first_logits(ParallelLayout(1, 1, 1), RankGroups(rank=0, tp=solo, sp=solo, shift=solo), None)
    fixed = _first_logits(layout, groups, 2**31 - 1)
    assert isinstance(groups.shift, TorchComm)
    raw_groups = RankGroups(rank=groups.rank, tp=groups.tp, sp=groups.sp, shift=RawGatherComm(groups.shift))
    raw = _first_logits(layout, raw_groups, 2**31 - 1)
    shard = 128  # V = 512 over P = 4
    swapped = torch.cat(
        [baseline[:shard], baseline[2 * shard : 3 * shard], baseline[shard : 2 * shard], baseline[3 * shard :]]
    )
    return (
        at_most("fixed_max_abs", float((fixed - baseline).abs().max()), 1e-9),
        at_most("raw_vs_swapped_max_abs", float((raw - swapped).abs().max()), 1e-9),
        above("raw_vs_baseline_max_abs", float((raw - baseline).abs().max()), 1e-3),  # the fixture reintroduces the bug
    )
