"""``ReferenceRunner``: one engine step as pure stages, in the order of the seed's ``execute_model``
(docs/runner.md §1.2): plan_step → prepare_inputs → forward → compute_logits → sample → discard partial
prefills → append. Drafting and verification come with the runner issue."""

from dataclasses import dataclass, field, replace
from itertools import accumulate

import torch
from jaxtyping import Float
from torch import Tensor

from arctic_ref.model.attention import AttentionMetadata
from arctic_ref.model.config import ModelConfig
from arctic_ref.model.kv_cache import KVCache
from arctic_ref.model.llama import ForwardFn, ForwardInputs, LlamaShard, compute_logits, forward
from arctic_ref.parallel.comm import RankGroups
from arctic_ref.parallel.cudagraph import GraphTables
from arctic_ref.parallel.plan import ShiftPolicy, StepMode, StepPlan, plan_step
from arctic_ref.parallel.ulysses import ULYSSES, Exchange
from arctic_ref.runner.block_tables import BlockTables
from arctic_ref.runner.drafters import Drafter, HiddenStateDrafter, NoDrafter
from arctic_ref.runner.graphs import CapturedForward
from arctic_ref.runner.persistent_inputs import PersistentInputs
from arctic_ref.runner.requests import SamplingParams, SchedulerOutput
from arctic_ref.runner.stages import INTENDED_STAGES, RunnerStages
from arctic_ref.runner.trace_forcing import LogitsProcessor
from arctic_ref.spec.drafts import DraftRow
from arctic_ref.spec.metadata import SamplingMetadata, SpecDecodeMetadata
from arctic_ref.spec.rejection import parse_output
from arctic_ref.spec.rejection_graph import RejectionSampler
from arctic_ref.spec.sampling import sample_tokens
from arctic_ref.types import ReqId


@dataclass(slots=True, kw_only=True)
class CachedRequest:
    """The runner's copy of a request (vLLM's ``CachedRequestState``)."""

    prompt: tuple[int, ...]
    output: list[int]
    sampling: SamplingParams
    generator: torch.Generator | None

    @property
    def tokens(self) -> list[int]:
        return [*self.prompt, *self.output]


@dataclass(frozen=True, slots=True, kw_only=True)
class StepStats:
    mode: StepMode
    num_scheduled_tokens: int
    num_input_tokens: int
    graph_size: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class StepInputs:
    forward: ForwardInputs
    logits_indices: tuple[int, ...]
    partial_prefill: tuple[bool, ...]
    spec: SpecDecodeMetadata | None  # None when no request has drafts this step


@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerOutput:
    req_ids: tuple[ReqId, ...]
    sampled_token_ids: tuple[tuple[int, ...], ...]  # [] for partial prefills
    spec_token_ids: tuple[tuple[int, ...], ...]  # next step's drafts per row
    stats: StepStats
    sample_logits: Float[Tensor, "num_logits vocab"]  # rows at logits_indices (drafts' targets, then bonus)
    logits_rows: tuple[tuple[int, ...], ...]  # per request: its rows in sample_logits, in position order


def _int64(values: list[int], device: torch.device) -> Tensor:
    return torch.tensor(values, dtype=torch.int64, device=device)


def _requests_of(spec: SpecDecodeMetadata, keep: list[int]) -> SpecDecodeMetadata:
    """``spec`` of requests ``keep`` alone, in that order (the sampled ones: partial prefills are
    not), its indices still into the same logits rows; counts' cumsum as int64."""
    starts = [0, *accumulate(spec.num_draft_tokens)]
    flat = [j for i in keep for j in range(starts[i], starts[i + 1])]
    logits_rows = [j for i in keep for j in range(starts[i] + i, starts[i + 1] + i + 1)]  # nᵢ + 1 rows each
    counts = [spec.num_draft_tokens[i] for i in keep]
    return SpecDecodeMetadata(
        draft_token_ids=spec.draft_token_ids[flat],
        num_draft_tokens=counts,
        cu_num_draft_tokens=_int64(list(accumulate(counts)), spec.draft_token_ids.device),
        target_logits_indices=spec.target_logits_indices[flat],
        bonus_logits_indices=spec.bonus_logits_indices[keep],
        logits_indices=spec.logits_indices[logits_rows],
    )


