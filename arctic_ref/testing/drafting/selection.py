"""The draft-selection conformance suite (docs/verification.md §4): scenarios that run
``propose_draft_token_ids`` under any ``DraftRules`` value. The intended rules pass every check; each
bug replay (``arctic_ref.testing.drafting.replays``) fails at least one check named by its id (the
meta-test in ``tests/spec/test_drafts.py``).
"""

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from arctic_ref.spec.drafts import INTENDED_RULES, DraftConfig, DraftRow, DraftRules, propose_draft_token_ids
from arctic_ref.spec.profile import MAX_SPEC_LEN
from arctic_ref.suffix.cache import SuffixDecodingCache, SuffixDecodingDraft


class CountingProposer:
    """A deterministic Arctic stand-in: token i of a row is (last token + i + 1) mod 1000."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def propose(self, rows: Sequence[DraftRow], num_predict: int) -> list[list[int]]:
        self.calls.append(num_predict)
        return [[(row.token_ids[-1] + i + 1) % 1000 for i in range(num_predict)] for row in rows]


class RecordingCache(SuffixDecodingCache):
    """A real cache that records every speculate call's pattern and budget."""

    def __init__(self, max_tree_depth: int = 64) -> None:
        super().__init__(max_tree_depth)
        self.queries: list[tuple[list[int], int | None]] = []

    def speculate(
        self,
        req_id: Hashable,
        context: Sequence[int] | np.ndarray,
        max_spec_tokens: int | None = None,
        max_spec_factor: float = 1.0,
        max_spec_offset: float = 0.0,
        min_token_prob: float = 0.1,
        use_tree_spec: bool = False,
    ) -> SuffixDecodingDraft:
        self.queries.append(([int(t) for t in context], max_spec_tokens))
        return super().speculate(
            req_id, context, max_spec_tokens, max_spec_factor, max_spec_offset, min_token_prob, use_tree_spec
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectionCheck:
    id: str
    replays: tuple[str, ...]
    """Bug replays this check is designed to catch."""
    passed: bool
    detail: str


Scenario = Callable[[DraftRules], tuple[bool, str]]


def _row(req_id: str, tokens: list[int], sampled: int = 1, prompt: int | None = None) -> DraftRow:
    return DraftRow(
        req_id=req_id,
        token_ids=tokens,
        num_prompt_tokens=len(tokens) - sampled if prompt is None else prompt,
        sampled=tokens[len(tokens) - sampled :] if sampled else [],
    )


def _b1_pattern(rules: DraftRules) -> tuple[bool, str]:
    config = DraftConfig(method="suffix", num_speculative_tokens=64, max_model_len=4096)
    cache = RecordingCache(64)
    tokens = list(range(100, 180))
    propose_draft_token_ids([_row("a", tokens)], config, suffix_cache=cache, arctic_drafter=None, rules=rules)
    pattern = cache.queries[-1][0]
    return pattern == tokens[-64:], f"pattern ends {pattern[-3:]}, expected {tokens[-3:]}"


def _b1_repeat(rules: DraftRules) -> tuple[bool, str]:
    config = DraftConfig(method="suffix", num_speculative_tokens=64, max_model_len=4096)
    segment = [11, 12, 13, 14, 15, 16, 17, 18]
    tokens = [1, 2, *segment, 21, 22, 23, 24, 25, 26, 3, 4, *segment]
    drafts = propose_draft_token_ids(
        [_row("a", tokens)], config, suffix_cache=SuffixDecodingCache(64), arctic_drafter=None, rules=rules
    )
    return len(drafts[0]) >= 4, f"draft {drafts[0]} after a repeated 8-token segment"


def _b1_budget(rules: DraftRules) -> tuple[bool, str]:
    config = DraftConfig(method="suffix", num_speculative_tokens=64, max_model_len=20)
    cache = RecordingCache(64)
    tokens = [5, 6, 7] * 6  # N = 18 = M - 2
    propose_draft_token_ids([_row("a", tokens)], config, suffix_cache=cache, arctic_drafter=None, rules=rules)
    budget = cache.queries[-1][1] if cache.queries else None
    return budget == 1, f"budget {budget} at N = M - 2 (expected 1)"


def _b2_hybrid(rules: DraftRules) -> tuple[bool, str]:
    config = DraftConfig(method="arctic", num_speculative_tokens=3, max_model_len=4096, enable_suffix_decoding=True)
    repeated = [7, 8, 9, 10] * 6
    rows = [
        _row("suffix-row", repeated),  # long exact repeats: suffix score ≥ k
        _row("low-score", [501, 502, 503, 504]),  # nothing to match
        DraftRow(req_id="prefill", token_ids=[1, 2, 3], num_prompt_tokens=10, sampled=[]),  # partial prefill
    ]
    drafts = propose_draft_token_ids(
        rows, config, suffix_cache=SuffixDecodingCache(64), arctic_drafter=CountingProposer(), rules=rules
    )
    ok = drafts[1] == [505, 506, 507] and len(drafts[0]) >= 3 and drafts[2] == []
    return ok, f"drafts {drafts}"


def _b3_per_row(rules: DraftRules) -> tuple[bool, str]:
    config = DraftConfig(method="arctic", num_speculative_tokens=4, max_model_len=40)
    near, far, edge = _row("near", list(range(37))), _row("far", list(range(10))), _row("edge", list(range(39)))
    drafts = propose_draft_token_ids(
        [near, far], config, suffix_cache=None, arctic_drafter=CountingProposer(), rules=rules
    )
    first = [len(d) for d in drafts] == [2, 4]
    drafts2 = propose_draft_token_ids(
        [edge, far], config, suffix_cache=None, arctic_drafter=CountingProposer(), rules=rules
    )
    second = drafts2[0] == [] and len(drafts2[1]) == 4
    return (
        first and second,
        f"lengths {[len(d) for d in drafts]} (expected [2, 4]); with a row at M-1: {[len(d) for d in drafts2]}",
    )


def _b4_boundaries(rules: DraftRules) -> tuple[bool, str]:
    problems = []
    # Score exactly k chooses suffix in a hybrid: a pattern with a 3-token continuation of prob 1.
    hybrid = DraftConfig(method="arctic", num_speculative_tokens=3, max_model_len=4096, enable_suffix_decoding=True)
    tokens = [40, 41, 42, 43, 44, 45, 50, 40, 41, 42]
    drafts = propose_draft_token_ids(
        [_row("k", tokens)],
        hybrid,
        suffix_cache=SuffixDecodingCache(64),
        arctic_drafter=CountingProposer(),
        rules=rules,
    )
    if drafts[0] != [43, 44, 45]:
        problems.append(f"score = k in hybrid gave {drafts[0]}, not the suffix draft [43, 44, 45]")
    # Score 0 chooses suffix (an empty draft) under "suffix": nothing falls back.
    only = DraftConfig(method="suffix", num_speculative_tokens=64, max_model_len=4096)
    drafts = propose_draft_token_ids(
        [_row("z", [900, 901, 902])], only, suffix_cache=SuffixDecodingCache(64), arctic_drafter=None, rules=rules
    )
    if drafts[0] != []:
        problems.append(f"score 0 under suffix gave {drafts[0]}")
    # Score < k falls back to Arctic.
    low = [60, 61, 62, 70, 60, 61]
    drafts = propose_draft_token_ids(
        [_row("low", low)], hybrid, suffix_cache=SuffixDecodingCache(64), arctic_drafter=CountingProposer(), rules=rules
    )
    if drafts[0] != [62, 63, 64]:
        problems.append(f"score < k gave {drafts[0]}, not the Arctic draft [62, 63, 64]")
    return not problems, "; ".join(problems) or "boundaries hold"


def _d1_gate(rules: DraftRules) -> tuple[bool, str]:
    config = DraftConfig(method="suffix", num_speculative_tokens=64, max_model_len=4096, disable_by_batch_size=2)
    cache = SuffixDecodingCache(64)
    rows = [_row(f"r{i}", [1, 2, 3, 1, 2]) for i in range(3)]
    drafts = propose_draft_token_ids(rows, config, suffix_cache=cache, arctic_drafter=None, rules=rules)
    return drafts == [[], [], []] and len(cache.active_requests) == 3, f"{drafts}, active {list(cache.active_requests)}"


def _d1_counts_prefills(rules: DraftRules) -> tuple[bool, str]:
    config = DraftConfig(method="suffix", num_speculative_tokens=64, max_model_len=4096, disable_by_batch_size=2)
    rows = [_row(f"r{i}", [1, 2, 3, 1, 2]) for i in range(2)]
    prefill = DraftRow(req_id="prefill", token_ids=[1, 2, 3, 4, 5, 6], num_prompt_tokens=6, sampled=[])
    drafts = propose_draft_token_ids(
        [*rows, prefill], config, suffix_cache=SuffixDecodingCache(64), arctic_drafter=None, rules=rules
    )
    return drafts == [[], [], []], f"3 rows (one a partial prefill) over a gate of 2 gave {drafts}"


def _u1_feed(rules: DraftRules) -> tuple[bool, str]:
    config = DraftConfig(method="suffix", num_speculative_tokens=64, max_model_len=4096)
    cache = SuffixDecodingCache(64)
    prefill = DraftRow(req_id="prefill", token_ids=[4, 5, 6, 7], num_prompt_tokens=4, sampled=[], discarded=[9])
    propose_draft_token_ids(
        [_row("a", [1, 2, 3]), prefill], config, suffix_cache=cache, arctic_drafter=None, rules=rules
    )
    active = list(cache.active_requests)
    return active == ["a"], f"active after a step with a partial prefill: {active} (its discarded sample is not fed)"


def _d8_bounds(rules: DraftRules) -> tuple[bool, str]:
    config = DraftConfig(method="arctic", num_speculative_tokens=40, max_model_len=50, enable_suffix_decoding=True)
    rows = [_row(f"r{n}", [1, 2, 3, 4] * (n // 4) + [1, 2, 3, 4][: n % 4]) for n in (8, 30, 47, 48, 49)]
    drafts = propose_draft_token_ids(
        rows, config, suffix_cache=SuffixDecodingCache(64), arctic_drafter=CountingProposer(), rules=rules
    )
    bad = [
        (r.num_tokens, len(d))
        for r, d in zip(rows, drafts, strict=True)
        if len(d) > min(MAX_SPEC_LEN, 50 - r.num_tokens - 1)
    ]
    return len(drafts) == len(rows) and not bad, f"rows (N, draft length) over the bound: {bad}"


def _u2_stops_absent(rules: DraftRules) -> tuple[bool, str]:
    config = DraftConfig(method="suffix", num_speculative_tokens=64, max_model_len=4096)
    cache = SuffixDecodingCache(64)
    propose_draft_token_ids(
        [_row("a", [1, 2, 3]), _row("b", [4, 5])], config, suffix_cache=cache, arctic_drafter=None, rules=rules
    )
    propose_draft_token_ids(
        [_row("b", [4, 5, 6]), DraftRow(req_id="c", token_ids=[7], num_prompt_tokens=3, sampled=[])],
        config,
        suffix_cache=cache,
        arctic_drafter=None,
        rules=rules,
    )
    return list(cache.active_requests) == ["b"], f"active after the second step: {list(cache.active_requests)}"


SCENARIOS: Final[tuple[tuple[str, tuple[str, ...], Scenario], ...]] = (
    ("B1-pattern", ("B1",), _b1_pattern),
    ("B1-repeat", ("B1",), _b1_repeat),
    ("B1-budget", ("B1",), _b1_budget),
    ("B2-hybrid-rows", ("B2",), _b2_hybrid),
    ("B3-per-row-budget", ("B3", "B3-runner"), _b3_per_row),
    ("B4-min-score-boundaries", ("B4",), _b4_boundaries),
    ("D1-gate", ("AI-17",), _d1_gate),
    ("D1-gate-counts-prefills", ("AI-17-rows",), _d1_counts_prefills),
    ("D8-bounds", (), _d8_bounds),
    ("U1-no-discarded-feed", ("AI-16",), _u1_feed),
    ("U2-stop-absent", (), _u2_stops_absent),
)


def check_draft_selection(rules: DraftRules = INTENDED_RULES) -> list[SelectionCheck]:
    """Every scenario against ``rules``."""
    out = []
    for name, replays, scenario in SCENARIOS:
        try:
            passed, detail = scenario(rules)
        except Exception as error:  # a crash is a failed check
            passed, detail = False, f"raised {type(error).__name__}: {error}"
        out.append(SelectionCheck(id=name, replays=replays, passed=passed, detail=detail))
    return out
