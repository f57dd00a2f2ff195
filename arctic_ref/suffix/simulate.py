"""Trace replay through a suffix-decoding cache, as a decoder with a perfect target model would run it.

Spec docs/suffix-decoding.md §8. Each step speculates from prompt + response so far, accepts the longest
draft path that agrees with the true response (first matching child, in index order), appends the
accepted tokens plus the next true token (the bonus), and measures the time spent in the cache.
"""

import struct
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from arctic_ref.suffix.cache import SuffixDecodingDraft
from arctic_ref.suffix.trace_file import TraceRequest


class SuffixCacheLike(Protocol):
    """The surface of ``SuffixDecodingCache`` a replay needs (ours and upstream's both have it)."""

    def start_request(self, req_id: Hashable, prompt_token_ids: Sequence[int]) -> None: ...
    def add_active_response(self, req_id: Hashable, token_ids: Sequence[int]) -> None: ...
    def stop_request(self, req_id: Hashable) -> None: ...
    def speculate(
        self,
        req_id: Hashable,
        context: Sequence[int],
        max_spec_tokens: int | None = None,
        max_spec_factor: float = 1.0,
        max_spec_offset: float = 0.0,
        min_token_prob: float = 0.1,
        use_tree_spec: bool = False,
    ) -> SuffixDecodingDraft: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulationConfig:
    """The replay's knobs; defaults are the runner's and vLLM's (path drafts)."""

    max_depth: int = 64
    """The cache's ``max_tree_depth``."""
    max_spec_tokens: int = 32
    max_spec_factor: float = 1.0
    max_spec_offset: float = 0.0
    min_token_prob: float = 0.1
    max_cached_requests: int = -1
    use_tree_spec: bool = False
    no_prompt: bool = False
    """Start each local tree empty (the context still contains the prompt)."""
    warm: int = 0
    """The first ``warm`` requests only fill the cache (start, whole response, stop); not measured."""

    def __post_init__(self) -> None:
        if self.warm < 0:
            raise ValueError(f"warm({self.warm}) must be >= 0")


@dataclass(frozen=True, slots=True, kw_only=True)
class StepRecord:
    """One decoding step of one request."""

    req_id: str | int
    step: int
    context_len: int
    match_len: int
    score: float
    num_draft: int
    num_accepted: int
    num_out: int
    spec_us: float
    update_us: float


@dataclass(slots=True, kw_only=True)
class Replay:
    """What one replay produced: per-step records, the drafts (packed, for comparison), timings."""

    steps: list[StepRecord] = field(default_factory=list)
    drafts: list[tuple[object, ...]] = field(default_factory=list)
    requests: int = 0
    spec_seconds: float = 0.0
    update_seconds: float = 0.0
    appended_tokens: int = 0


def pack_draft(draft: SuffixDecodingDraft) -> tuple[object, ...]:
    """A draft as a comparable value; floats as float32 bytes so NaN and -0.0 compare exactly."""
    probs = struct.pack(f"{len(draft.probs)}f", *draft.probs)
    return (tuple(draft.token_ids), tuple(draft.parents), probs, struct.pack("f", draft.score), draft.match_len)


def accept(draft: SuffixDecodingDraft, truth: Sequence[int], start: int) -> list[int]:
    """Walk the draft tree from parent −1 along ``truth[start:]``: at each level the first index
    (ascending) whose parent is the current node and whose token is the next true token."""
    accepted: list[int] = []
    current = -1
    position = start
    while position < len(truth):
        following = next(
            (
                i
                for i, (token, parent) in enumerate(zip(draft.token_ids, draft.parents, strict=True))
                if parent == current and token == truth[position]
            ),
            None,
        )
        if following is None:
            break
        accepted.append(truth[position])
        current = following
        position += 1
    return accepted


def replay(
    cache: SuffixCacheLike,
    trace: Sequence[TraceRequest],
    config: SimulationConfig,
    *,
    keep_drafts: bool = False,
    on_request: Callable[[int], None] | None = None,
) -> Replay:
    """Replay ``trace`` in order through ``cache``; raises if a rebuilt response differs from the truth."""
    result = Replay()
    clock = time.perf_counter
    for index, request in enumerate(trace):
        prompt = request.prompt_token_ids
        truth = request.response_token_ids
        if index < config.warm:
            cache.start_request(request.req_id, prompt)
            cache.add_active_response(request.req_id, truth)
            cache.stop_request(request.req_id)
            continue
        result.requests += 1
        began = clock()
        cache.start_request(request.req_id, [] if config.no_prompt else prompt)
        result.update_seconds += clock() - began
        result.appended_tokens += 0 if config.no_prompt else len(prompt)
        response: list[int] = []
        step = 0
        while len(response) < len(truth):
            context = prompt + response
            began = clock()
            draft = cache.speculate(
                request.req_id,
                context,
                config.max_spec_tokens,
                config.max_spec_factor,
                config.max_spec_offset,
                config.min_token_prob,
                config.use_tree_spec,
            )
            spec_seconds = clock() - began
            accepted = accept(draft, truth, len(response))
            out = accepted + truth[len(response) + len(accepted) : len(response) + len(accepted) + 1]
            began = clock()
            cache.add_active_response(request.req_id, out)
            update_seconds = clock() - began
            response += out
            result.spec_seconds += spec_seconds
            result.update_seconds += update_seconds
            result.appended_tokens += len(out)
            if keep_drafts:
                result.drafts.append(pack_draft(draft))
            result.steps.append(
                StepRecord(
                    req_id=request.req_id,
                    step=step,
                    context_len=len(context),
                    match_len=draft.match_len,
                    score=draft.score,
                    num_draft=len(draft.token_ids),
                    num_accepted=len(accepted),
                    num_out=len(out),
                    spec_us=spec_seconds * 1e6,
                    update_us=update_seconds * 1e6,
                )
            )
            step += 1
        cache.stop_request(request.req_id)
        if response != truth:
            raise AssertionError(f"request {request.req_id!r}: rebuilt response differs from the truth")
        if on_request is not None:
            on_request(index)
    return result


def summarize(result: Replay) -> dict[str, float | int | None]:
    """The summary of docs/suffix-decoding.md §8 (without the cross-implementation fields)."""
    steps = result.steps
    out_tokens = sum(s.num_out for s in steps)
    drafted = sum(s.num_draft for s in steps)
    accepted = sum(s.num_accepted for s in steps)
    per_request: dict[str | int, list[int]] = {}
    for s in steps:
        per_request.setdefault(s.req_id, []).append(s.num_out)
    return {
        "requests": result.requests,
        "steps": len(steps),
        "out_tokens": out_tokens,
        "tokens_per_step": out_tokens / len(steps) if steps else None,
        "req_speedup": _mean(sum(v) / len(v) for v in per_request.values()),
        "accepted_per_step": accepted / len(steps) if steps else None,
        "drafted_per_step": drafted / len(steps) if steps else None,
        "acceptance_rate": accepted / drafted if drafted else None,
        "spec_us_per_call": result.spec_seconds * 1e6 / len(steps) if steps else None,
        "update_us_per_token": result.update_seconds * 1e6 / result.appended_tokens if result.appended_tokens else None,
    }


def _mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return sum(items) / len(items) if items else None
