"""The layout matrix (docs/parallel.md §5), shared by the ``layouts`` component (arctic_ref's own
layouts) and the ``exchange`` component (yours, run inside those layouts): the cases L0-L9, running
the built-in prompts greedily in one layout on every rank, and comparing a layout's logits and tokens
with the single-rank baseline L0.

The rank workers are module-level functions so ``spawn_ranks`` can start them by name."""

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Literal, get_args

import torch

from arctic_ref.model.config import DTYPES, ModelConfig, tiny_config
from arctic_ref.model.weights import random_weights
from arctic_ref.parallel.comm import CommOp, GroupKind, build_groups, counting
from arctic_ref.parallel.launch import RankInfo, spawn_ranks
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.parallel.plan import StepMode
from arctic_ref.parallel.ulysses import ULYSSES, Exchange
from arctic_ref.runner.drafters import (
    Drafter,
    HiddenStateDrafter,
    NgramDrafter,
    NoDrafter,
    SpeculatorDrafter,
    SuffixDrafter,
)
from arctic_ref.runner.engine import EngineConfig, Kernel, RequestResult, SampleRecord, build_runner, run_requests
from arctic_ref.runner.prompts import builtin_prompts
from arctic_ref.runner.requests import SamplingParams
from arctic_ref.runner.scheduler import SchedulerConfig
from arctic_ref.runner.speculator import Kind, speculator_for
from arctic_ref.spec.drafts import arctic_config
from arctic_ref.testing.drafter_doubles import JunkDrafter, OracleDrafter
from arctic_ref.testing.loading import build, load_target, require_callable, require_methods

TOLERANCE = {"float64": (1e-9, None), "float32": (1e-4, 1e-5), "bfloat16": (5e-2, 5e-3)}  # (max, mean) |Δ|


