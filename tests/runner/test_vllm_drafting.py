"""vLLM 0.32's n-gram and suffix drafters, built from a ``speculative_config`` dict
(``arctic_ref.runner.vllm_drafting``): the documented defaults, the dict's rules, worked examples of
each proposer rule, and — where vLLM is importable (its own venv) — draft-for-draft agreement with
vLLM's ``_find_longest_matched_ngram_and_propose_tokens``, ``NgramProposer`` and
``SuffixDecodingProposer`` on random workloads.

Defaults, read in vLLM 0.32.0's source (``vllm/config/speculative.py``):
``prompt_lookup_min`` / ``prompt_lookup_max`` both 5 when neither is given, one alone stands for both
(``__post_init__``, lines 1195–1214); ``num_speculative_tokens`` is required for "ngram" (``_verify_args``,
1819) and defaults to ``suffix_decoding_max_tree_depth`` for "suffix" (``_validate_suffix_decoding``,
1602–1605); ``suffix_decoding_max_tree_depth`` 24 (505), ``suffix_decoding_max_cached_requests`` 10,000
(509), ``suffix_decoding_max_spec_factor`` 1.0 (515), ``suffix_decoding_min_token_prob`` 0.1 (520);
``SuffixDecodingProposer.propose`` passes no ``max_spec_offset`` (0.0) and no ``use_tree_spec`` (False)
(``vllm/v1/spec_decode/suffix_decoding.py``); there is no ``disable_by_batch_size`` field, and the
dataclass forbids extra keys (``vllm/config/utils.py``, ``extra="forbid"``)."""

import dataclasses
import random
from collections.abc import Hashable, Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from arctic_ref.runner.drafters import NoDrafter, ngram_draft_longest
from arctic_ref.runner.vllm_drafting import (
    MODELLED_KEYS,
    SPECULATIVE_CONFIG_KEYS,
    VllmDraftSemantics,
    VllmNgramDrafter,
    VllmSuffixDrafter,
    drafter_for,
    new_vllm_drafter,
    replay_drafts,
    vllm_ngram_draft,
)
from arctic_ref.spec.drafts import DraftRow


def _parse(config: dict[str, object], max_model_len: int = 100) -> VllmDraftSemantics:
    return VllmDraftSemantics.parse(config, max_model_len=max_model_len)


def _row(req: Hashable, tokens: Sequence[int], prompt: int, sampled: Sequence[int]) -> DraftRow:
    return DraftRow(req_id=req, token_ids=list(tokens), num_prompt_tokens=prompt, sampled=list(sampled))


def test_documented_defaults() -> None:
    """The module docstring's list, value by value."""
    ngram = _parse({"method": "ngram", "num_speculative_tokens": 3})
    assert (ngram.method, ngram.num_speculative_tokens, ngram.max_model_len) == ("ngram", 3, 100)
    assert (ngram.prompt_lookup_min, ngram.prompt_lookup_max) == (5, 5)
    suffix = _parse({"method": "suffix"})
    assert (suffix.method, suffix.num_speculative_tokens, suffix.suffix_decoding_max_tree_depth) == ("suffix", 24, 24)
    assert (suffix.suffix_decoding_max_cached_requests, suffix.suffix_decoding_max_spec_factor) == (10_000, 1.0)
    assert suffix.suffix_decoding_min_token_prob == 0.1
    assert _parse({"method": "suffix", "suffix_decoding_max_tree_depth": 7}).num_speculative_tokens == 7
    assert _parse({"method": "suffix", "num_speculative_tokens": 5}).num_speculative_tokens == 5
    drafter = new_vllm_drafter(suffix)
    assert isinstance(drafter, VllmSuffixDrafter)
    assert (drafter.cache.max_tree_depth, drafter.cache.max_cached_requests) == (24, 10_000)
    assert VllmDraftSemantics(method="suffix", num_speculative_tokens=24, max_model_len=100) == suffix
    assert VllmDraftSemantics(method="ngram", num_speculative_tokens=3, max_model_len=100) == ngram


