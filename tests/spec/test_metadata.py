"""SpecDecodeMetadata: the worked example of docs/verification.md §3 and its invariants."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from arctic_ref.spec import SamplingMetadata, SpecDecodeMetadata


def test_worked_example() -> None:
    input_ids = torch.tensor([50, 61, 62, 10, 11, 12, 13, 14, 70, 80, 91])
    meta = SpecDecodeMetadata.build([2, 0, 0, 1], [3, 8, 9, 11], input_ids)
    assert meta.logits_indices.tolist() == [0, 1, 2, 7, 8, 9, 10]
    assert meta.target_logits_indices.tolist() == [0, 1, 5]
    assert meta.bonus_logits_indices.tolist() == [2, 3, 4, 6]
    assert meta.draft_token_ids.tolist() == [61, 62, 91]
    assert meta.cu_num_draft_tokens.tolist() == [2, 2, 2, 3]
    assert meta.max_spec_len == 2
    assert all(t.dtype == torch.int32 for t in (meta.logits_indices, meta.draft_token_ids, meta.cu_num_draft_tokens))


@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 5)), min_size=1, max_size=8))
def test_invariants(requests: list[tuple[int, int]]) -> None:
    counts = [n for n, _ in requests]
    scheduled = [n + 1 + extra for n, extra in requests]
    cumulative = torch.tensor(scheduled).cumsum(0).tolist()
    input_ids = torch.arange(100, 100 + cumulative[-1])
    meta = SpecDecodeMetadata.build(counts, cumulative, input_ids)
    total = sum(counts) + len(counts)
    target, bonus = meta.target_logits_indices.tolist(), meta.bonus_logits_indices.tolist()
    assert sorted(target + bonus) == list(range(total))
    assert target == sorted(target) and len(meta.logits_indices) == total
    expected_drafts = [100 + c - n + j for c, n in zip(cumulative, counts, strict=True) for j in range(n)]
    assert meta.draft_token_ids.tolist() == expected_drafts
    drafts = [list(range(n)) for n in counts]
    compact = SpecDecodeMetadata.from_drafts(drafts)
    assert compact.target_logits_indices.tolist() == target and compact.bonus_logits_indices.tolist() == bonus
    assert compact.cu_num_draft_tokens.tolist() == meta.cu_num_draft_tokens.tolist()
    assert compact.max_spec_len == meta.max_spec_len


def test_errors_and_dummy() -> None:
    with pytest.raises(ValueError, match="at least one request"):
        SpecDecodeMetadata.build([], [], torch.tensor([]))
    with pytest.raises(ValueError, match="cannot carry 2 drafts"):
        SpecDecodeMetadata.build([2], [2], torch.tensor([1, 2]))
    dummy = SpecDecodeMetadata.make_dummy([[1, 2], [3]])
    assert dummy.logits_indices.tolist() == [0] * 5 and dummy.cu_num_draft_tokens.tolist() == [2, 3]


def test_sampling_metadata_constructs_with_defaults() -> None:
    meta = SamplingMetadata(
        temperature=torch.tensor([1.0]), all_greedy=False, all_random=True, top_k=None, top_p=None, generators={}
    )
    assert meta.generators == {} and meta.is_greedy(1, torch.device("cpu")).tolist() == [False]


def test_each_build_rule_alone_names_the_request_and_the_counts() -> None:
    ids = torch.arange(10)
    SpecDecodeMetadata.build([2, 2], [3, 6], ids)  # fits: 3 tokens each for 2 drafts + the verified token
    with pytest.raises(ValueError, match=r"request 1: 1 scheduled tokens cannot carry 2 drafts"):
        SpecDecodeMetadata.build([2, 2], [3, 4], ids)  # the second request alone is short
    with pytest.raises(ValueError, match=r"request 0: 3 scheduled tokens cannot carry -1 drafts"):
        SpecDecodeMetadata.build([-1, 2], [3, 6], ids)
    with pytest.raises(ValueError, match=r"len\(cu_num_scheduled_tokens\)\(1\) != len\(num_draft_tokens\)\(2\)"):
        SpecDecodeMetadata.build([2, 2], [3], ids)
    with pytest.raises(ValueError, match=r"cu_num_scheduled_tokens ends at 12 but input_ids has 10"):
        SpecDecodeMetadata.build([2, 2, 1], [3, 6, 12], ids)  # three requests: the end is the last entry
    SpecDecodeMetadata.build([2, 2], [3, 10], ids)  # ending exactly at the last input id is fine