DrafterName = Literal["none", "ngram", "suffix", "oracle", "junk", "arctic-mlp", "arctic-lstm", "hybrid"]
"""The drafters a layout case can run (the spec-lossless check uses all of them)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LayoutCase:
    name: str
    tp: int
    sp: int
    shift_threshold: int | None = None
    dtype: str = "float64"
    budget: int = 64
    max_tokens: int = 32
    seed: int = 0
    device: str = "cpu"  # "cuda": rank r on cuda:r (NCCL)
    drafter: DrafterName = "none"
    reference: tuple[tuple[int, ...], ...] = ()  # the oracle drafter's L0 outputs
    oracle_correct: int = 3
    kernels: Kernel = "reference"
    exchange: str = ""
    """``MODULE:FACTORY`` of a Ulysses exchange under test, built on every rank ("" = the reference's)."""

    @property
    def label(self) -> str:
        label = self.name if self.drafter == "none" else f"{self.name}+{self.drafter}"
        label = label if self.kernels == "reference" else f"{label}/{self.kernels}"
        return label if not self.exchange else f"{label}@{self.exchange}"

    @property
    def world_size(self) -> int:
        return self.tp * self.sp


LAYOUTS: tuple[LayoutCase, ...] = (
    LayoutCase(name="L0", tp=1, sp=1),
    LayoutCase(name="L1", tp=2, sp=1),
    LayoutCase(name="L2", tp=1, sp=2),
    LayoutCase(name="L3", tp=2, sp=2),
    LayoutCase(name="L4", tp=1, sp=4),
    LayoutCase(name="L5", tp=4, sp=1),
    LayoutCase(name="L6", tp=2, sp=2, shift_threshold=16),
    LayoutCase(name="L7", tp=2, sp=2, shift_threshold=2**31 - 1),
    LayoutCase(name="L8", tp=1, sp=2, shift_threshold=16),
)
L9 = LayoutCase(name="L9", tp=2, sp=4, shift_threshold=16)  # the worked 8-GPU layout: GPU suite only
BY_NAME = {case.name: case for case in (*LAYOUTS, L9)}

# The case lists ``arctic-ref check`` (layouts/conformance.py) and ``conformance/`` run, kept in one place.
LOW_PRECISION: tuple[LayoutCase, ...] = tuple(
    replace(BY_NAME[n], dtype=d) for n in ("L3", "L7") for d in ("float32", "bfloat16")
)
"""float32 and bfloat16 on L3 and L7, against ``LOW_BASELINES`` under the tolerance table."""
LOW_BASELINES: tuple[LayoutCase, ...] = tuple(replace(BY_NAME["L0"], dtype=d) for d in ("float32", "bfloat16"))
CHECK_DRAFTERS: tuple[DrafterName, ...] = get_args(DrafterName)[1:]
"""The spec-lossless check: every drafter on L0, L3 and L6."""
CHECK_PACKED: tuple[LayoutCase, ...] = tuple(replace(BY_NAME[n], kernels="packed") for n in ("L3", "L6"))
CONFORMANCE_SPECULATIVE: tuple[LayoutCase, ...] = (
    *(replace(BY_NAME[n], drafter="suffix") for n in ("L0", "L2", "L3", "L6", "L7", "L8")),
    *(replace(BY_NAME[n], drafter="hybrid") for n in ("L3", "L6")),
)
CONFORMANCE_PACKED: tuple[LayoutCase, ...] = (
    *(replace(BY_NAME[n], kernels="packed") for n in ("L0", "L2", "L3", "L5", "L6", "L8")),
    replace(BY_NAME["L6"], kernels="packed", drafter="suffix"),
)
"""The fused forward's structure (packed projections, RoPE after the exchange) with the torch ops."""


def check_speculative(reference: tuple[tuple[int, ...], ...]) -> tuple[LayoutCase, ...]:
    """``CHECK_DRAFTERS`` on L0, L3 and L6; ``reference`` (L0's outputs) feeds the oracle drafter."""
    return tuple(
        replace(BY_NAME[n], drafter=d, reference=reference) for n in ("L0", "L3", "L6") for d in CHECK_DRAFTERS
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class LayoutOutcome:
    case: LayoutCase
    results: tuple[RequestResult, ...]
    records: tuple[SampleRecord, ...]
    modes: Counter[StepMode]
    collectives: Counter[tuple[CommOp, GroupKind]] = field(default_factory=Counter)  # (op, group kind) per step


def load_exchange(value: str) -> Exchange:
    """The exchange ``MODULE:FACTORY`` builds (every rank builds its own); ``TargetError`` when the
    value does not import, is not callable, or builds an object without the two methods."""
    option = "--arctic-ref-exchange"
    factory = require_callable(option, value, load_target(option, value))
    exchange = build(option, value, factory)
    require_methods(option, value, exchange, ("seq_to_heads", "heads_to_seq"))
    return exchange  # type: ignore[no-any-return]


def run_case(info: RankInfo, case: LayoutCase, config: ModelConfig | None = None) -> LayoutOutcome:
    """One layout on this rank (every rank runs it, SPMD)."""
    model = config or tiny_config()
    layout = ParallelLayout(info.world_size, case.tp, case.sp)
    groups = build_groups(layout, info.rank)
    log_groups, log = counting(groups)
    engine = EngineConfig(
        model=model,
        layout=layout,
        dtype=DTYPES[case.dtype],
        shift_threshold=case.shift_threshold,
        scheduler=SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=case.budget, max_model_len=1024),
        device=f"cuda:{info.rank}" if case.device == "cuda" else "cpu",
        kernels=case.kernels,
    )
    exchange = load_exchange(case.exchange) if case.exchange else ULYSSES
    runner = build_runner(engine, random_weights(model, case.seed), log_groups, make_drafter(case, model), exchange)
    records: list[SampleRecord] = []
    prompts = builtin_prompts(model.vocab_size)
    results = run_requests(
        runner, engine.scheduler, prompts, [SamplingParams(max_tokens=case.max_tokens)] * len(prompts), records=records
    )
    collectives = Counter((call.op, call.group) for call in log)
    return LayoutOutcome(
        case=case,
        results=tuple(results),
        records=tuple(records),
        modes=Counter(r.mode for r in records),
        collectives=collectives,
    )


def make_drafter(case: LayoutCase, model: ModelConfig) -> Drafter | HiddenStateDrafter:
    """The drafters of the spec-lossless check (docs/runner.md §5); all deterministic per rank."""
    max_len = 1024
    if case.drafter == "suffix":
        return SuffixDrafter.build(max_len)
    if case.drafter == "ngram":
        return NgramDrafter(max_len, 3, min_n=1, max_n=4)
    if case.drafter == "oracle":
        prompts = (tuple(p) for p in builtin_prompts(model.vocab_size))
        return OracleDrafter(
            dict(zip(prompts, case.reference, strict=True)), case.oracle_correct, model.vocab_size, max_len
        )
    if case.drafter == "junk":
        return JunkDrafter(model.vocab_size, max_len, k=4, seed=case.seed)
    if case.drafter in ("arctic-mlp", "arctic-lstm", "hybrid"):
        kind: Kind = "lstm" if case.drafter == "arctic-lstm" else "mlp"
        device = torch.device(f"cuda:{torch.cuda.current_device()}" if case.device == "cuda" else "cpu")
        speculator = speculator_for(
            model.hidden_size, model.vocab_size, kind, case.seed + 1, DTYPES[case.dtype], device
        )
        config = arctic_config(max_len, num_speculative_tokens=3, hybrid=case.drafter == "hybrid")
        return SpeculatorDrafter(config, speculator)
    if case.drafter != "none":
        raise ValueError(f"unknown drafter {case.drafter!r}")
    return NoDrafter()


def run_cases(info: RankInfo, cases: tuple[LayoutCase, ...]) -> list[LayoutOutcome] | None:
    """Every case in order; rank 0 returns the outcomes (the others' are identical by construction)."""
    outcomes = [run_case(info, case) for case in cases]
    return outcomes if info.rank == 0 else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """A layout against L0 (docs/parallel.md §5.4)."""

    layout: str
    dtype: str
    max_abs: float
    mean_abs: float
    compared_rows: int
    identical_tokens: bool
    first_divergence: str  # "none" or (prompt, token index, step, mode, tokens, margin, |Δ| there)
    min_margin: float
    failed: bool


def compare(baseline: LayoutOutcome, other: LayoutOutcome) -> Comparison:
    """Logits compared per sampled position while both runs share the token history; a token
    divergence fails when L0's top-1/top-2 margin there exceeds twice the dtype's max tolerance."""
    dtype = other.case.dtype
    max_tol, mean_tol = TOLERANCE[dtype]
    base_rows = {(r.prompt_index, r.num_tokens): r for r in baseline.records}
    base_out = {r.prompt_index: r.output_token_ids for r in baseline.results}
    other_out = {r.prompt_index: r.output_token_ids for r in other.results}
    diverged_at = {}
    for prompt, tokens in base_out.items():
        theirs = other_out[prompt]
        index = next((i for i, (a, b) in enumerate(zip(tokens, theirs, strict=False)) if a != b), None)
        if index is None and len(tokens) != len(theirs):
            index = min(len(tokens), len(theirs))
        if index is not None:
            diverged_at[prompt] = index
    vocab = baseline.records[0].logits.shape[-1]
    prompt_lengths = [len(p) for p in builtin_prompts(vocab)]
    deltas, margins, first = [], [], "none"
    failed = False
    for record in other.records:
        base = base_rows.get((record.prompt_index, record.num_tokens))
        token_index = record.num_tokens - prompt_lengths[record.prompt_index]
        if base is None or token_index > diverged_at.get(record.prompt_index, 10**9):
            continue
        delta = (record.logits.double() - base.logits.double()).abs()
        top2 = base.logits.double().topk(2).values
        margin = float(top2[0] - top2[1])
        margins.append(margin)
        deltas.append(delta)
        if token_index == diverged_at.get(record.prompt_index):
            ours, theirs = base_out[record.prompt_index], other_out[record.prompt_index]
            first = (
                f"prompt {record.prompt_index} token {token_index} step {record.step} mode {record.mode}: "
                f"L0 {ours[token_index] if token_index < len(ours) else None} vs "
                f"{theirs[token_index] if token_index < len(theirs) else None}, "
                f"L0 margin {margin:.3g}, max|Δ| {float(delta.max()):.3g}"
            )
            failed |= margin > 2 * max_tol
    stacked = torch.cat([d.flatten() for d in deltas]) if deltas else torch.zeros(1)
    max_abs, mean_abs = float(stacked.max()), float(stacked.mean())
    failed |= max_abs > max_tol or (mean_tol is not None and mean_abs > mean_tol)
    if dtype == "float64":
        failed |= bool(diverged_at)
    return Comparison(
        layout=other.case.label,
        dtype=dtype,
        max_abs=max_abs,
        mean_abs=mean_abs,
        compared_rows=len(deltas),
        identical_tokens=not diverged_at,
        first_divergence=first,
        min_margin=min(margins) if margins else float("nan"),
        failed=failed,
    )


def run_layout(case: LayoutCase, *, backend: str = "gloo", timeout_s: float = 600.0) -> LayoutOutcome:
    """One case on its world size (in-process for world 1); rank 0's outcome."""
    if case.world_size == 1:
        solo = run_cases(RankInfo(0, 1, backend), (case,))
        assert solo is not None
        return solo[0]
    outcomes = spawn_ranks(run_cases, (case,), world_size=case.world_size, backend=backend, timeout_s=timeout_s)[0]
    assert outcomes is not None  # rank 0 returns its outcomes
    return outcomes[0]