@pytest.mark.parametrize(
    ("config", "window"),
    [
        ({"prompt_lookup_max": 4}, (4, 4)),
        ({"prompt_lookup_min": 2}, (2, 2)),
        ({"prompt_lookup_min": 2, "prompt_lookup_max": 6}, (2, 6)),
        ({"prompt-lookup-min": 3, "prompt_lookup_max": None}, (3, 3)),
        ({"prompt_lookup_min": 1, "prompt_lookup_max": 1, "max_model_len": 1}, (1, 1)),
    ],
    ids=["max-alone", "min-alone", "both", "dashes-and-none", "smallest"],
)
def test_the_ngram_window(config: dict[str, object], window: tuple[int, int]) -> None:
    semantics = _parse({"method": "ngram", "num_speculative_tokens": 2} | config)
    assert (semantics.prompt_lookup_min, semantics.prompt_lookup_max) == window


@pytest.mark.parametrize(
    "config",
    [
        {"model": "ngram", "num_speculative_tokens": 2},
        {"model": "[ngram]", "num_speculative_tokens": 2},
        {"method": "[ngram]", "num_speculative_tokens": 2},
        {"method": "ngram", "model": "anything", "num_speculative_tokens": 2, "max_model_len": 7},
    ],
    ids=["model-ngram", "model-bracketed", "method-bracketed", "ignored-keys"],
)
def test_how_vllm_names_ngram(config: dict[str, object]) -> None:
    """No method and model "ngram" or "[ngram]" → "ngram"; "[ngram]" as the method too; ``model`` and the
    dict's ``max_model_len`` (a draft model's) change nothing: M stays the target's."""
    assert _parse(config) == VllmDraftSemantics(method="ngram", num_speculative_tokens=2, max_model_len=100)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"method": "ngram", "num_speculative_tokens": 3, "disable_by_batch_size": 4}, r"\['disable_by_batch_size'\]"),
        ({"method": "suffix", "bogus": 1, "other": 2}, r"\['bogus', 'other'\] are not fields"),
        ({"method": "ngram", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": []}, "not modelled"),
        ({"method": "suffix", "enforce_eager": True}, r"\['enforce_eager'\] are vLLM's but not modelled"),
        ({"method": "eagle", "num_speculative_tokens": 3}, "method 'eagle'"),
        ({"model": "some/draft", "num_speculative_tokens": 3}, "method 'draft_model'"),
        ({"method": 3}, "method 3"),
        ({"method": "ngram", "model": 5, "num_speculative_tokens": 3}, r"\['model'\] = 5"),
        ({"method": "ngram"}, "needs num_speculative_tokens for method 'ngram'"),
        (
            {"method": "ngram", "num_speculative_tokens": 0},
            r"\['num_speculative_tokens'\] = 0 must be None or an integer >= 1",
        ),
        ({"method": "ngram", "num_speculative_tokens": True}, r"\['num_speculative_tokens'\] = True"),
        ({"method": "ngram", "num_speculative_tokens": "3"}, r"\['num_speculative_tokens'\] = '3'"),
        ({"method": "ngram", "num_speculative_tokens": 3.0}, r"\['num_speculative_tokens'\] = 3.0"),
        ({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 0}, r"\['prompt_lookup_min'\] = 0"),
        ({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 0}, r"\['prompt_lookup_max'\] = 0"),
        ({"method": "ngram", "num_speculative_tokens": 3, "max_model_len": 0}, r"\['max_model_len'\] = 0"),
        (
            {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 4, "prompt_lookup_max": 3},
            r"prompt_lookup_min\(4\) <= prompt_lookup_max\(3\)",
        ),
        (
            {"method": "suffix", "suffix_decoding_max_tree_depth": 0},
            r"suffix_decoding_max_tree_depth\(0\) must be >= 1",
        ),
        ({"method": "suffix", "suffix_decoding_max_tree_depth": 2.0}, r"\['suffix_decoding_max_tree_depth'\] = 2.0"),
        (
            {"method": "suffix", "suffix_decoding_max_cached_requests": -1},
            r"suffix_decoding_max_cached_requests\(-1\) >= 0",
        ),
        (
            {"method": "suffix", "suffix_decoding_max_spec_factor": -0.5},
            r"suffix_decoding_max_spec_factor\(-0.5\) must be >= 0",
        ),
        (
            {"method": "suffix", "suffix_decoding_max_spec_factor": "1"},
            r"\['suffix_decoding_max_spec_factor'\] = '1' must be a number",
        ),
        (
            {"method": "suffix", "suffix_decoding_min_token_prob": 1.5},
            r"suffix_decoding_min_token_prob\(1.5\) in \[0, 1\]",
        ),
        (
            {"method": "suffix", "suffix_decoding_min_token_prob": -0.1},
            r"suffix_decoding_min_token_prob\(-0.1\) in \[0, 1\]",
        ),
        (
            {"method": "suffix", "suffix_decoding_min_token_prob": False},
            r"\['suffix_decoding_min_token_prob'\] = False",
        ),
    ],
)
def test_bad_keys_and_values_are_named(config: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        drafter_for(config, max_model_len=100)


def test_the_other_methods_knobs_are_checked_only_for_their_type() -> None:
    """vLLM validates the suffix knobs' ranges only for "suffix" and the n-gram window's order only for
    "ngram" (pydantic's types and field bounds hold for both)."""
    ngram = _parse({"method": "ngram", "num_speculative_tokens": 2, "suffix_decoding_max_tree_depth": 0})
    assert ngram.suffix_decoding_max_tree_depth == 24
    ngram = _parse(
        {
            "method": "ngram",
            "num_speculative_tokens": 2,
            "suffix_decoding_min_token_prob": 3,
            "suffix_decoding_max_spec_factor": -1,
        }
    )
    assert ngram.suffix_decoding_min_token_prob == 0.1 and ngram.suffix_decoding_max_spec_factor == 1.0
    suffix = _parse({"method": "suffix", "prompt_lookup_min": 4, "prompt_lookup_max": 3})
    assert (suffix.prompt_lookup_min, suffix.prompt_lookup_max) == (5, 5)
    suffix = _parse(
        {
            "method": "suffix",
            "suffix_decoding_max_tree_depth": 1,
            "suffix_decoding_max_cached_requests": 0,
            "suffix_decoding_max_spec_factor": 0,
            "suffix_decoding_min_token_prob": 1,
        }
    )
    assert (suffix.suffix_decoding_max_tree_depth, suffix.suffix_decoding_max_cached_requests) == (1, 0)
    assert (suffix.suffix_decoding_max_spec_factor, suffix.suffix_decoding_min_token_prob) == (0.0, 1.0)
    assert _parse({"method": "suffix", "suffix_decoding_min_token_prob": 0}).suffix_decoding_min_token_prob == 0.0


@pytest.mark.parametrize(
    "changes",
    [{"num_speculative_tokens": 0}, {"max_model_len": 0}, {"prompt_lookup_min": 0, "prompt_lookup_max": 0}],
)
def test_the_value_checks_its_own_invariants(changes: dict[str, Any]) -> None:
    base: dict[str, Any] = {"method": "ngram", "num_speculative_tokens": 1, "max_model_len": 1}
    VllmDraftSemantics(**base)
    with pytest.raises(ValueError):
        VllmDraftSemantics(**base | changes)


def test_the_summary_names_the_semantics() -> None:
    assert _parse({"method": "ngram", "num_speculative_tokens": 3}).summary == (
        "vLLM 0.32 ngram: k=3, n in [5, 5], max_model_len=100"
    )
    assert _parse({"method": "suffix"}, 50).summary == (
        "vLLM 0.32 suffix: k=24, depth=24, cached=10000, factor=1.0, min_prob=0.1, max_model_len=50"
    )


def test_the_value_types_are_frozen_and_the_drafters_slotted() -> None:
    """STYLE.md §4 (``tests/test_value_types.py`` covers the runner's drafters module only)."""
    flags = {
        VllmDraftSemantics: (True, True),
        VllmNgramDrafter: (True, True),
        VllmSuffixDrafter: (False, True),  # owns its cache
    }
    for cls, (frozen, slots) in flags.items():
        assert (cls.__dataclass_params__.frozen, "__slots__" in cls.__dict__) == (frozen, slots)  # type: ignore[attr-defined]
    assert all(f.kw_only for f in dataclasses.fields(VllmDraftSemantics))


def test_no_config_drafts_nothing() -> None:
    drafter = drafter_for(None, max_model_len=10)
    assert isinstance(drafter, NoDrafter)
    assert isinstance(drafter_for({"method": "ngram", "num_speculative_tokens": 1}, max_model_len=10), VllmNgramDrafter)
    assert isinstance(drafter_for({"method": "suffix"}, max_model_len=10), VllmSuffixDrafter)


# --- n-gram -------------------------------------------------------------------------------------------


def test_ngram_examples() -> None:
    """k is cut to M − N, so a draft may end exactly at M; a partial prefill and a row at N ≥ M get none."""
    semantics = _parse({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2}, 9)
    drafter = drafter_for({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2}, max_model_len=9)
    rows = [
        _row("a", [1, 2, 3, 4, 1, 2, 3], 7, [3]),  # M − N = 2: [4, 1]
        _row("b", [1, 2, 3, 4, 1, 2], 6, [2]),  # M − N = 3: [3, 4, 1]
        _row("c", [1, 2, 3, 4, 1, 2], 6, []),  # partial prefill
        _row("d", [1, 2, 1, 2, 1, 2, 1, 2, 1], 8, [1]),  # N = M
        _row("e", [5, 1, 1, 1], 4, [1]),  # overlap allowed: [1, 1] at j = 1, then 1
        _row("f", [7], 1, [7]),  # shorter than min_n
    ]
    assert drafter.propose(rows) == [[4, 1], [3, 4, 1], [], [], [1], []]
    assert vllm_ngram_draft([1, 2, 1, 2, 1, 2, 1, 2], semantics) == [1]  # M − N = 1
    assert vllm_ngram_draft([1, 2, 1, 2, 1, 2, 1, 2, 1], semantics) == []  # M − N = 0


def test_ngram_takes_the_longest_match_then_the_earliest() -> None:
    semantics = VllmDraftSemantics(
        method="ngram", num_speculative_tokens=2, max_model_len=100, prompt_lookup_min=1, prompt_lookup_max=3
    )
    # [2, 3] occurs at 1 and 5; [1, 2, 3] (n = 3) only at 4 → the tokens after index 6
    assert vllm_ngram_draft([9, 2, 3, 8, 1, 2, 3, 7, 1, 2, 3], semantics) == [7, 1]
    # n = 1: the earliest 5 → [6, 5]
    assert vllm_ngram_draft([5, 6, 5, 7, 5], semantics) == [6, 5]


def _random_ngram_case(rng: random.Random) -> tuple[VllmDraftSemantics, list[int]]:
    """Semantics with k in [1, 8], M in [1, 60], a window within [1, 8]; 1 to 50 tokens over 2 to 51 ids."""
    low = rng.randint(1, 4)
    semantics = VllmDraftSemantics(
        method="ngram",
        num_speculative_tokens=rng.randint(1, 8),
        max_model_len=rng.randint(1, 60),
        prompt_lookup_min=low,
        prompt_lookup_max=low + rng.randint(0, 4),
    )
    return semantics, [rng.randint(0, rng.choice((1, 2, 4, 50))) for _ in range(rng.randint(1, 50))]


@pytest.mark.parametrize("seed", range(20))
def test_ngram_is_ngram_draft_longest_at_the_cut_k(seed: int) -> None:
    semantics, tokens = _random_ngram_case(random.Random(seed))
    k = min(semantics.num_speculative_tokens, semantics.max_model_len - len(tokens))
    expected = ngram_draft_longest(tokens, k, semantics.prompt_lookup_min, semantics.prompt_lookup_max)
    assert vllm_ngram_draft(tokens, semantics) == expected


# --- suffix decoding ------------------------------------------------------------------------------------


def _suffix(max_model_len: int, **knobs: object) -> VllmSuffixDrafter:
    drafter = drafter_for({"method": "suffix"} | knobs, max_model_len=max_model_len)
    assert isinstance(drafter, VllmSuffixDrafter)
    return drafter


def test_suffix_feeds_and_speculates_row_by_row() -> None:
    """A row sees, through the global tree, the tokens fed by the rows before it in this step, not those
    after it: "b" drafts [8] from "a"'s response only when "a" comes first."""
    for order, expected in (("ab", {"a": [], "b": [8]}), ("ba", {"a": [], "b": []})):
        drafter = VllmSuffixDrafter(VllmDraftSemantics(method="suffix", num_speculative_tokens=4, max_model_len=100))
        first = drafter.propose([_row("a", [1, 2, 3, 4, 5, 6], 5, [6]), _row("b", [1, 2, 3, 4, 5, 6], 5, [6])])
        assert first == [[], []]  # each prompt tree has 6 once, with nothing after it
        rows = {"a": _row("a", [1, 2, 3, 4, 5, 6, 7, 8], 5, [7, 8]), "b": _row("b", [1, 2, 3, 4, 5, 6, 7], 5, [7])}
        assert drafter.propose([rows[r] for r in order]) == [expected[r] for r in order]


def test_suffix_cache_upkeep() -> None:
    """A partial prefill is neither fed nor stopped; an absent request is stopped; a request at N ≥ M
    is not fed; a returning id loses its cached response; the global tree keeps the newest responses."""
    drafter = _suffix(10, suffix_decoding_max_cached_requests=2)
    cache = drafter.cache
    drafter.propose([_row("a", [1, 2, 3], 2, [3]), _row("p", [4, 5], 2, [])])
    assert list(cache.active_requests) == ["a"] and list(cache.cached_requests) == ["a"]
    drafter.propose([_row("p", [4, 5, 6], 2, [6])])  # "a" is absent: stopped, its response stays cached
    assert list(cache.active_requests) == ["p"] and list(cache.cached_requests) == ["a", "p"]
    drafter.propose([_row("p", [4, 5, 6], 2, []), _row("q", [9, 9, 9, 9, 9, 9, 9, 9, 9, 9], 9, [9])])
    assert list(cache.active_requests) == ["p"]  # "q" at N = M = 10 was never started
    drafter.propose([_row("a", [7, 8], 1, [8])])  # "a" returns: its old response is evicted, a new one cached
    assert list(cache.active_requests) == ["a"] and list(cache.cached_requests) == ["p", "a"]
    drafter.propose([_row("r", [1, 2], 1, [2])])  # a third response: FIFO evicts "p"
    assert list(cache.cached_requests) == ["a", "r"]


@pytest.mark.parametrize(("k", "m", "expected"), [(2, 100, [4, 5]), (24, 100, [4, 5, 6]), (24, 8, [4])])
def test_suffix_draft_length(k: int, m: int, expected: list[int]) -> None:
    """max_spec_tokens = min(k, M − N − 1); here N = 6 and the match [1, 2, 3] allows 3 tokens at factor 1."""
    drafter = VllmSuffixDrafter(VllmDraftSemantics(method="suffix", num_speculative_tokens=k, max_model_len=m))
    drafter.propose([_row("old", [0, 1, 2, 3, 4, 5, 6], 1, [1, 2, 3, 4, 5, 6])])
    assert drafter.propose([_row("new", [9, 9, 9, 1, 2, 3], 5, [3])]) == [expected]


@pytest.mark.parametrize(("depth", "expected"), [(2, [5]), (3, [5]), (4, [5, 6]), (5, [5, 6]), (24, [5, 6, 7, 8])])
def test_suffix_tree_depth_bounds_match_plus_draft(depth: int, expected: list[int]) -> None:
    """D bounds the match plus the draft (the pattern is the last D tokens): the match [1, 2, 3, 4] of
    "new" allows 4 tokens at factor 1, and D cuts both."""
    drafter = VllmSuffixDrafter(
        VllmDraftSemantics(
            method="suffix", num_speculative_tokens=24, max_model_len=100, suffix_decoding_max_tree_depth=depth
        )
    )
    drafter.propose([_row("old", [0, 1, 2, 3, 4, 5, 6, 7, 8], 1, [1, 2, 3, 4, 5, 6, 7, 8])])
    assert drafter.propose([_row("new", [9, 5, 1, 2, 3, 4], 5, [4])]) == [expected]


def test_replay_drafts_is_one_request_alone() -> None:
    semantics = VllmDraftSemantics(method="ngram", num_speculative_tokens=2, max_model_len=100, prompt_lookup_min=1)
    assert replay_drafts(semantics, [1, 2, 3], [[], [1], [2, 3]]) == [[], [2, 3], [1, 2]]
    suffix = VllmDraftSemantics(method="suffix", num_speculative_tokens=3, max_model_len=100)
    assert replay_drafts(suffix, [1, 2, 3, 1], [[], [2], [4]]) == [[], [3, 1], []]  # match [1, 2]: 2 tokens


def test_drafts_depend_on_the_knobs() -> None:
    """factor and min_token_prob reach ``speculate``: at factor 0.5 a 2-token match allows 1 token; at
    min_token_prob 1 a branch seen half the time is cut."""

    def run(**knobs: float) -> list[list[int]]:
        drafter = VllmSuffixDrafter(
            VllmDraftSemantics(method="suffix", num_speculative_tokens=8, max_model_len=100, **knobs)
        )  # type: ignore[arg-type]
        drafter.propose([_row("x", [0, 1, 2, 3, 4], 1, [1, 2, 3, 4])])
        drafter.propose([_row("y", [0, 1, 2, 3, 5], 1, [1, 2, 3, 5])])
        return drafter.propose([_row("z", [8, 1, 2], 2, [2])])

    assert run() == [[3, 4]]
    assert run(suffix_decoding_max_spec_factor=0.5) == [[3]]
    assert run(suffix_decoding_min_token_prob=1.0) == [[3]]


# --- against vLLM's own code (only where vLLM is importable) -----------------------------------------


@pytest.fixture(scope="module")
def vllm() -> Any:
    return pytest.importorskip("vllm.config")  # not "vllm": tests/vllm would be found as a namespace package


def test_the_keys_are_speculative_configs_fields(vllm: Any) -> None:
    from vllm.config import SpeculativeConfig

    assert {f.name for f in dataclasses.fields(SpeculativeConfig)} == SPECULATIVE_CONFIG_KEYS
    assert MODELLED_KEYS <= SPECULATIVE_CONFIG_KEYS
    fields = {f.name: f.default for f in dataclasses.fields(SpeculativeConfig)}
    suffix = _parse({"method": "suffix"})
    for name in ("suffix_decoding_max_tree_depth", "suffix_decoding_max_cached_requests"):
        assert fields[name] == getattr(suffix, name)
    for name in ("suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob"):
        assert fields[name] == getattr(suffix, name)
    for config in (
        {"method": "ngram", "num_speculative_tokens": 3},
        {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 4},
        {"method": "suffix"},
    ):
        theirs = SpeculativeConfig(**config)  # type: ignore[arg-type]
        ours = _parse(config)
        assert theirs.num_speculative_tokens == ours.num_speculative_tokens
        if ours.method == "ngram":
            assert (theirs.prompt_lookup_min, theirs.prompt_lookup_max) == (
                ours.prompt_lookup_min,
                ours.prompt_lookup_max,
            )


@pytest.mark.parametrize("seed", range(40))
def test_ngram_equals_vllms_numba_function(vllm: Any, seed: int) -> None:
    import numpy as np
    from vllm.v1.spec_decode.ngram_proposer import _find_longest_matched_ngram_and_propose_tokens as theirs

    rng = random.Random(seed)
    for _ in range(50):
        semantics, tokens = _random_ngram_case(rng)
        expected = theirs(
            np.array(tokens, dtype=np.int32),
            semantics.prompt_lookup_min,
            semantics.prompt_lookup_max,
            semantics.max_model_len,
            semantics.num_speculative_tokens,
        ).tolist()
        assert vllm_ngram_draft(tokens, semantics) == expected, (tokens, semantics)


class _Workload:
    """Random steps of a few requests: some absent, some partial prefills, some at N = M, ids that come
    back with a new prompt. ``step()`` gives (req_id, tokens, num_prompt, sampled) per row."""

    def __init__(self, seed: int, max_model_len: int) -> None:
        self.rng = random.Random(seed)
        self.m = max_model_len
        self.live: dict[str, tuple[list[int], int]] = {}
        self.vocab = self.rng.choice((3, 5, 20))

    def step(self) -> list[tuple[str, list[int], int, list[int]]]:
        rng = self.rng
        for req in [f"r{i}" for i in range(6)]:
            if req not in self.live and rng.random() < 0.3:
                prompt = [rng.randrange(self.vocab) for _ in range(rng.randint(1, self.m // 2))]
                self.live[req] = (prompt, len(prompt))
        rows = []
        for req, (tokens, prompt) in list(self.live.items()):
            if rng.random() < 0.2:
                continue  # absent this step
            if len(tokens) >= self.m or rng.random() < 0.05:
                del self.live[req]  # finished; the id may come back
                continue
            if rng.random() < 0.15:
                rows.append((req, list(tokens), prompt, []))  # a partial prefill
                continue
            sampled = [rng.randrange(self.vocab) for _ in range(rng.randint(1, 3))][: self.m - len(tokens)]
            tokens.extend(sampled)
            rows.append((req, list(tokens), prompt, sampled))
        rng.shuffle(rows)
        return rows


@pytest.mark.parametrize("seed", range(12))
def test_suffix_equals_vllms_proposer(vllm: Any, seed: int) -> None:
    """``SuffixDecodingProposer`` (with arctic_inference's cache) and ours, step by step on one workload."""
    import numpy as np
    from vllm.config import SpeculativeConfig
    from vllm.v1.spec_decode.suffix_decoding import SuffixDecodingProposer

    rng = random.Random(seed)
    m = rng.choice((12, 30, 60))
    config: dict[str, object] = {
        "method": "suffix",
        "num_speculative_tokens": rng.choice((2, 5, 24)),
        "suffix_decoding_max_tree_depth": rng.choice((3, 8, 24)),
        "suffix_decoding_max_cached_requests": rng.choice((0, 1, 3, 10_000)),
        "suffix_decoding_max_spec_factor": rng.choice((0.5, 1.0, 2.0)),
        "suffix_decoding_min_token_prob": rng.choice((0.0, 0.1, 0.5)),
    }
    theirs = SuffixDecodingProposer(
        SimpleNamespace(speculative_config=SpeculativeConfig(**config), model_config=SimpleNamespace(max_model_len=m))  # type: ignore[arg-type]
    )
    ours = drafter_for(config, max_model_len=m)
    workload = _Workload(seed, m)
    for _ in range(40):
        rows = workload.step()
        token_ids = np.zeros((max(len(rows), 1), m), dtype=np.int32)
        for i, (_, tokens, _, _) in enumerate(rows):
            token_ids[i, : len(tokens)] = tokens
        batch = SimpleNamespace(
            req_ids=[r[0] for r in rows],
            req_id_to_index={r[0]: i for i, r in enumerate(rows)},
            num_tokens_no_spec=np.array([len(r[1]) for r in rows], dtype=np.int32),
            num_prompt_tokens=np.array([r[2] for r in rows], dtype=np.int32),
            token_ids_cpu=token_ids,
        )
        expected = theirs.propose(theirs.num_speculative_tokens, batch, [r[3] for r in rows])
        got = ours.propose([_row(req, tokens, prompt, sampled) for req, tokens, prompt, sampled in rows])
        assert got == [list(d) for d in expected], (config, rows)
        assert sorted(ours.cache.active_requests) == sorted(theirs.suffix_cache.active_requests)  # type: ignore[attr-defined]


@pytest.mark.parametrize("seed", range(6))
def test_ngram_equals_vllms_proposer(vllm: Any, seed: int) -> None:
    """``NgramProposer.propose`` over whole batches (row selection included) and ours."""
    import numpy as np
    from vllm.v1.spec_decode.ngram_proposer import NgramProposer

    rng = random.Random(seed)
    m = rng.choice((12, 30, 60))
    low = rng.randint(1, 3)
    config: dict[str, object] = {
        "method": "ngram",
        "num_speculative_tokens": rng.randint(1, 6),
        "prompt_lookup_min": low,
        "prompt_lookup_max": low + rng.randint(0, 3),
    }
    semantics = _parse(config, m)
    theirs = NgramProposer(
        SimpleNamespace(  # type: ignore[arg-type]
            speculative_config=SimpleNamespace(
                prompt_lookup_min=semantics.prompt_lookup_min,
                prompt_lookup_max=semantics.prompt_lookup_max,
                num_speculative_tokens=semantics.num_speculative_tokens,
            ),
            model_config=SimpleNamespace(max_model_len=m),
            scheduler_config=SimpleNamespace(max_num_seqs=16),
            parallel_config=SimpleNamespace(tensor_parallel_size=1),
        )
    )
    ours = drafter_for(config, max_model_len=m)
    workload = _Workload(seed, m)
    for _ in range(30):
        rows = workload.step()
        if not rows:
            continue
        token_ids = np.zeros((len(rows), m), dtype=np.int32)
        for i, (_, tokens, _, _) in enumerate(rows):
            token_ids[i, : len(tokens)] = tokens
        lengths = np.array([len(r[1]) for r in rows], dtype=np.int32)
        expected = theirs.propose(semantics.num_speculative_tokens, [r[3] for r in rows], lengths, token_ids)
        got = ours.propose([_row(req, tokens, prompt, sampled) for req, tokens, prompt, sampled in rows])
        assert got == expected, (config, rows)
