"""Predicting an engine's speculative counters from its own output (the ``drafts`` check).

For one request alone in the engine, what a drafter proposes at each step depends only on the
tokens so far, and under greedy decoding a draft token is accepted exactly when it equals the token
the engine emits at its position (a rejected position emits the target's choice, which differs from
the draft). So the engine's output, the drafter's documented semantics
(``arctic_ref.runner.vllm_drafting``) and vLLM's scheduling rules determine every step: which drafts
were scheduled, how many were accepted, and which tokens the drafter was fed. The step model, from
vLLM 0.32's ``v1/core/sched/scheduler.py``:

1. the prefill step samples one token; after every step the proposer sees the request with this
   step's sampled tokens, the step in which it finishes included (that feeds the suffix cache);
2. a step schedules at most M − N − 1 of the drafts (M = ``max_model_len``, N = tokens so far);
3. a verify step emits the accepted drafts and one more token; the counters count every scheduled
   draft and every accepted one, also those past ``max_tokens`` that the engine then trims, so the
   prediction reads the tokens after the output from the float64 reference (``continuation``);
4. a request finishes once it holds ``max_tokens`` outputs or M tokens.

Requests of one engine are replayed in the order the engine ran them, with one drafter, so the
suffix cache carries from one request to the next as the engine's global cache does."""

from collections.abc import Sequence
from dataclasses import dataclass

from arctic_ref.runner.drafters import Drafter
from arctic_ref.spec.drafts import DraftRow
from arctic_ref.testing.engine.engine_target import SpecCounters


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayedStep:
    """One verify step: the tokens before it, its scheduled drafts, how many were accepted."""

    num_tokens: int
    drafts: tuple[int, ...]
    accepted: int


def replay_request(
    drafter: Drafter,
    req_id: str,
    prompt: Sequence[int],
    output: Sequence[int],
    continuation: Sequence[int],
    *,
    max_model_len: int,
) -> tuple[SpecCounters, list[ReplayedStep]]:
    """The counters one request adds, and its verify steps. ``continuation`` holds the tokens the
    engine would emit after ``output`` (at least as many as the longest draft)."""
    truth = list(output) + list(continuation)
    tokens = list(prompt)
    sampled = truth[:1]
    emitted = 1
    steps: list[ReplayedStep] = []
    per_pos: list[int] = []
    while True:
        tokens += sampled
        (draft,) = drafter.propose(
            [DraftRow(req_id=req_id, token_ids=list(tokens), num_prompt_tokens=len(prompt), sampled=list(sampled))]
        )
        if emitted >= len(output) or len(tokens) >= max_model_len:
            break
        scheduled = list(draft)[: max(0, max_model_len - len(tokens) - 1)]
        ahead = truth[emitted:]
        accepted = next((i for i, (d, t) in enumerate(zip(scheduled, ahead, strict=False)) if d != t), len(scheduled))
        accepted = min(accepted, len(ahead) - 1)
        if scheduled:
            steps.append(ReplayedStep(num_tokens=len(tokens), drafts=tuple(scheduled), accepted=accepted))
            per_pos.extend([0] * (accepted - len(per_pos)))
            for i in range(accepted):
                per_pos[i] += 1
        sampled = ahead[: accepted + 1]
        emitted += accepted + 1
    counters = SpecCounters(
        drafts=len(steps),
        draft_tokens=sum(len(s.drafts) for s in steps),
        accepted=sum(s.accepted for s in steps),
        accepted_per_pos=tuple(per_pos),
    )
    return counters, steps
