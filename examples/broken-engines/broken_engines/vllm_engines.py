"""The broken engines: each a factory that takes vLLM's keyword arguments, builds vLLM's own ``LLM``
and plants one fault in that instance. Name one with
``--arctic-ref-engine=broken_engines.vllm_engines:NAME`` (run from examples/broken-engines).

Every engine, ``repaired`` included, is vLLM with V-20 and V-17 repaired (``repairs``): ``repaired`` is
the control, which must pass every check, and each broken engine is that control with one fault.
Faults are planted only where the engine drafts: a spec-off build is the control itself, so every
comparison of spec on with spec off sees the fault on one side only. ``SamplingParams`` is vLLM's
(the kit builds sampling parameters with the engine package's own)."""

from collections.abc import Callable
from typing import Any

from vllm import LLM, SamplingParams

from broken_engines.drafting import end_the_pattern_early, feed_without_the_last_token, suffix_proposer
from broken_engines.overrun import draft_past_max_model_len, schedule_past_max_model_len
from broken_engines.parts import EngineParts, parts_of
from broken_engines.rejected_kv import keep_rejected_draft_kv
from broken_engines.repairs import repair_empty_verify, repair_expand_kernel
from broken_engines.verification import (
    accept_long_drafts_untested,
    corrupt_large_random_batches,
    relax_greedy_acceptance,
    sampler_of,
    scale_uniforms,
    zero_the_argmax,
)

__all__ = [
    "ENGINES",
    "SamplingParams",
    "batch_corruption",
    "greedy_changes_with_ngram",
    "kv_of_rejected_drafts",
    "long_draft_corruption",
    "overrun_max_model_len",
    "pattern_one_short",
    "recovered_wrong_zeroed",
    "repaired",
    "scaled_uniforms",
    "suffix_cache_off_by_one",
]


def _method(kwargs: dict[str, Any]) -> str | None:
    spec = kwargs.get("speculative_config")
    return None if spec is None else str(spec.get("method"))


def _broken(kwargs: dict[str, Any], plant: Callable[[EngineParts], None], *, methods: tuple[str, ...]) -> LLM:
    """``repaired(**kwargs)``, with ``plant`` applied when it drafts with one of ``methods``."""
    llm = repaired(**kwargs)
    if _method(kwargs) in methods:
        plant(parts_of(llm))
    return llm


def repaired(**kwargs: Any) -> LLM:
    """The control: vLLM's ``LLM(**kwargs)`` with V-20 and V-17 repaired and nothing broken."""
    llm = LLM(**kwargs)
    repair_expand_kernel()
    sampler = parts_of(llm).sampler
    if sampler is not None:
        repair_empty_verify(sampler)
    return llm


def suffix_cache_off_by_one(**kwargs: Any) -> LLM:
    """The suffix cache is fed each step's tokens minus the last (drafting.feed_without_the_last_token)."""
    return _broken(kwargs, lambda p: feed_without_the_last_token(suffix_proposer(p)), methods=("suffix",))


def pattern_one_short(**kwargs: Any) -> LLM:
    """The suffix pattern ends one token early (drafting.end_the_pattern_early)."""
    return _broken(kwargs, lambda p: end_the_pattern_early(suffix_proposer(p)), methods=("suffix",))


def scaled_uniforms(**kwargs: Any) -> LLM:
    """Acceptance tests p(d) against u / 2 (verification.scale_uniforms)."""
    return _broken(kwargs, lambda p: scale_uniforms(sampler_of(p)), methods=("ngram", "suffix"))


def recovered_wrong_zeroed(**kwargs: Any) -> LLM:
    """The recovered token is drawn with the argmax zeroed, not the draft (verification.zero_the_argmax)."""
    return _broken(kwargs, lambda p: zero_the_argmax(sampler_of(p)), methods=("ngram", "suffix"))


def overrun_max_model_len(**kwargs: Any) -> LLM:
    """Drafts of min(k, M − N) tokens reach the verify step (overrun module docstring)."""

    def plant(parts: EngineParts) -> None:
        draft_past_max_model_len(parts.drafter)
        schedule_past_max_model_len(parts.scheduler)

    return _broken(kwargs, plant, methods=("ngram", "suffix"))


def kv_of_rejected_drafts(**kwargs: Any) -> LLM:
    """F-1: the next step conditions on the first rejected draft's KV (rejected_kv)."""
    return _broken(kwargs, lambda p: keep_rejected_draft_kv(p.runner), methods=("ngram", "suffix"))


def batch_corruption(**kwargs: Any) -> LLM:
    """F-2: with more than two requests in a step and T > 0, recovered tokens are argmaxes
    (verification.corrupt_large_random_batches)."""
    return _broken(kwargs, lambda p: corrupt_large_random_batches(sampler_of(p)), methods=("ngram", "suffix"))


def long_draft_corruption(**kwargs: Any) -> LLM:
    """F-3: draft positions 5 and later are accepted untested (verification.accept_long_drafts_untested)."""
    return _broken(kwargs, lambda p: accept_long_drafts_untested(sampler_of(p)), methods=("ngram", "suffix"))


def greedy_changes_with_ngram(**kwargs: Any) -> LLM:
    """F-6: with n-gram drafting, greedy verification accepts near-argmax drafts
    (verification.relax_greedy_acceptance)."""
    return _broken(kwargs, lambda p: relax_greedy_acceptance(sampler_of(p)), methods=("ngram",))


ENGINES: dict[str, tuple[Callable[..., LLM], str]] = {
    "suffix_cache_off_by_one": (suffix_cache_off_by_one, "drafts"),
    "pattern_one_short": (pattern_one_short, "drafts"),
    "scaled_uniforms": (scaled_uniforms, "distribution"),
    "recovered_wrong_zeroed": (recovered_wrong_zeroed, "distribution"),
    "overrun_max_model_len": (overrun_max_model_len, "drafts"),
    "kv_of_rejected_drafts": (kv_of_rejected_drafts, "lossless"),
    "batch_corruption": (batch_corruption, "distribution"),
    "long_draft_corruption": (long_draft_corruption, "lossless"),
    "greedy_changes_with_ngram": (greedy_changes_with_ngram, "lossless"),
}
"""Each engine, and the check that must fail on it."""
