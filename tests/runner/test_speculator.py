"""The Arctic speculators, hybrid selection and n-gram rules (docs/runner.md §2.3–2.5): batched ≡ literal
per-row loop in float64, the hidden-row example, per-row lengths and per-row hybrid choice with the
seed's bugs as fixtures that the tests catch, and lossless greedy output with every drafter."""

import math
import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import get_args

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from arctic_ref.model.config import tiny_config
from arctic_ref.model.weights import random_weights
from arctic_ref.parallel import ParallelLayout, RankGroups, SoloComm
from arctic_ref.runner import EngineConfig, SamplingParams, SchedulerConfig, build_runner, run_requests
from arctic_ref.runner.drafters import (
    HiddenRowProposer,
    NgramDrafter,
    NgramRule,
    SpeculatorDrafter,
    SuffixDrafter,
    ngram_draft,
    ngram_draft_longest,
)
from arctic_ref.runner.prompts import builtin_prompts
from arctic_ref.runner.speculator import (
    ArcticSpeculator,
    SpeculatorConfig,
    propose_literal,
    select_hidden_rows,
    speculator_for,
    speculator_weights,
)
from arctic_ref.spec.drafts import DraftConfig, DraftRow, DraftRules, arctic_config, propose_draft_token_ids
from arctic_ref.suffix.cache import SuffixDecodingCache, SuffixDecodingDraft
from arctic_ref.testing.drafter_doubles import JunkDrafter, OracleDrafter
from arctic_ref.testing.drafting.ngram_oracle import brute_force_ngram
from arctic_ref.testing.drafting.replays import replay_by_id

CONFIG = tiny_config()
SOLO = SoloComm(0)
GROUPS = RankGroups(rank=0, tp=SOLO, sp=SOLO, shift=SOLO)


@pytest.mark.parametrize(
    "config",
    [
        SpeculatorConfig(kind="mlp"),
        SpeculatorConfig(kind="mlp", tie_weights=True, n_predict=4),
        SpeculatorConfig(kind="mlp", scale_input=False),
        SpeculatorConfig(kind="lstm", tie_weights=True),
    ],
    ids=["mlp", "mlp-tied", "mlp-unscaled", "lstm"],
)
def test_batched_speculator_equals_the_literal_loop(config: SpeculatorConfig) -> None:
    speculator = ArcticSpeculator(config, speculator_weights(config, 1))
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(9, config.input_dim, dtype=torch.float64, generator=g)
    tokens = torch.randint(0, config.vocab_size, (9,), generator=g)
    for k in range(config.n_predict + 1):
        batched = speculator.propose(hidden, tokens, k).tolist()
        assert batched == propose_literal(speculator, hidden, tokens.tolist(), k)
        assert all(len(chain) == k for chain in batched)
    assert len({tuple(c) for c in speculator.propose(hidden, tokens, config.n_predict).tolist()}) > 1


def test_constants_and_weight_names() -> None:
    config = SpeculatorConfig(n_predict=3, inner_dim=128)
    w_s = 0.5 ** (0.5 / 3)
    assert config.alpha == pytest.approx(math.sqrt((1 - w_s**2) * 64) / w_s)
    mlp = speculator_weights(config, 1)
    assert sorted(mlp) == sorted(
        f"{p}.{i}.{s}"
        for i in range(3)
        for p, s in [("emb", "weight"), ("proj", "weight"), ("ln", "weight"), ("ln", "bias"), ("head", "weight")]
    )
    lstm = speculator_weights(SpeculatorConfig(kind="lstm", tie_weights=True), 1)
    assert lstm["projs.0.weight"].shape == (512, 128) and lstm["forget_emb.0.weight"].shape == (512, 128)
    with pytest.raises(ValueError, match="requires tie_weights"):
        SpeculatorConfig(kind="lstm")


def test_hidden_row_example() -> None:
    """docs/runner.md §2.4: n = [3, 0, 2], v = [2, 1, 3] → rows 1, 4, 7; without drafts row r → r."""
    sample_hidden = torch.zeros(8, 4)
    assert select_hidden_rows(sample_hidden, [3, 0, 2], [[1, 2], [3], [4, 5, 6]]) == [1, 4, 7]
    assert select_hidden_rows(torch.zeros(3, 4), [0, 0, 0], [[1], [], [2]]) == [0, 1, 2]
    with pytest.raises(ValueError, match="8 sampled hidden rows, but the drafts account for 6"):
        select_hidden_rows(sample_hidden, [3, 0, 0], [[1], [2], [3]])


