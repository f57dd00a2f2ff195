"""Draft selection (docs/verification.md §4): the conformance suite passes on the intended rules, and
each bug replay of the seed fails a check named by its id (the meta-test)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_ref.spec.drafts import DraftConfig, DraftRow, min_score, propose_draft_token_ids, suffix_query
from arctic_ref.spec.profile import MAX_SPEC_LEN
from arctic_ref.suffix import SuffixDecodingCache
from arctic_ref.testing.drafting.replays import BUG_REPLAYS, BugReplay
from arctic_ref.testing.drafting.selection import CountingProposer, check_draft_selection


def test_intended_rules_pass_every_check() -> None:
    failed = [(c.id, c.detail) for c in check_draft_selection() if not c.passed]
    assert not failed


@pytest.mark.parametrize("replay", BUG_REPLAYS, ids=lambda r: r.id)
def test_each_bug_replay_is_caught_by_its_own_check(replay: BugReplay) -> None:
    results = check_draft_selection(replay.rules)
    named = [c.id for c in results if not c.passed and replay.id in c.replays]
    if replay.must_fail:
        assert named, f"{replay.id} ({replay.upstream}) passed every check designed for it"
    else:
        assert all(c.passed for c in results), [c.id for c in results if not c.passed]


def test_offset_adjustment_example() -> None:
    """D4: f = 1, o = 0, s = 2, m = 5 → one more token: f·m + o′ = 5 − 4 = 1."""
    config = DraftConfig(method="suffix", num_speculative_tokens=64, max_model_len=4096)
    row = DraftRow(req_id="a", token_ids=[1, 2, 3], num_prompt_tokens=2, sampled=[3], spec_ids=[4, 5])
    query = suffix_query(row, config)
    assert query is not None and query.max_spec_offset == -4.0 and query.pattern == [1, 2, 3, 4, 5]
    assert query.max_spec_tokens == min(MAX_SPEC_LEN - 2, 64, 4096 - 3 - 1)
    assert 1.0 * 5 + query.max_spec_offset == 1


def test_min_score_single_definition() -> None:
    assert min_score(DraftConfig(method="suffix", num_speculative_tokens=64, max_model_len=10)) == 0
    assert min_score(DraftConfig(method="arctic", num_speculative_tokens=5, max_model_len=10)) == 5


@given(
    st.lists(st.tuples(st.integers(1, 60), st.booleans()), min_size=1, max_size=6),
    st.integers(1, 8),
    st.sampled_from(["suffix", "arctic", "mlp_speculator"]),
    st.booleans(),
)
def test_d8_draft_bounds_and_row_independence(rows: list[tuple[int, bool]], k: int, method: str, hybrid: bool) -> None:
    """Every draft fits min(MAX_SPEC_LEN, M − N − 1); an Arctic row's draft does not depend on its neighbours.
    (k is the Arctic speculator's; "suffix" takes k = D, as the seed sets it.)"""
    k = 64 if method == "suffix" else k
    config = DraftConfig(method=method, num_speculative_tokens=k, max_model_len=64, enable_suffix_decoding=hybrid)  # type: ignore[arg-type]
    batch = [
        DraftRow(
            req_id=i,
            token_ids=[(7 * j) % 5 for j in range(n)],
            num_prompt_tokens=n - 1 if s else n + 1,
            sampled=[0] if s else [],
        )
        for i, (n, s) in enumerate(rows)
    ]
    drafts = propose_draft_token_ids(
        batch, config, suffix_cache=SuffixDecodingCache(64), arctic_drafter=CountingProposer()
    )
    assert len(drafts) == len(batch)
    for row, draft in zip(batch, drafts, strict=True):
        assert len(draft) <= max(0, min(MAX_SPEC_LEN, 64 - row.num_tokens - 1))
        if not row.sampled:
            assert draft == []
    if method != "suffix" and not hybrid:
        for i, row in enumerate(batch):
            alone = propose_draft_token_ids([row], config, suffix_cache=None, arctic_drafter=CountingProposer())
            assert alone[0] == drafts[i]


def test_config_errors() -> None:
    with pytest.raises((ValueError, TypeError), match="eagle"):
        DraftConfig(method="eagle", num_speculative_tokens=3, max_model_len=10)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a suffix_cache"):
        propose_draft_token_ids(
            [],
            DraftConfig(method="suffix", num_speculative_tokens=64, max_model_len=10),
            suffix_cache=None,
            arctic_drafter=None,
        )
