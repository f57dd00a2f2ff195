"""The suffix cache's worked examples of docs/suffix-decoding.md as checks of any implementation: each
takes a factory and returns "" or what differed, using only the public ``SuffixDecodingCache`` API.
``tests/suffix/test_examples.py`` runs them on ours and upstream; the plugin's ``worked-examples``
checks run them on yours."""

from collections.abc import Callable
from typing import Any, Final

from arctic_ref.testing.worked_examples import expect

CacheFactory = Callable[[int, int], Any]


def restart_moves_request_to_fifo_end(make: CacheFactory) -> str:
    """E15: restarting a cached, inactive id evicts the old response and re-allocates."""
    cache = make(8, 2)
    for req in ("a", "b"):
        cache.start_request(req, [1, 2])
        cache.add_active_response(req, [3, 4])
        cache.stop_request(req)
    cache.start_request("a", [1])
    return expect("cached_requests after restarting 'a'", list(cache.cached_requests), ["b", "a"])


def evicted_active_request_keeps_its_local_tree(make: CacheFactory) -> str:
    """E17: an active request whose response was evicted extends its local tree only."""
    cache = make(8, 1)
    cache.start_request("a", [1])
    cache.start_request("b", [2])
    cached = list(cache.cached_requests)
    cache.add_active_response("a", [5, 6])
    draft = list(cache.speculate("a", [1, 5], 4).token_ids)
    return expect("(cached_requests, draft of 'a')", (cached, draft), (["b"], [6]))


def max_spec_tokens_zero_means_zero(make: CacheFactory) -> str:
    """E18: the code, not upstream's docstring."""
    cache = make(8, -1)
    cache.start_request("a", [1, 2, 3, 1, 2])
    return expect("draft at max_spec_tokens 0", list(cache.speculate("a", [1, 2], 0).token_ids), [])


CACHE_EXAMPLES: Final[tuple[Callable[[CacheFactory], str], ...]] = (
    restart_moves_request_to_fifo_end,
    evicted_active_request_keeps_its_local_tree,
    max_spec_tokens_zero_means_zero,
)
