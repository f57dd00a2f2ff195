"""``SimpleScheduler``: vLLM 0.9.2's rules (or 0.32's max_model_len cap) without preemption, chunked prefill always on
(docs/runner.md §1.3, §8)."""

from collections import deque
from dataclasses import dataclass, field
from typing import Final, Literal, get_args

from arctic_ref.runner.requests import RequestState, ScheduledRequest, SchedulerOutput
from arctic_ref.types import ReqId

SchedulerRule = Literal["vllm-0.9", "vllm-0.32"]
"""Where a running request's scheduled tokens stop: vLLM 0.9.2 caps m at M − c, vLLM 0.32 at
M − c − 1 (``num_sampled_tokens_per_step``: the token sampled after the last scheduled position stays
below M), which schedules one draft fewer when a draft reaches position M − 1."""
SCHEDULER_RULES: Final[tuple[SchedulerRule, ...]] = get_args(SchedulerRule)
POSITIONS_KEPT_FREE: Final[dict[SchedulerRule, int]] = {"vllm-0.9": 0, "vllm-0.32": 1}


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerConfig:
    max_num_seqs: int = 8
    max_num_batched_tokens: int = 256
    max_model_len: int = 1024
    rule: SchedulerRule = "vllm-0.9"
    """The max_model_len cap of docs/runner.md §1.3 rule 2 (``SchedulerRule``)."""

    def __post_init__(self) -> None:
        if min(self.max_num_seqs, self.max_num_batched_tokens, self.max_model_len) < 1:
            raise ValueError(
                f"max_num_seqs({self.max_num_seqs}), max_num_batched_tokens({self.max_num_batched_tokens}) and "
                f"max_model_len({self.max_model_len}) must be >= 1"
            )
        if self.rule not in SCHEDULER_RULES:
            raise ValueError(f"rule({self.rule!r}) must be one of {SCHEDULER_RULES}")


def count_accepted_per_pos(per_pos: list[int], num_accepted: int) -> None:
    """vLLM's ``SpecDecodingStats.observe_draft``: positions 0 … num_accepted − 1 each count one
    acceptance (a run of accepted drafts is a prefix). ``per_pos`` grows to the longest run."""
    per_pos.extend([0] * (num_accepted - len(per_pos)))
    for j in range(num_accepted):
        per_pos[j] += 1


@dataclass(slots=True)
class SimpleScheduler:
    config: SchedulerConfig
    waiting: deque[RequestState] = field(default_factory=deque)
    running: list[RequestState] = field(default_factory=list)
    finished: list[RequestState] = field(default_factory=list)
    _seen: set[ReqId] = field(default_factory=set)
    _just_finished: set[ReqId] = field(default_factory=set)

    def add(self, request: RequestState) -> None:
        if len(request.prompt_token_ids) >= self.config.max_model_len or not request.prompt_token_ids:
            raise ValueError(
                f"prompt of {request.req_id} has {len(request.prompt_token_ids)} tokens; "
                f"it must be non-empty and < max_model_len({self.config.max_model_len})"
            )
        self.waiting.append(request)

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    def take_finished(self) -> list[RequestState]:
        """The requests finished so far, in finishing order, handed over: ``finished`` is left
        empty (an engine that lives across many batches keeps only the requests it has not reported)."""
        out, self.finished = self.finished, []
        return out

    def schedule(self) -> SchedulerOutput:
        budget = self.config.max_num_batched_tokens
        free = POSITIONS_KEPT_FREE[self.config.rule]
        out: list[ScheduledRequest] = []
        for req in self.running:
            c = req.num_computed_tokens
            m = req.num_tokens + len(req.spec_token_ids) - c
            m = min(m, budget, self.config.max_model_len - c - free)
            if m <= 0:
                continue
            drafts = tuple(req.spec_token_ids[: max(0, m + c - req.num_tokens)])
            out.append(
                ScheduledRequest(
                    req_id=req.req_id, num_computed_tokens=c, num_scheduled_tokens=m, spec_token_ids=drafts
                )
            )
            req.num_computed_tokens += m
            budget -= m
        while self.waiting and len(self.running) < self.config.max_num_seqs and budget > 0:
            req = self.waiting.popleft()
            m = min(len(req.prompt_token_ids), budget)
            out.append(
                ScheduledRequest(
                    req_id=req.req_id,
                    num_computed_tokens=0,
                    num_scheduled_tokens=m,
                    new_prompt=req.prompt_token_ids,
                    sampling=req.sampling,
                )
            )
            req.num_computed_tokens = m
            budget -= m
            self.running.append(req)
        finished = frozenset(self._just_finished)
        self._just_finished.clear()
        return SchedulerOutput(scheduled=tuple(out), finished_req_ids=finished)

    def update(self, sched: SchedulerOutput, valid: dict[ReqId, list[int]], drafts: dict[ReqId, list[int]]) -> None:
        """Rule 4: rewind c past rejected drafts, append tokens up to the stop conditions (an EOS or
        stop token, kept; max_tokens; max_model_len), count (acceptances before a stop trims the
        tokens, as vLLM's ``update_from_output``)."""
        by_id = {r.req_id: r for r in self.running}
        for item in sched.scheduled:
            req = by_id[item.req_id]
            tokens = valid.get(item.req_id, [])
            n = len(item.spec_token_ids)
            req.stats.num_steps += 1
            if n > 0:
                req.num_computed_tokens -= n + 1 - len(tokens)
                req.stats.num_draft_tokens += n
                req.stats.num_accepted_tokens += len(tokens) - 1
                req.stats.num_verify_steps += 1
                count_accepted_per_pos(req.stats.num_accepted_tokens_per_pos, len(tokens) - 1)
            for token in tokens:  # one at a time; tokens past a stop are dropped (vLLM trims them)
                req.output_token_ids.append(token)
                if req.stops_at(token):
                    req.finish_reason = "stop"
                elif (
                    len(req.output_token_ids) >= req.sampling.max_tokens or req.num_tokens >= self.config.max_model_len
                ):
                    req.finish_reason = "length"
                if req.finish_reason is not None:
                    break
            done = req.finish_reason is not None
            req.spec_token_ids = [] if done else list(drafts.get(item.req_id, []))
            if done:
                self.running.remove(req)
                self.finished.append(req)
                self._just_finished.add(req.req_id)