def _row(req: str, n: int, sampled: list[int]) -> DraftRow:
    return DraftRow(req_id=req, token_ids=list(range(1, n + 1)), num_prompt_tokens=2, sampled=sampled)


def test_lengths_are_cut_per_row_and_the_seed_batch_minimum_is_caught() -> None:
    speculator = speculator_for(128, 512, "mlp", 1, torch.float64)
    rows = [_row("near-end", 98, [7]), _row("far", 10, [8]), _row("partial", 5, [])]
    hidden = torch.randn(3, 128, dtype=torch.float64)
    config = arctic_config(100, num_speculative_tokens=3)
    intended = SpeculatorDrafter(config, speculator).propose_with_hidden(rows, hidden, [0, 0, 0])
    assert [len(d) for d in intended] == [1, 3, 0]  # M − N − 1 = 1 for the first row; none for partial prefills
    buggy_rules = replay_by_id("B3-runner").rules
    buggy = SpeculatorDrafter(config, speculator, buggy_rules).propose_with_hidden(rows, hidden, [0, 0, 0])
    assert [len(d) for d in buggy] == [1, 1, 0] and buggy != intended


def _draft(tokens: list[int], score: float) -> SuffixDecodingDraft:
    return SuffixDecodingDraft(
        token_ids=tokens, parents=list(range(-1, len(tokens) - 1)), probs=[1.0] * len(tokens), score=score, match_len=1
    )


class ScriptedCache(SuffixDecodingCache):
    """A real cache whose ``speculate`` answers each request with a scripted draft."""

    def __init__(self, drafts: dict[Hashable, SuffixDecodingDraft]) -> None:
        super().__init__(64)
        self.drafts = drafts

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
        return self.drafts[req_id]


@dataclass(frozen=True)
class ScriptedProposer:
    """An Arctic stand-in answering each request with its scripted chain (prefix-consistent)."""

    chains: dict[Hashable, list[int]]

    def propose(self, rows: Sequence[DraftRow], num_predict: int) -> list[list[int]]:
        return [self.chains[row.req_id][:num_predict] for row in rows]


def _hybrid(drafts: list[SuffixDecodingDraft], chains: list[list[int]], k: int, rules: DraftRules) -> list[list[int]]:
    rows = [DraftRow(req_id=i, token_ids=[1, 2, 3], num_prompt_tokens=2, sampled=[3]) for i in range(len(drafts))]
    config = DraftConfig(method="arctic", num_speculative_tokens=k, max_model_len=1024, enable_suffix_decoding=True)
    return propose_draft_token_ids(
        rows,
        config,
        suffix_cache=ScriptedCache(dict(enumerate(drafts))),
        arctic_drafter=ScriptedProposer(dict(enumerate(chains))),
        rules=rules,
    )


def test_hybrid_choice_is_per_row_and_the_seed_blanking_is_caught() -> None:
    suffix = [_draft([1, 2, 3, 4], 5.0), _draft([9], 0.5), _draft([], 0.0)]
    model = [[5, 6, 7], [8, 8, 8], [4, 4, 4]]
    assert _hybrid(suffix, model, 3, DraftRules()) == [[1, 2, 3, 4], [8, 8, 8], [4, 4, 4]]
    assert _hybrid(suffix, model, 3, replay_by_id("B2").rules) == [[1, 2, 3, 4], [], []]


@given(st.lists(st.integers(0, 3), min_size=1, max_size=30), st.integers(1, 3), st.integers(0, 2), st.integers(1, 5))
def test_ngram_rules_against_brute_force(tokens: list[int], lo: int, extra: int, k: int) -> None:
    hi = lo + extra
    assert ngram_draft(tokens, k, lo, hi) == brute_force_ngram(tokens, k, lo, hi, overlap=False)
    assert ngram_draft_longest(tokens, k, lo, hi) == brute_force_ngram(tokens, k, lo, hi, overlap=True)


def test_ngram_longest_rule_allows_overlap() -> None:
    """[1,1,1]: the 0.9 rule finds nothing at n = 2 (overlap); ≥ 0.10.1 matches at j = 0."""
    assert ngram_draft([1, 1, 1], 3, 2, 2) == []
    assert ngram_draft_longest([1, 1, 1], 3, 2, 2) == [1]


