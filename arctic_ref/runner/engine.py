"""Building one rank's runner from a configuration and driving requests to completion (the SPMD
loop every rank runs: schedule → step → update)."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Literal, get_args

import torch
from torch import Tensor

from arctic_ref.model.config import ModelConfig
from arctic_ref.model.fused_forward import fused_forward, pack_projections
from arctic_ref.model.kv_cache import BLOCK_SIZE, KVCache
from arctic_ref.model.layer_ops import TORCH_OPS
from arctic_ref.model.llama import ForwardFn, LlamaShard, forward
from arctic_ref.model.triton_ops import TRITON_AVAILABLE, TRITON_OPS
from arctic_ref.model.weights import Weights
from arctic_ref.parallel.comm import RankGroups
from arctic_ref.parallel.cudagraph import GraphTables, default_capture_sizes
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.parallel.plan import ShiftPolicy, StepMode
from arctic_ref.parallel.ulysses import ULYSSES, Exchange
from arctic_ref.runner.block_tables import BlockTables
from arctic_ref.runner.drafters import Drafter, HiddenStateDrafter, NoDrafter
from arctic_ref.runner.requests import FinishReason, RequestState, SamplingParams
from arctic_ref.runner.runner import ReferenceRunner, RunnerOutput
from arctic_ref.runner.scheduler import SchedulerConfig, SimpleScheduler
from arctic_ref.runner.stages import INTENDED_STAGES, RunnerStages
from arctic_ref.types import ReqId

Kernel = Literal["reference", "packed", "triton"]
"""The forward a runner uses: the readable reference, ``fused_forward`` with the torch ops (any
device), or ``fused_forward`` with the Triton ops (CUDA)."""
KERNELS: tuple[Kernel, ...] = get_args(Kernel)


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineConfig:
    model: ModelConfig
    layout: ParallelLayout
    dtype: torch.dtype = torch.float64
    shift_threshold: int | None = None  # None: shift off
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    device: str = "cpu"
    cuda_graphs: bool = False
    kernels: Kernel = "reference"

    def __post_init__(self) -> None:
        if self.kernels not in KERNELS:
            raise ValueError(f"kernels({self.kernels!r}) must be one of {KERNELS}")
        if self.kernels == "triton" and (not self.device.startswith("cuda") or not TRITON_AVAILABLE):
            raise ValueError(
                f"kernels('triton') needs a CUDA device and Triton: device({self.device!r}),"
                f" triton installed({TRITON_AVAILABLE})"
            )
        self.layout.validate_model(
            num_attention_heads=self.model.num_attention_heads,
            num_key_value_heads=self.model.num_key_value_heads,
            intermediate_size=self.model.intermediate_size,
            shift=self.shift_threshold is not None,
        )
        self.policy()  # V8, V10

    def policy(self) -> ShiftPolicy:
        enabled = self.shift_threshold is not None
        threshold = 512 if self.shift_threshold is None else self.shift_threshold
        return ShiftPolicy(self.layout, enabled=enabled, threshold=threshold)

    def graph_tables(self) -> GraphTables:
        if not self.cuda_graphs:
            return GraphTables.eager()
        sizes = default_capture_sizes(self.scheduler.max_num_batched_tokens)
        return GraphTables.build(
            sizes,
            sp=self.layout.sp,
            threshold=self.shift_threshold or 0,
            max_num_batched_tokens=self.scheduler.max_num_batched_tokens,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestResult:
    prompt_index: int
    output_token_ids: tuple[int, ...]
    num_steps: int
    num_draft_tokens: int
    num_accepted_tokens: int
    num_verify_steps: int = 0
    finish_reason: FinishReason = "length"  # "stop": an EOS or stop token ended it (and is its last token)
    num_accepted_tokens_per_pos: tuple[int, ...] = ()  # RequestStats.num_accepted_tokens_per_pos


@dataclass(frozen=True, slots=True, kw_only=True)
class SampleRecord:
    """One sampled position: request, tokens known before the step, the mode, and its logits row."""

    prompt_index: int
    num_tokens: int
    step: int
    mode: StepMode
    logits: Tensor


def forward_for(kernels: Kernel) -> ForwardFn:
    """The forward a ``kernels`` name selects (models packed with ``pack_projections`` unless
    "reference")."""
    if kernels == "reference":
        return forward
    return partial(fused_forward, ops=TRITON_OPS if kernels == "triton" else TORCH_OPS)


def build_runner(
    config: EngineConfig,
    full: Weights,
    groups: RankGroups,
    drafter: Drafter | HiddenStateDrafter | None = None,
    exchange: Exchange = ULYSSES,
    stages: RunnerStages = INTENDED_STAGES,
) -> ReferenceRunner:
    """Base model shard (t, T); shift model shard (t·S + s, P) when shift is enabled; one cache.
    ``stages`` swaps a plumbing stage for a bug replay (``RunnerStages``)."""
    layout, cfg = config.layout, config.model
    device = torch.device(config.device)
    cast = {k: v.to(device=device, dtype=config.dtype) for k, v in full.items()}
    models = {StepMode.BASE: LlamaShard.build(cast, cfg, layout.tp_rank(groups.rank), layout.tp)}
    if config.shift_threshold is not None:
        models[StepMode.SHIFT] = LlamaShard.build(cast, cfg, layout.shift_rank(groups.rank), layout.world_size)
    if config.kernels != "reference":
        models = {mode: pack_projections(model) for mode, model in models.items()}
    sched = config.scheduler
    num_blocks = sched.max_num_seqs * -(-sched.max_model_len // BLOCK_SIZE) + 1
    cache = KVCache.allocate(
        layers=cfg.num_hidden_layers,
        num_blocks=num_blocks,
        heads=max(1, cfg.num_key_value_heads // layout.world_size),
        head_dim=cfg.head_dim,
        dtype=config.dtype,
        device=device,
    )
    return ReferenceRunner(
        models=models,
        cache=cache,
        blocks=BlockTables(num_blocks),
        policy=config.policy(),
        graphs=config.graph_tables(),
        groups=groups,
        device=device,
        drafter=drafter or NoDrafter(),
        graph_context=sched.max_model_len,
        forward_fn=forward_for(config.kernels),
        exchange=exchange,
        stages=stages,
    )


def request_id(index: int) -> ReqId:
    """The id ``RequestDriver`` gives its ``index``-th request (the one place this format lives)."""
    return ReqId(f"req-{index}")


@dataclass(slots=True)
class RequestDriver:
    """Schedule → step → update, one engine step per ``step()`` call, so two runners can be
    interleaved (docs/runner.md §1.4 item 4); ``run_requests`` drives one to completion."""

    runner: ReferenceRunner
    scheduler: SimpleScheduler
    index: dict[ReqId, int]
    records: list[SampleRecord] | None = None
    steps: int = 0
    last: RunnerOutput | None = None  # the latest step's output

    def add(self, prompt: Sequence[int], params: SamplingParams) -> int:
        """A request arriving now (it is scheduled from the next step on); returns its index. Ids
        outside the vocabulary → ValueError here; the scheduler rejects empty or too-long prompts."""
        config = self.runner.model_config
        index = len(self.index)
        bad = [(index, t) for t in prompt if not 0 <= t < config.vocab_size]
        if bad:
            raise ValueError(f"prompt token ids outside [0, {config.vocab_size}): (prompt, id) {bad[:5]}")
        req_id = request_id(index)
        self.scheduler.add(
            RequestState(
                req_id=req_id, prompt_token_ids=tuple(prompt), sampling=params, eos_token_ids=config.eos_token_ids
            )
        )
        self.index[req_id] = index
        return index

    @classmethod
    def start(
        cls,
        runner: ReferenceRunner,
        scheduler_config: SchedulerConfig,
        prompts: Sequence[Sequence[int]],
        params: Sequence[SamplingParams],
        records: list[SampleRecord] | None = None,
    ) -> "RequestDriver":
        """A driver with ``prompts`` added as requests 0, 1, … (a bad prompt raises before any
        step, and the half-built driver is dropped)."""
        if len(params) != len(prompts):
            raise ValueError(f"{len(prompts)} prompts but {len(params)} sampling params")
        driver = cls(runner, SimpleScheduler(scheduler_config), {}, records)
        for prompt, param in zip(prompts, params, strict=True):
            driver.add(prompt, param)
        return driver

    def step(self) -> bool:
        """One engine step; False once every request has finished."""
        if not self.scheduler.has_unfinished():
            return False
        sched = self.scheduler.schedule()
        if not sched.scheduled:
            raise RuntimeError("the scheduler made no progress")
        states = {r.req_id: r for r in self.scheduler.running}
        known = {req_id: r.num_tokens for req_id, r in states.items()}
        out = self.runner.step(sched)
        self.last = out
        self.scheduler.update(
            sched,
            dict(zip(out.req_ids, (list(t) for t in out.sampled_token_ids), strict=True)),
            dict(zip(out.req_ids, (list(t) for t in out.spec_token_ids), strict=True)),
        )
        if self.records is not None:
            for i, req_id in enumerate(out.req_ids):
                kept = states[req_id].num_tokens - known[req_id]  # tokens past a stop were dropped
                for k in range(kept):  # token k came from the request's k-th logits row
                    self.records.append(
                        SampleRecord(
                            prompt_index=self.index[req_id],
                            num_tokens=known[req_id] + k,
                            step=self.steps,
                            mode=out.stats.mode,
                            logits=out.sample_logits[out.logits_rows[i][k]].cpu(),
                        )
                    )
        self.steps += 1
        return True

    def results(self) -> list[RequestResult]:
        """Every finished request (not yet taken), by index."""
        return self._results_of(self.scheduler.finished)

    def take_results(self) -> list[RequestResult]:
        """``results()``, handed over: the scheduler forgets them (``SimpleScheduler.take_finished``),
        so a driver that lives across many batches reports each request once."""
        return self._results_of(self.scheduler.take_finished())

    def _results_of(self, finished: Sequence[RequestState]) -> list[RequestResult]:
        return [
            RequestResult(
                prompt_index=self.index[r.req_id],
                output_token_ids=tuple(r.output_token_ids),
                num_steps=r.stats.num_steps,
                num_draft_tokens=r.stats.num_draft_tokens,
                num_accepted_tokens=r.stats.num_accepted_tokens,
                num_verify_steps=r.stats.num_verify_steps,
                finish_reason=r.finish_reason or "length",
                num_accepted_tokens_per_pos=tuple(r.stats.num_accepted_tokens_per_pos),
            )
            for r in sorted(finished, key=lambda r: self.index[r.req_id])
        ]


def run_requests(
    runner: ReferenceRunner,
    scheduler_config: SchedulerConfig,
    prompts: Sequence[Sequence[int]],
    params: Sequence[SamplingParams],
    *,
    records: list[SampleRecord] | None = None,
) -> list[RequestResult]:
    """Every prompt to completion; ``records`` (if given) receives every sampled logits row."""
    driver = RequestDriver.start(runner, scheduler_config, prompts, params, records)
    while driver.step():
        pass
    return driver.results()
