"""Draft selection rule by rule (docs/verification.md §4; docs/runner.md §2): each configuration rule alone, the
boundaries of D1, D3 and D6, the single Arctic call, the selection threshold, and the statistics a
drafter reports, counted exactly on designed batches."""

from collections.abc import Sequence

import pytest

from arctic_ref.spec.drafts import (
    DraftConfig,
    DraftRow,
    DraftStats,
    arctic_budgets,
    arctic_config,
    arctic_drafts,
    batch_gate_fires,
    check_suffix_k,
    new_suffix_cache,
    propose_draft_token_ids,
    suffix_config,
    suffix_query,
)
from arctic_ref.spec.profile import MAX_SPEC_LEN
from arctic_ref.suffix import SuffixDecodingCache
from arctic_ref.testing.drafting.selection import CountingProposer


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"num_speculative_tokens": -1}, r"num_speculative_tokens\(-1\) >= 0"),
        ({"max_model_len": 0}, r"max_model_len\(0\) >= 1"),
        ({"suffix_cache_max_depth": 0}, r"suffix_cache_max_depth\(0\) >= 1"),
        ({"suffix_max_spec_tokens": 0}, r"suffix_max_spec_tokens\(0\) must be in \[1, 32\]"),
        ({"suffix_max_spec_tokens": MAX_SPEC_LEN + 1}, r"suffix_max_spec_tokens\(33\) must be in \[1, 32\]"),
    ],
)
def test_each_config_rule_alone_rejects(changes: dict[str, int], message: str) -> None:
    base = {"method": "arctic", "num_speculative_tokens": 3, "max_model_len": 10}
    DraftConfig(**base)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        DraftConfig(**base | changes)  # type: ignore[arg-type]


def test_the_smallest_and_largest_valid_configs() -> None:
    DraftConfig(
        method="arctic",
        num_speculative_tokens=0,
        max_model_len=1,
        suffix_cache_max_depth=1,
        suffix_max_spec_tokens=1,
        max_cached_requests=0,
    )
    DraftConfig(method="suffix", num_speculative_tokens=64, max_model_len=10, suffix_max_spec_tokens=MAX_SPEC_LEN)
    DraftConfig(method="suffix", num_speculative_tokens=1, max_model_len=10, suffix_cache_max_depth=1)


@pytest.mark.parametrize("k", [3, 32, 63, 65])
def test_suffix_decoding_refuses_a_k_that_would_cap_nothing(k: int) -> None:
    """The seed sets k = D for "suffix" and no rule reads k there: a k meant as vLLM's draft cap (which is
    ``suffix_max_spec_tokens``) used to draft 32-token drafts silently; now drafting with it is refused,
    naming both knobs. Before: no error. An Arctic config (hybrid or not) takes any k."""
    config = DraftConfig(method="suffix", num_speculative_tokens=k, max_model_len=100)
    message = rf"num_speculative_tokens\({k}\) == suffix_cache_max_depth\(64\).*suffix_max_spec_tokens\(32\)"
    with pytest.raises(ValueError, match=message):
        check_suffix_k(config)
    with pytest.raises(ValueError, match=message):
        propose_draft_token_ids([_new_row()], config, suffix_cache=_cache_with_history(), arctic_drafter=None)
    check_suffix_k(DraftConfig(method="suffix", num_speculative_tokens=k, max_model_len=100, suffix_cache_max_depth=k))
    check_suffix_k(
        DraftConfig(method="arctic", num_speculative_tokens=k, max_model_len=100, enable_suffix_decoding=True)
    )


def test_the_cache_size_is_a_setting() -> None:
    """``max_cached_requests`` sizes the global tree of ``new_suffix_cache`` (before: always 100,000); a
    negative size is refused, 0 keeps no response."""
    config = DraftConfig(method="suffix", num_speculative_tokens=64, max_model_len=100, max_cached_requests=1)
    cache = new_suffix_cache(config)
    assert cache.max_cached_requests == 1
    for req in ("a", "b"):
        cache.start_request(req, [1, 2])
        cache.add_active_response(req, [3])
        cache.stop_request(req)
    assert list(cache.cached_requests) == ["b"]  # FIFO: "a" was evicted
    assert (
        new_suffix_cache(
            DraftConfig(method="arctic", num_speculative_tokens=3, max_model_len=10, max_cached_requests=0)
        ).max_cached_requests
        == 0
    )
    with pytest.raises(ValueError, match=r"max_cached_requests\(-1\) must be >= 0"):
        DraftConfig(method="arctic", num_speculative_tokens=3, max_model_len=10, max_cached_requests=-1)