REFERENCE = [
    r.output_token_ids
    for r in run_requests(
        build_runner(
            EngineConfig(
                model=CONFIG, layout=ParallelLayout(1, 1, 1), scheduler=SchedulerConfig(max_num_batched_tokens=64)
            ),
            random_weights(CONFIG, 0),
            GROUPS,
        ),
        SchedulerConfig(max_num_batched_tokens=64),
        builtin_prompts(512),
        [SamplingParams(max_tokens=24)] * 4,
    )
]


def _drafter(name: str) -> object:
    mlp = speculator_for(128, 512, "mlp", 1, torch.float64)
    return {
        "arctic-mlp": SpeculatorDrafter(arctic_config(1024), mlp),
        "arctic-lstm": SpeculatorDrafter(arctic_config(1024), speculator_for(128, 512, "lstm", 1, torch.float64)),
        "hybrid": SpeculatorDrafter(arctic_config(1024, hybrid=True), mlp),
        "ngram-0.10.1": NgramDrafter(1024, 3, min_n=1, max_n=4, rule="vllm-0.10.1"),
    }[name]


@pytest.mark.parametrize("name", ["arctic-mlp", "arctic-lstm", "hybrid", "ngram-0.10.1"])
def test_greedy_output_is_lossless(name: str) -> None:
    drafter = _drafter(name)
    engine = EngineConfig(
        model=CONFIG, layout=ParallelLayout(1, 1, 1), scheduler=SchedulerConfig(max_num_batched_tokens=64)
    )
    results = run_requests(
        build_runner(engine, random_weights(CONFIG, 0), GROUPS, drafter),  # type: ignore[arg-type]
        engine.scheduler,
        builtin_prompts(512),
        [SamplingParams(max_tokens=24)] * 4,
    )
    assert [r.output_token_ids for r in results] == REFERENCE
    assert sum(r.num_draft_tokens for r in results) > 0
    if name == "hybrid":
        assert isinstance(drafter, SpeculatorDrafter)
        print(f"\nhybrid: {drafter.stats.suffix_rows} suffix rows, {drafter.stats.arctic_rows} arctic rows")
        assert drafter.stats.suffix_rows > 0 and drafter.stats.arctic_rows > 0


def test_speculator_drafts_are_the_same_on_every_rank_by_construction() -> None:
    """Weights come from a seeded CPU generator: two builds are identical (ranks build their own)."""
    a, b = speculator_for(128, 512, "mlp", 7, torch.float32), speculator_for(128, 512, "mlp", 7, torch.float32)
    assert all(torch.equal(a.weights[k], b.weights[k]) for k in a.weights)
    np.testing.assert_array_equal(
        a.propose(torch.ones(2, 128), torch.tensor([1, 2]), 3), b.propose(torch.ones(2, 128), torch.tensor([1, 2]), 3)
    )


_ROWS = st.lists(
    st.tuples(
        st.one_of(
            st.just(_draft([], 0.0)),
            st.builds(_draft, st.lists(st.integers(0, 9), min_size=1, max_size=4), st.floats(0, 8)),
        ),
        st.lists(st.integers(0, 9), max_size=3),
    ),
    min_size=1,
    max_size=6,
)


@given(_ROWS, st.integers(1, 5), st.data())
def test_hybrid_rule_is_per_row_and_as_specified(
    rows: list[tuple[SuffixDecodingDraft, list[int]]], k: int, data: st.DataObject
) -> None:
    """docs/runner.md §2.5 item 4 as a property of ``propose_draft_token_ids``: row i takes its suffix
    draft iff that draft is non-empty with score ≥ k, else its Arctic draft (cut to k); changing any
    other row never changes row i; the seed's step-wide blanking (replay B2) breaks row independence
    whenever one row takes suffix and another has an Arctic draft."""
    suffix = [d for d, _ in rows]
    model = [m for _, m in rows]
    out = _hybrid(suffix, model, k, DraftRules())
    took = [bool(d.token_ids) and d.score >= k for d in suffix]
    for i, (d, m) in enumerate(rows):
        assert out[i] == (list(d.token_ids) if took[i] else m[:k])
    j = data.draw(st.integers(0, len(rows) - 1))
    changed = _hybrid(suffix, [*model[:j], [9, 9], *model[j + 1 :]], k, DraftRules())
    assert all(changed[i] == out[i] for i in range(len(rows)) if i != j)
    seed = _hybrid(suffix, model, k, replay_by_id("B2").rules)
    if any(took) and any(m for m, t in zip(model, took, strict=True) if not t):
        assert seed != out  # the replay is caught by this property