@dataclass(slots=True)
class ReferenceRunner:
    """Holds the two models (BASE, and SHIFT when enabled), one shared KV cache, the block tables and
    the persistent batch. Every rank runs the same steps (SPMD)."""

    models: dict[StepMode, LlamaShard]
    cache: KVCache
    blocks: BlockTables
    policy: ShiftPolicy
    graphs: GraphTables
    groups: RankGroups
    device: torch.device
    drafter: Drafter | HiddenStateDrafter = field(default_factory=NoDrafter)
    graph_context: int = 1024  # static key slots per row in captured graphs (max_model_len)
    logits_processor: LogitsProcessor | None = None  # e.g. TraceForcing in benchmarks
    forward_fn: ForwardFn = forward  # or fused_forward (EngineConfig.kernels = "triton")
    exchange: Exchange = ULYSSES  # the Ulysses all-to-alls the forward uses (an implementation under test)
    batch: dict[ReqId, CachedRequest] = field(default_factory=dict)
    captured: dict[tuple[StepMode, int], CapturedForward] = field(default_factory=dict)
    sampler: RejectionSampler = field(default_factory=RejectionSampler)  # rejection_sample, graph-replayed on CUDA
    verify_inputs: PersistentInputs = field(default_factory=PersistentInputs)  # the sampler's inputs, step to step
    stages: RunnerStages = INTENDED_STAGES  # plumbing stages a bug replay may swap (V-11, V-14)

    @property
    def model_config(self) -> ModelConfig:
        return self.models[StepMode.BASE].config

    def step(self, sched: SchedulerOutput) -> RunnerOutput:
        for req_id in sched.finished_req_ids:
            self.batch.pop(req_id, None)
            self.blocks.release(req_id)
        plan = plan_step(
            sched.total_num_scheduled_tokens,
            policy=self.policy,
            graphs=self.graphs,
            groups=self.groups,
            exchange=self.exchange,
        )
        inputs = self.prepare_inputs(sched, plan)
        model = self.models[plan.mode]
        if plan.graph_size is not None and self.device.type == "cuda":
            hidden = self.graph_for(plan).replay(inputs.forward)
        else:
            hidden = self.forward_fn(model, inputs.forward, self.cache, plan)
        sample_hidden = hidden[list(inputs.logits_indices)]  # a copy: valid past the next graph replay
        logits = compute_logits(model, sample_hidden, plan)
        if self.logits_processor is not None:
            logits = self.logits_processor(logits, *self.logits_owners(sched, inputs))
        if inputs.spec is None:
            valid = self.sample(sched, logits, inputs.partial_prefill)
            rows: tuple[tuple[int, ...], ...] = tuple((i,) for i in range(len(sched.scheduled)))
        else:
            valid = self.verify(sched, logits, inputs.spec, inputs.partial_prefill)
            bounds = [0, *(int(c) + i + 1 for i, c in enumerate(accumulate(inputs.spec.num_draft_tokens)))]
            rows = tuple(tuple(range(bounds[i], bounds[i + 1])) for i in range(len(sched.scheduled)))
        self.append_sampled(sched, valid)
        num_drafts = [len(item.spec_token_ids) for item in sched.scheduled]
        discarded = self.discarded_samples(logits, inputs)
        drafts = self.propose(sched, valid, discarded, sample_hidden, num_drafts)
        return RunnerOutput(
            req_ids=tuple(r.req_id for r in sched.scheduled),
            sampled_token_ids=tuple(tuple(v) for v in valid),
            spec_token_ids=tuple(tuple(d) for d in drafts),
            stats=StepStats(
                mode=plan.mode,
                num_scheduled_tokens=plan.num_scheduled_tokens,
                num_input_tokens=plan.num_input_tokens,
                graph_size=plan.graph_size,
            ),
            sample_logits=logits,
            logits_rows=rows,
        )

    def logits_owners(self, sched: SchedulerOutput, inputs: StepInputs) -> tuple[list[ReqId], Tensor]:
        """Per logits row: its request, and the index of the token it predicts (position + 1)."""
        counts = [1] * len(sched.scheduled) if inputs.spec is None else [n + 1 for n in inputs.spec.num_draft_tokens]
        owners = [item.req_id for item, n in zip(sched.scheduled, counts, strict=True) for _ in range(n)]
        return owners, inputs.forward.positions[list(inputs.logits_indices)] + 1

    def graph_for(self, plan: StepPlan) -> CapturedForward:
        """The captured graph of this mode and padded size, captured on first use (all graphs share
        one memory pool)."""
        key = (plan.mode, plan.num_input_tokens)
        if key not in self.captured:
            pool = next(iter(self.captured.values())).graph.pool() if self.captured else None
            self.captured[key] = CapturedForward.capture(
                self.models[plan.mode], self.cache, plan, self.graph_context, self.device, pool, self.forward_fn
            )
        return self.captured[key]

    def prepare_inputs(self, sched: SchedulerOutput, plan: StepPlan) -> StepInputs:
        """Row i feeds tokens [c, c + m) of prompt + output + drafts; pad rows id 0, position 0, slot −1."""
        ids: list[int] = []
        positions: list[int] = []
        slots: list[int] = []
        starts, seq_lens, contexts, last_rows, partial = [0], [], [], [], []
        for item in sched.scheduled:
            if item.new_prompt is not None:
                if item.sampling is None:
                    raise ValueError(f"new request {item.req_id} has no sampling params")
                seed = item.sampling.seed
                generator = None if seed is None else torch.Generator(self.device).manual_seed(seed)
                self.batch[item.req_id] = CachedRequest(
                    prompt=item.new_prompt, output=[], sampling=item.sampling, generator=generator
                )
            req = self.batch[item.req_id]
            tokens = self.stages.row_tokens(req.tokens, item.spec_token_ids)
            c, m = item.num_computed_tokens, item.num_scheduled_tokens
            if c + m > len(tokens):
                raise ValueError(f"{item.req_id}: c({c}) + m({m}) > {len(tokens)} known tokens")
            self.blocks.ensure(item.req_id, c + m)
            ids += tokens[c : c + m]
            positions += range(c, c + m)
            slots += self.blocks.slots(item.req_id, range(c, c + m))
            starts.append(starts[-1] + m)
            seq_lens.append(c + m)
            contexts.append(torch.tensor(self.blocks.slots(item.req_id, range(c + m)), device=self.device))
            last_rows.append(starts[-1] - 1)
            partial.append(c + m < len(req.tokens))
        pad = plan.num_input_tokens - len(ids)
        num_drafts = [len(item.spec_token_ids) for item in sched.scheduled]
        spec = None
        if any(num_drafts):
            spec = SpecDecodeMetadata.build(num_drafts, starts[1:], _int64(ids, self.device), device=self.device)
            last_rows = [int(i) for i in spec.logits_indices.tolist()]
        return StepInputs(
            forward=ForwardInputs(
                input_ids=_int64(ids + [0] * pad, self.device),
                positions=_int64(positions + [0] * pad, self.device),
                slot_mapping=_int64(slots + [-1] * pad, self.device),
                attention=AttentionMetadata(
                    query_start_loc=tuple(starts), seq_lens=tuple(seq_lens), context_slots=tuple(contexts)
                ),
            ),
            logits_indices=tuple(last_rows),
            partial_prefill=tuple(partial),
            spec=spec,
        )

    def sample(self, sched: SchedulerOutput, logits: Tensor, partial: tuple[bool, ...]) -> list[list[int]]:
        """Partial prefills are not sampled (their generator does not advance) and get []."""
        rows = [i for i, p in enumerate(partial) if not p]
        reqs = [self.batch[sched.scheduled[i].req_id] for i in rows]
        tokens = self.sample_rows(logits[rows], reqs)
        valid: list[list[int]] = [[] for _ in partial]
        for i, token in zip(rows, tokens, strict=True):
            valid[i] = [token]
        return valid

    def verify(
        self, sched: SchedulerOutput, logits: Tensor, spec: SpecDecodeMetadata, partial: tuple[bool, ...]
    ) -> list[list[int]]:
        """Bonus tokens sampled at the bonus rows, then the sampler's ``forward`` (vLLM's
        ``RejectionSampler.forward``, one ``SpecDecodeMetadata``, ``draft_probs=None``) on the requests
        that are not partial prefills (those are not sampled at all), then ``parse_output``. The
        sampler is ``RejectionSampler`` fed from persistent buffers, so a step with the drafts counts
        of an earlier one replays its CUDA graph."""
        keep = [i for i, p in enumerate(partial) if not p]
        reqs = [self.batch[sched.scheduled[i].req_id] for i in keep]
        kept = _requests_of(spec, keep)
        rows = logits.to(torch.float32)
        bonus_rows = rows[kept.bonus_logits_indices.long()]
        bonus = self.sample_rows(bonus_rows, reqs)
        temperatures = [r.sampling.temperature for r in reqs]
        top_k, top_p = self.filters(reqs, logits.shape[1])
        put = self.verify_inputs.put
        meta = SamplingMetadata(
            temperature=put("temperature", torch.tensor(temperatures, dtype=torch.float32, device=self.device)),
            all_greedy=all(t == 0 for t in temperatures),
            all_random=all(t > 0 for t in temperatures),
            top_k=top_k,
            top_p=top_p,
            generators={
                k: r.generator for k, r in enumerate(reqs) if r.generator is not None and r.sampling.temperature > 0
            },
        )
        out = self.sampler.forward(
            replace(
                kept,
                draft_token_ids=put("draft_token_ids", kept.draft_token_ids.long()),
                cu_num_draft_tokens=put("cu_num_draft_tokens", kept.cu_num_draft_tokens),
            ),
            draft_probs=None,
            target_logits=put("target_logits", rows[kept.target_logits_indices.long()]),
            bonus_token_ids=put(
                "bonus_token_ids", torch.tensor(bonus, dtype=torch.int64, device=self.device).view(-1, 1)
            ),
            sampling_metadata=meta,
        )
        valid: list[list[int]] = [[] for _ in partial]
        for i, tokens in zip(keep, parse_output(out, logits.shape[1]), strict=True):
            valid[i] = tokens
        return valid

    def sample_rows(self, logits: Tensor, reqs: list[CachedRequest]) -> list[int]:
        """``sample_tokens`` of one row per request, with each request's temperature, top-k, top-p
        and generator (top-k and top-p passed only when some request uses them)."""
        vocab = logits.shape[1]
        top_k = [r.sampling.top_k_for(vocab) for r in reqs]
        top_p = [r.sampling.top_p_for() for r in reqs]
        return sample_tokens(
            logits,
            [r.sampling.temperature for r in reqs],
            [r.generator for r in reqs],
            top_k=top_k if any(k < vocab for k in top_k) else None,
            top_p=top_p if any(p < 1.0 for p in top_p) else None,
        )

    def filters(self, reqs: list[CachedRequest], vocab: int) -> tuple[Tensor | None, Tensor | None]:
        """``SamplingMetadata.top_k`` and ``top_p`` of the verified requests: None unless some
        request uses it (vLLM's ``InputBatch.no_top_k`` / ``no_top_p``); k = V and p = 1 are no-ops."""
        top_k = [r.sampling.top_k_for(vocab) for r in reqs]
        top_p = [r.sampling.top_p_for() for r in reqs]
        return (
            torch.tensor(top_k, dtype=torch.int32, device=self.device) if any(k < vocab for k in top_k) else None,
            torch.tensor(top_p, dtype=torch.float32, device=self.device) if any(p < 1.0 for p in top_p) else None,
        )

    def discarded_samples(self, logits: Tensor, inputs: StepInputs) -> list[list[int]]:
        """Per row: a partial prefill's own sample, which vLLM draws and then discards; here drawn
        greedily (no generator advances) from its logits row and offered to the drafter's rows as
        ``DraftRow.discarded``, which no intended rule reads. [] for the other rows."""
        partial = [i for i, p in enumerate(inputs.partial_prefill) if p]
        out: list[list[int]] = [[] for _ in inputs.partial_prefill]
        if not partial:
            return out
        rows = partial if inputs.spec is None else [int(i) for i in inputs.spec.bonus_logits_indices[partial].tolist()]
        tokens = sample_tokens(logits[rows].to(torch.float32), [0.0] * len(rows), [None] * len(rows))
        for i, token in zip(partial, tokens, strict=True):
            out[i] = [token]
        return out

    def propose(
        self,
        sched: SchedulerOutput,
        valid: list[list[int]],
        discarded: list[list[int]],
        sample_hidden: Tensor,
        num_drafts: list[int],
    ) -> list[list[int]]:
        """Stages 8–9: the drafter sees every scheduled row with its tokens after this step (and,
        if it reads them, the hidden states at this step's logits indices); a row's sample is
        ``stages.drafter_sample`` of its valid tokens."""
        rows = [
            DraftRow(
                req_id=item.req_id,
                token_ids=self.batch[item.req_id].tokens,
                num_prompt_tokens=len(self.batch[item.req_id].prompt),
                sampled=self.stages.drafter_sample(tokens, thrown),
                discarded=thrown,
            )
            for item, tokens, thrown in zip(sched.scheduled, valid, discarded, strict=True)
        ]
        if isinstance(self.drafter, HiddenStateDrafter):
            return self.drafter.propose_with_hidden(rows, sample_hidden, num_drafts)
        return self.drafter.propose(rows)

    def append_sampled(self, sched: SchedulerOutput, valid: list[list[int]]) -> None:
        for item, tokens in zip(sched.scheduled, valid, strict=True):
            self.batch[item.req_id].output.extend(tokens)
