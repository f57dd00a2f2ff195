"""Faults in vLLM's suffix proposer (``vllm/v1/spec_decode/suffix_decoding.py``), planted on its
``SuffixDecodingCache`` instance (ArcticInference's). Each keeps greedy output lossless, since
every draft is still verified; only which drafts are proposed changes, which is what the
``drafts`` check compares with the documented semantics."""

from collections.abc import Sequence
from typing import Any

import numpy as np
from vllm.v1.spec_decode.suffix_decoding import SuffixDecodingProposer


def suffix_proposer(parts: Any) -> SuffixDecodingProposer:
    """The engine's suffix proposer (``speculative_config`` method ``suffix``)."""
    if not isinstance(parts.drafter, SuffixDecodingProposer):
        raise ValueError(f"this broken engine breaks the suffix proposer; the engine drafts with {parts.drafter!r}")
    return parts.drafter


def feed_without_the_last_token(proposer: SuffixDecodingProposer) -> None:
    """Each step's sampled tokens reach the cache minus the last one: the accepted drafts are fed,
    the recovered or bonus token that ends the step is not (a one-token step feeds nothing). The
    request's response in the cache, local and global, has a hole at the end of every step."""
    cache = proposer.suffix_cache
    original = cache.add_active_response

    def add_active_response(req_id: Any, token_ids: Sequence[int] | np.ndarray) -> None:
        kept = list(token_ids)[:-1]
        if kept:
            original(req_id, kept)

    cache.add_active_response = add_active_response


def end_the_pattern_early(proposer: SuffixDecodingProposer) -> None:
    """The pattern handed to ``speculate`` ends one token early: the last
    ``suffix_decoding_max_tree_depth`` tokens before the newest one, so every draft continues a
    context the request has already moved past."""
    cache = proposer.suffix_cache
    original = cache.speculate

    def speculate(req_id: Any, context: Sequence[int] | np.ndarray, *args: Any, **kwargs: Any) -> Any:
        return original(req_id, context[:-1], *args, **kwargs)

    cache.speculate = speculate