@pytest.mark.parametrize(("rule", "expected"), [("vllm-0.9", []), ("vllm-0.10.1", [1])])
def test_the_ngram_drafter_follows_its_rule(rule: NgramRule, expected: list[int]) -> None:
    """On [5, 1, 1, 1] with n = 2 the rules differ: 0.9.x forbids the match to overlap the suffix
    (j ≤ N − 2n), ≥ 0.10.1 allows it (j ≤ N − n − 1) and drafts the 1 after [1, 1] at j = 1."""
    drafter = NgramDrafter(1024, 3, min_n=2, max_n=2, rule=rule)
    row = DraftRow(req_id="r", token_ids=[5, 1, 1, 1], num_prompt_tokens=4, sampled=[1])
    assert drafter.propose([row]) == [expected]


@given(st.lists(st.integers(0, 3), min_size=1, max_size=24), st.sampled_from(get_args(NgramRule)))
def test_the_ngram_drafter_is_its_rules_function(tokens: list[int], rule: NgramRule) -> None:
    drafter = NgramDrafter(1024, 3, min_n=1, max_n=3, rule=rule)
    row = DraftRow(req_id="r", token_ids=tokens, num_prompt_tokens=1, sampled=tokens[-1:])
    draft = {"vllm-0.9": ngram_draft, "vllm-0.10.1": ngram_draft_longest}[rule](tokens, 3, 1, 3)
    assert drafter.propose([row]) == [draft]


def test_the_suffix_drafter_refuses_a_k_that_caps_nothing() -> None:
    """For "suffix" the seed sets k = D and the draft cap is ``suffix_max_spec_tokens`` (vLLM's
    ``num_speculative_tokens``): a k of 8 used to build a drafter of 32-token drafts. Before: no error."""
    with pytest.raises(ValueError, match=r"num_speculative_tokens\(8\) == suffix_cache_max_depth\(64\)"):
        SuffixDrafter(DraftConfig(method="suffix", num_speculative_tokens=8, max_model_len=100))
    built = SuffixDrafter.build(100, 8)
    assert (built.config.num_speculative_tokens, built.config.suffix_max_spec_tokens) == (64, 8)
    assert (built.cache.max_tree_depth, built.cache.max_cached_requests) == (64, 100_000)


def test_ngram_drafter_defaults() -> None:
    """k = 3 (the runner's; vLLM requires one), n in [5, 5] (vLLM's window when neither bound is given),
    no batch gate (vLLM's n-gram proposer has none) and the 0.9.x rule (docs/runner.md §2.3)."""
    drafter = NgramDrafter(100)
    assert (drafter.num_spec_tokens, drafter.min_n, drafter.max_n) == (3, 5, 5)
    assert (drafter.disable_by_batch_size, drafter.rule) == (None, "vllm-0.9")
    row = DraftRow(req_id="r", token_ids=[1, 2, 3, 4, 5, 9, 1, 2, 3, 4, 5], num_prompt_tokens=11, sampled=[5])
    assert drafter.propose([row] * 100) == [[9, 1, 2]] * 100  # no gate at 100 rows


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_n": 0}, r"min_n\(0\)"),
        ({"min_n": 3, "max_n": 2}, r"min_n\(3\) <= max_n\(2\)"),
        ({"num_spec_tokens": 0}, r"num_spec_tokens\(0\)"),
        ({"num_spec_tokens": 33}, r"num_spec_tokens\(33\)"),
    ],
)
def test_ngram_drafter_rejects(kwargs: dict[str, int], message: str) -> None:
    NgramDrafter(100, num_spec_tokens=1, min_n=1, max_n=1)
    NgramDrafter(100, num_spec_tokens=32, min_n=2, max_n=2)
    with pytest.raises(ValueError, match=message):
        NgramDrafter(100, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("n", "expected"), [(8, [4, 1]), (9, [4]), (10, [])])
def test_ngram_drafter_cuts_k_at_the_model_length(n: int, expected: list[int]) -> None:
    """k = min(num_spec_tokens, M − N): at M = 10 the draft may end exactly at M."""
    tokens = [1, 2, 3, 4, 1, 2, 3, 4, 1, 2][:n]
    tokens[-2:] = [2, 3]
    drafter = NgramDrafter(10, 3, min_n=2, max_n=2)
    row = DraftRow(req_id="r", token_ids=tokens, num_prompt_tokens=n, sampled=[3])
    assert drafter.propose([row, DraftRow(req_id="p", token_ids=tokens, num_prompt_tokens=n, sampled=[])]) == [
        expected,
        [],
    ]