def test_documented_defaults() -> None:
    """docs/runner.md §2.1–§2.5: the batch gate at 64 rows, D = 64 and k = D for suffix decoding, k = 3 for the
    Arctic speculator without suffix decoding beside it, and a cache of 100,000 responses."""
    config = DraftConfig(method="arctic", num_speculative_tokens=3, max_model_len=10)
    assert config.disable_by_batch_size == 64 and config.suffix_cache_max_depth == 64
    suffix = suffix_config(100)
    assert (suffix.method, suffix.num_speculative_tokens, suffix.disable_by_batch_size) == ("suffix", 64, 64)
    assert suffix.suffix_max_spec_tokens == MAX_SPEC_LEN
    arctic = arctic_config(100)
    assert (arctic.num_speculative_tokens, arctic.enable_suffix_decoding, arctic.disable_by_batch_size) == (
        3,
        False,
        64,
    )
    cache = new_suffix_cache(config)
    assert (cache.max_tree_depth, cache.max_cached_requests) == (64, 100_000)
    assert config.max_cached_requests == 100_000
    assert (config.suffix_max_spec_factor, config.suffix_max_spec_offset, config.suffix_min_token_prob) == (
        1.0,
        0.0,
        0.1,
    )
    assert (config.enable_suffix_decoding, config.suffix_max_spec_tokens) == (False, MAX_SPEC_LEN)
    assert DraftStats() == DraftStats(
        steps=0, gated_steps=0, suffix_rows=0, arctic_rows=0, empty_rows=0, draft_tokens=0
    )


@pytest.mark.parametrize(
    ("rows", "size", "fires"),
    [(64, 64, False), (65, 64, True), (1, 0, False), (5, None, False), (2, 1, True), (1, 1, False)],
)
def test_d1_the_gate_fires_above_its_size(rows: int, size: int | None, fires: bool) -> None:
    assert batch_gate_fires(rows, size) is fires


def _row(n: int, *, spec: Sequence[int] = (), sampled: Sequence[int] = (0,), req: object = "a") -> DraftRow:
    return DraftRow(
        req_id=req, token_ids=[i % 7 for i in range(n)], num_prompt_tokens=1, sampled=sampled, spec_ids=spec
    )  # type: ignore[arg-type]


def test_d3_no_query_at_the_model_length_and_at_a_zero_budget() -> None:
    config = DraftConfig(method="suffix", num_speculative_tokens=64, max_model_len=10)
    assert suffix_query(_row(10), config) is None  # N = M
    assert suffix_query(_row(9), config) is None  # budget M − N − 1 = 0
    query = suffix_query(_row(8), config)
    assert query is not None and query.max_spec_tokens == 1
    assert suffix_query(_row(3, spec=[1] * MAX_SPEC_LEN), config) is None  # MAX_SPEC_LEN − s = 0


def test_d6_budgets_and_the_single_arctic_call() -> None:
    config = DraftConfig(method="arctic", num_speculative_tokens=4, max_model_len=10)
    rows = [_row(3), _row(8), _row(9), _row(10), _row(3, sampled=()), _row(2)]
    budgets = arctic_budgets(rows, config, [False, False, False, False, False, True])
    assert budgets == [4, 1, 0, 0, 0, 0]  # min(k, M − N − 1), never below 0; no sample or suffix-chosen: 0
    proposer = CountingProposer()
    drafts = arctic_drafts(proposer, rows, budgets)
    assert proposer.calls == [4]  # one call, num_predict = the largest budget of the participating rows
    assert [len(d) for d in drafts] == budgets
    assert drafts[0] == [(rows[0].token_ids[-1] + i + 1) % 1000 for i in range(4)]
    quiet = CountingProposer()
    assert arctic_drafts(quiet, rows, [0] * len(rows)) == [[]] * len(rows) and quiet.calls == []
    with pytest.raises(ValueError):
        arctic_budgets(rows, config, [False])


class _ShortProposer:
    """Answers one row fewer than asked: selection must notice, not misalign drafts with rows."""

    def propose(self, rows: Sequence[DraftRow], num_predict: int) -> list[list[int]]:
        return [[1] * num_predict for _ in rows][1:]


