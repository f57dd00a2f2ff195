"""Typed stand-ins for vLLM's request-side values (docs/runner.md §1.1)."""

from dataclasses import dataclass, field
from typing import Final, Literal

from arctic_ref.types import ReqId

FinishReason = Literal["stop", "length"]
"""Why a request finished: "stop" (an EOS or stop token, kept as its last token) or "length"
(``max_tokens`` or ``max_model_len``), as vLLM reports it."""


TOP_K_OFF: Final = (0, -1)
"""``top_k`` values that turn top-k off (vLLM 0.32's ``SamplingParams``: 0, or -1 quietly accepted)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplingParams:
    temperature: float = 0.0  # 0.0 = greedy
    seed: int | None = None
    max_tokens: int = 32
    ignore_eos: bool = False  # vLLM's: the model's EOS ids do not stop the request
    stop_token_ids: tuple[int, ...] = ()  # vLLM's: these stop it too (the stop token is kept)
    top_k: int = 0
    """Keep the k largest logits (ties at the k-th survive); 0 or -1 = off, as vLLM. Greedy ignores it."""
    top_p: float = 1.0
    """Keep the smallest set of largest probabilities whose mass reaches p, in (0, 1]; 1 = off. After
    top-k, as vLLM's sampler (docs/verification.md §1.4). Greedy ignores it."""

    def __post_init__(self) -> None:
        if self.temperature < 0 or self.max_tokens < 1:
            raise ValueError(f"temperature({self.temperature}) must be >= 0 and max_tokens({self.max_tokens}) >= 1")
        if any(isinstance(t, bool) or not isinstance(t, int) or t < 0 for t in self.stop_token_ids):
            raise ValueError(f"stop_token_ids {self.stop_token_ids} must be ints >= 0")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < -1:
            raise ValueError(f"top_k({self.top_k!r}) must be an int: 0 or -1 (off), or >= 1")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p({self.top_p}) must be in (0, 1]")

    @property
    def is_greedy(self) -> bool:
        return self.temperature == 0.0

    def top_k_for(self, vocab_size: int) -> int:
        """k in [1, V] as ``SamplingMetadata.top_k`` holds it: V (a no-op) when off, greedy, or k ≥ V
        (vLLM's ``InputBatch.add_request``)."""
        if self.is_greedy or self.top_k in TOP_K_OFF or self.top_k >= vocab_size:
            return vocab_size
        return self.top_k

    def top_p_for(self) -> float:
        """p as ``SamplingMetadata.top_p`` holds it: 1.0 (a no-op) when greedy."""
        return 1.0 if self.is_greedy else self.top_p


@dataclass(slots=True)
class RequestStats:
    num_steps: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    num_verify_steps: int = 0  # steps in which the request had drafts (vLLM's num_drafts)
    num_accepted_tokens_per_pos: list[int] = field(default_factory=list)
    """[j]: verify steps whose draft token j was accepted (vLLM's ``num_accepted_tokens_per_pos``; as
    long as the longest accepted run so far, so it sums to ``num_accepted_tokens``)."""


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