def test_ngram_drafter_gate_fires_above_its_size() -> None:
    drafter = NgramDrafter(100, 2, min_n=1, max_n=1, disable_by_batch_size=2)
    row = DraftRow(req_id="r", token_ids=[1, 2, 1], num_prompt_tokens=3, sampled=[1])
    assert drafter.propose([row, row]) == [[2, 1], [2, 1]]
    assert drafter.propose([row, row, row]) == [[], [], []]


def test_ngram_rules_at_k_zero_or_below_and_short_contexts() -> None:
    """k < 1 drafts nothing (a negative k would otherwise slice from the end); 0.9.x needs 2n tokens."""
    tokens = [1, 2, 3, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2]
    for rule in (ngram_draft, ngram_draft_longest):
        assert rule(tokens, 1, 2, 2) == [3]
        assert rule(tokens, 0, 2, 2) == [] and rule(tokens, -8, 2, 2) == []
    assert ngram_draft([1, 2, 1], 2, 2, 2) == [] and ngram_draft([1, 2, 1, 2], 2, 2, 2) == [1, 2]
    assert ngram_draft_longest([1, 1, 1], 2, 2, 2) == [1]


def test_oracle_drafter_drafts_correct_tokens_then_one_wrong() -> None:
    """``correct`` tokens of the baseline after what is done, then the next one plus 1 (mod V); none
    for a partial prefill or without room (M − N − 1 ≤ 0); cut to the room."""
    reference = {(1, 2): (5, 6, 7, 9, 3), (3,): (4,)}
    drafter = OracleDrafter(reference, correct=2, vocab_size=10, max_model_len=100)
    rows = [
        DraftRow(req_id="a", token_ids=[1, 2, 5], num_prompt_tokens=2, sampled=[5]),  # done 1: 6, 7, then 9 + 1 → 0
        DraftRow(req_id="b", token_ids=[1, 2, 5, 6, 7], num_prompt_tokens=2, sampled=[7]),  # done 3: 9, 3, no wrong one
        DraftRow(req_id="c", token_ids=[1, 2], num_prompt_tokens=2, sampled=[]),
        DraftRow(req_id="d", token_ids=[3], num_prompt_tokens=1, sampled=[3]),  # done 0: 4, nothing after it
    ]
    assert drafter.propose(rows) == [[6, 7, 0], [9, 3], [], [4]]
    assert OracleDrafter(reference, 2, 10, 5).propose(rows[:1]) == [[6]]  # room 5 − 3 − 1 = 1
    assert OracleDrafter(reference, 2, 10, 4).propose(rows[:1]) == [[]]  # room 0
    assert OracleDrafter(reference, 0, 7, 100).propose(rows[:1]) == [[0]]  # (6 + 1) mod 7


def test_junk_drafter_draws_k_seeded_ids_per_row() -> None:
    drafter = JunkDrafter(vocab_size=5, max_model_len=10, k=3, seed=1)
    rows = [
        DraftRow(req_id="a", token_ids=[1, 2], num_prompt_tokens=1, sampled=[2]),
        DraftRow(req_id="b", token_ids=[1] * 7, num_prompt_tokens=1, sampled=[1]),  # room 10 − 7 − 1 = 2
        DraftRow(req_id="c", token_ids=[1] * 3, num_prompt_tokens=3, sampled=[]),
    ]
    rng = random.Random(1)
    expected = [[rng.randrange(5) for _ in range(3)], [rng.randrange(5) for _ in range(2)], []]
    assert drafter.propose(rows) == expected
    default = random.Random(0)
    assert JunkDrafter(5, 10).propose(rows[:1]) == [[default.randrange(5) for _ in range(4)]]  # k = 4, seed 0


def test_hidden_row_proposer_lengths() -> None:
    """At most min(num_predict, n_predict) tokens; 1 gives each chain's first token; 0 gives none."""
    speculator = speculator_for(128, 512, "mlp", 1, torch.float64)
    hidden = torch.randn(2, 128, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    rows = [_row("a", 5, [7]), _row("b", 6, [8])]
    proposer = HiddenRowProposer(speculator, hidden, {"a": 1, "b": 0})
    full = proposer.propose(rows, 5)
    assert [len(d) for d in full] == [3, 3]  # n_predict 3
    assert full == propose_literal(speculator, hidden[[1, 0]], [7, 8], 3)
    assert proposer.propose(rows, 1) == [d[:1] for d in full]
    assert proposer.propose(rows, 0) == [[], []]
