"""End-to-end gate: the code-edit workload replayed through ours and upstream, every draft equal."""

from collections import Counter

import pytest

from arctic_ref.suffix import SuffixDecodingCache
from arctic_ref.suffix.simulate import SimulationConfig, replay, summarize
from arctic_ref.suffix.upstream import UPSTREAM_AVAILABLE, UpstreamSuffixDecodingCache
from arctic_ref.suffix.workload import code_edit_trace

# (max_spec_tokens, factor, offset, min_prob, max_cached_requests): the bounded caches evict (FIFO),
# so responses leave the global tree while others are appended and speculated on.
PARAMETERS = [(32, 1.0, 0.0, 0.1, -1), (16, 2.0, 1.0, 0.0, 16), (8, 0.5, -1.0, 0.3, 4)]


@pytest.mark.upstream
@pytest.mark.skipif(not UPSTREAM_AVAILABLE, reason="arctic-inference 0.3.0 is not installed")
@pytest.mark.parametrize("tree", [False, True], ids=["path", "tree"])
@pytest.mark.parametrize(
    ("tokens", "factor", "offset", "min_prob", "cached"),
    PARAMETERS,
    ids=["32-1-0-0.1-all", "16-2-1-0-16", "8-0.5-m1-0.3-4"],
)
def test_replay_drafts_equal_upstream(
    tree: bool, tokens: int, factor: float, offset: float, min_prob: float, cached: int, comparisons: Counter[str]
) -> None:
    trace = code_edit_trace(requests=60 if tree else 90)
    config = SimulationConfig(
        max_spec_tokens=tokens,
        max_spec_factor=factor,
        max_spec_offset=offset,
        min_token_prob=min_prob,
        use_tree_spec=tree,
    )
    ours = replay(SuffixDecodingCache(64, cached), trace, config, keep_drafts=True)
    theirs = replay(UpstreamSuffixDecodingCache(64, cached), trace, config, keep_drafts=True)
    assert len(ours.drafts) == len(theirs.drafts) > 1000
    mismatch = next((i for i, (a, b) in enumerate(zip(ours.drafts, theirs.drafts, strict=True)) if a != b), None)
    assert mismatch is None, f"step {mismatch}: ours {ours.drafts[mismatch]} upstream {theirs.drafts[mismatch]}"
    comparisons["upstream (code-edit replay)"] += len(ours.drafts)
    assert summarize(ours) | {"spec_us_per_call": 0, "update_us_per_token": 0} == summarize(theirs) | {
        "spec_us_per_call": 0,
        "update_us_per_token": 0,
    }


def test_replay_rebuilds_every_response_and_accepts_most() -> None:
    """The workload is what docs/suffix-decoding.md describes: long accepted runs (about 18 tokens per step)."""
    result = replay(SuffixDecodingCache(), code_edit_trace(requests=20), SimulationConfig())
    summary = summarize(result)
    assert summary["requests"] == 20
    assert summary["accepted_per_step"] is not None and summary["accepted_per_step"] > 10