def test_a_proposer_answering_the_wrong_number_of_rows_is_an_error() -> None:
    with pytest.raises(ValueError):
        arctic_drafts(_ShortProposer(), [_row(3), _row(4)], [2, 2])


def _cache_with_history() -> SuffixDecodingCache:
    """Request "old" answered 1 … 12 before. A request with prompt 1 … 5 that samples 6 matches it over
    at most 5 tokens (a match leaves the context's first token out), budget 5 at factor 1, so its suffix
    draft is 7 … 11 with probability 1 each: score 5."""
    cache = SuffixDecodingCache(64)
    cache.start_request("old", [99])
    cache.add_active_response("old", list(range(1, 13)))
    cache.stop_request("old")
    return cache


def _new_row() -> DraftRow:
    return DraftRow(req_id="new", token_ids=[1, 2, 3, 4, 5, 6], num_prompt_tokens=5, sampled=[6])


def test_d5_a_suffix_score_equal_to_k_wins_the_row() -> None:
    """Hybrid: the suffix draft is taken iff its score ≥ k."""
    for k, expected in ((5, list(range(7, 12))), (6, None)):
        config = DraftConfig(method="arctic", num_speculative_tokens=k, max_model_len=100, enable_suffix_decoding=True)
        stats = DraftStats()
        drafts = propose_draft_token_ids(
            [_new_row()], config, suffix_cache=_cache_with_history(), arctic_drafter=CountingProposer(), stats=stats
        )
        assert stats.suffix_scores == [5.0]
        if expected is None:
            assert drafts == [[(6 + i + 1) % 1000 for i in range(k)]] and stats.arctic_rows == 1
        else:
            assert drafts == [expected] and stats.suffix_rows == 1 and stats.arctic_rows == 0


def test_suffix_decoding_never_calls_a_proposer_it_was_handed() -> None:
    proposer = CountingProposer()
    config = DraftConfig(method="suffix", num_speculative_tokens=64, max_model_len=100)
    drafts = propose_draft_token_ids([_new_row()], config, suffix_cache=_cache_with_history(), arctic_drafter=proposer)
    assert drafts == [list(range(7, 12))] and proposer.calls == []


def test_statistics_count_each_row_once_by_the_draft_it_ends_with() -> None:
    """Hybrid, k = 2, over two steps and one gated step:
    step 1 — "new" takes its suffix draft (score 5 ≥ 2), "other" takes an Arctic draft of 2, "idle"
    has no sample; step 2 — "full" is at the model length (no draft: an empty row); then a batch
    over the gate's size of 3 rows is gated."""
    config = DraftConfig(
        method="arctic",
        num_speculative_tokens=2,
        max_model_len=100,
        enable_suffix_decoding=True,
        disable_by_batch_size=3,
    )
    cache = _cache_with_history()
    stats = DraftStats()
    rows = [
        _new_row(),
        DraftRow(req_id="other", token_ids=[50, 51, 52], num_prompt_tokens=2, sampled=[52]),
        DraftRow(req_id="idle", token_ids=[60, 61], num_prompt_tokens=3, sampled=[]),
    ]
    first = propose_draft_token_ids(rows, config, suffix_cache=cache, arctic_drafter=CountingProposer(), stats=stats)
    assert first == [list(range(7, 12)), [53, 54], []]
    assert (stats.steps, stats.suffix_rows, stats.arctic_rows, stats.empty_rows, stats.draft_tokens) == (1, 1, 1, 0, 7)
    assert len(stats.suffix_scores) == 2 and stats.suffix_scores[0] == 5.0  # "idle" asked nothing
    full = DraftRow(req_id="full", token_ids=list(range(100)), num_prompt_tokens=99, sampled=[99])
    assert propose_draft_token_ids(
        [full], config, suffix_cache=cache, arctic_drafter=CountingProposer(), stats=stats
    ) == [[]]
    assert (stats.steps, stats.suffix_rows, stats.arctic_rows, stats.empty_rows, stats.draft_tokens) == (2, 1, 1, 1, 7)
    assert len(stats.suffix_scores) == 2  # no query at N = M
    gated = propose_draft_token_ids(
        [*rows, full], config, suffix_cache=cache, arctic_drafter=CountingProposer(), stats=stats
    )
    assert gated == [[]] * 4
    assert (stats.steps, stats.gated_steps, stats.suffix_rows, stats.arctic_rows, stats.empty_rows) == (3, 1, 1, 1, 1)
