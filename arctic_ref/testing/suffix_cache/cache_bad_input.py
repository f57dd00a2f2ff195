"""The suffix cache's bad-input table (docs/suffix-decoding.md §2.2, X1, X2, X5), and the default
``max_spec_tokens`` (X1)."""

from collections.abc import Callable
from typing import Any

from arctic_ref.suffix.validate import INT32_MAX, INT32_MIN
from arctic_ref.testing.bad_input import PROBES, bad_input_rows, bad_input_verdict
from arctic_ref.testing.check import Verdict
from arctic_ref.testing.packed_draft import first_field_difference, pack


def _cache_state(cache: Any) -> tuple[object, ...]:
    drafts = []
    for req in list(cache.active_requests):
        for probe in PROBES:
            draft = cache.speculate(req, probe, 8, 1.0, 0.0, 0.0, False)
            drafts.append(str((list(draft.token_ids), [float(p) for p in draft.probs])))
    return list(cache.active_requests), list(cache.cached_requests), tuple(drafts)


CACHE_BAD_INPUTS: tuple[tuple[str, str, Callable[[Any], object]], ...] = (
    ("reserved token in start_request", "X2", lambda c: c.start_request("new", [1, INT32_MIN])),
    ("reserved token in add_active_response", "X2", lambda c: c.add_active_response("a", [2, INT32_MIN])),
    ("token outside int32", "X5", lambda c: c.add_active_response("a", [INT32_MAX + 1])),
    ("non-integer token", "X5", lambda c: c.start_request("new", [1, 1.5])),
    ("response for an unknown request", "", lambda c: c.add_active_response("nobody", [1])),
    ("a request started twice", "", lambda c: c.start_request("a", [1, 2])),
)


def _seeded_cache(make_cache: Callable[[int, int], Any]) -> Any:
    cache = make_cache(8, -1)
    cache.start_request("a", [1, 2, 3])
    cache.add_active_response("a", [1, 2])
    return cache


def cache_bad_input(make_cache: Callable[[int, int], Any]) -> Verdict:
    rows = bad_input_rows(CACHE_BAD_INPUTS, lambda: _seeded_cache(make_cache), _cache_state)
    cache = make_cache(8, -1)
    cache.start_request("a", [1, 2, 3, 1, 2, 3, 1, 2])
    try:
        default, explicit = cache.speculate("a", [1, 2]), cache.speculate("a", [1, 2], 8)
        if first_field_difference(pack(default), pack(explicit)):
            rows.append(("speculate(max_spec_tokens=None)", "X1", "differs from max_spec_tokens=max_tree_depth"))
    except Exception as error:  # upstream raises AttributeError here (X1)
        rows.append(("speculate(max_spec_tokens=None)", "X1", f"raised {type(error).__name__}"))
    return bad_input_verdict(rows, len(CACHE_BAD_INPUTS) + 1, "the cache")
