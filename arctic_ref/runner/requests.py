"""Typed stand-ins for vLLM's request-side values (docs/runner.md §1.1)."""

from dataclasses import dataclass, field
from typing import Literal

from arctic_ref.types import ReqId

FinishReason = Literal["stop", "length"]
"""Why a request finished: "stop" (an EOS or stop token, kept as its last token) or "length"
(``max_tokens`` or ``max_model_len``), as vLLM reports it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplingParams:
    temperature: float = 0.0  # 0.0 = greedy
    seed: int | None = None
    max_tokens: int = 32
    ignore_eos: bool = False  # vLLM's: the model's EOS ids do not stop the request
    stop_token_ids: tuple[int, ...] = ()  # vLLM's: these stop it too (the stop token is kept)

    def __post_init__(self) -> None:
        if self.temperature < 0 or self.max_tokens < 1:
            raise ValueError(f"temperature({self.temperature}) must be >= 0 and max_tokens({self.max_tokens}) >= 1")
        if any(isinstance(t, bool) or not isinstance(t, int) or t < 0 for t in self.stop_token_ids):
            raise ValueError(f"stop_token_ids {self.stop_token_ids} must be ints >= 0")


@dataclass(slots=True)
class RequestStats:
    num_steps: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    num_verify_steps: int = 0  # steps in which the request had drafts


@dataclass(slots=True, kw_only=True)
class RequestState:
    """Owned by the scheduler."""

    req_id: ReqId
    prompt_token_ids: tuple[int, ...]
    sampling: SamplingParams
    output_token_ids: list[int] = field(default_factory=list)
    num_computed_tokens: int = 0
    spec_token_ids: list[int] = field(default_factory=list)
    stats: RequestStats = field(default_factory=RequestStats)
    eos_token_ids: tuple[int, ...] = ()  # the model's (vLLM's Request.eos_token_id)
    finish_reason: FinishReason | None = None  # once finished

    def stops_at(self, token: int) -> bool:
        """vLLM's check_stop for a token just appended: EOS unless ignored, or a stop token."""
        return (token in self.eos_token_ids and not self.sampling.ignore_eos) or token in self.sampling.stop_token_ids

    @property
    def num_tokens(self) -> int:
        return len(self.prompt_token_ids) + len(self.output_token_ids)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduledRequest:
    req_id: ReqId
    num_computed_tokens: int  # c before this step
    num_scheduled_tokens: int  # m, drafts included
    spec_token_ids: tuple[int, ...] = ()
    new_prompt: tuple[int, ...] | None = None  # set the first time the runner sees the request
    sampling: SamplingParams | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerOutput:
    scheduled: tuple[ScheduledRequest, ...]
    finished_req_ids: frozenset[ReqId] = frozenset()

    @property
    def total_num_scheduled_tokens(self) -> int:
        return sum(r.num_scheduled_tokens for r in self.scheduled)
