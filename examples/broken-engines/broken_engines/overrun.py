"""A drafter that overruns ``max_model_len``, and why vLLM alone hides it.

A verify step at N tokens can use at most M − N − 1 drafts (M = ``max_model_len``): it emits up to
one token per draft plus one, and a request holds at most M tokens. vLLM 0.32 enforces this in the
scheduler, not in the drafter:

- ``vllm/v1/core/sched/scheduler.py`` 715-720 caps a step's tokens at
  ``max_model_len - num_computed_tokens - num_sampled_tokens_per_step``, and 869-871 cut the
  request's drafts to what was scheduled; only scheduled drafts are counted (2116, 2129-2135);
- vLLM's own n-gram proposer already overruns by one
  (``vllm/v1/spec_decode/ngram_proposer.py``: ``k = min(k, max_model_len - total_token)``), and
  unmodified vLLM passes every check.

So a drafter that overruns is invisible in tokens and counters while that cap stands. The broken
engine here overruns where it matters: its suffix drafter drafts ``min(k, M − N)`` tokens (the
n-gram proposer does so already) and its scheduler plans each step as if ``max_model_len`` were
M + 1, so the extra draft reaches the verify step. Near M the engine then counts one draft more
than the semantics allow, and when every draft is accepted it emits M + 1 tokens, which the model
runner refuses (``gpu_model_runner.py`` ``_bookkeeping_sync``: "Sampled token IDs exceed the max
model length")."""

from typing import Any

OVERRUN: int = 1


def draft_past_max_model_len(drafter: Any) -> None:
    """The suffix proposer caps its drafts at min(k, M + OVERRUN − N − 1); the n-gram proposer
    already drafts min(k, M − N) and is left as it is."""
    if hasattr(drafter, "suffix_cache"):
        drafter.max_model_len = drafter.max_model_len + OVERRUN


def schedule_past_max_model_len(scheduler: Any) -> None:
    """``schedule()`` plans with ``max_model_len + OVERRUN``; everything else (stopping a request at
    M tokens, the KV cache manager) keeps M."""
    original = scheduler.schedule
    limit = scheduler.max_model_len

    def schedule(*args: Any, **kwargs: Any) -> Any:
        scheduler.max_model_len = limit + OVERRUN
        try:
            return original(*args, **kwargs)
        finally:
            scheduler.max_model_len = limit

    scheduler.schedule = schedule
