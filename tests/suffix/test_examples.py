"""Worked examples of docs/suffix-decoding.md, each checked on ours and the naive oracle, and on
upstream's C++ tree where the example is within upstream's contract."""

import inspect
import sys
from collections.abc import Callable

import numpy as np
import pytest

from arctic_ref.suffix import Draft, SuffixDecodingCache, SuffixInputError, SuffixTree
from arctic_ref.suffix.cache import SuffixDecodingDraft
from arctic_ref.suffix.drafting import accumulate, path_draft, path_score
from arctic_ref.suffix.node import Node
from arctic_ref.suffix.upstream import UPSTREAM_AVAILABLE, UpstreamSuffixDecodingCache, UpstreamSuffixTree
from arctic_ref.suffix.validate import f32
from arctic_ref.testing.suffix_cache.cache_examples import CACHE_EXAMPLES
from arctic_ref.testing.suffix_tree.naive_oracle import NaiveSuffixIndex
from arctic_ref.testing.suffix_tree.tree_examples import TREE_EXAMPLES
from arctic_ref.testing.suffix_tree.tree_machine import SuffixIndex

TREES: list[Callable[[int], SuffixIndex]] = [SuffixTree, NaiveSuffixIndex]
if UPSTREAM_AVAILABLE:
    TREES.append(UpstreamSuffixTree)
TREE_IDS = ["arctic_ref", "naive", "upstream"][: len(TREES)]


@pytest.fixture(params=TREES, ids=TREE_IDS)
def make_tree(request: pytest.FixtureRequest) -> Callable[[int], SuffixIndex]:
    factory: Callable[[int], SuffixIndex] = request.param
    return factory


def path(tree: SuffixIndex, context: list[int], factor: float = 1.0, min_prob: float = 0.1, tokens: int = 32) -> Draft:
    return tree.speculate(context, tokens, factor, 0.0, min_prob, False)


@pytest.mark.parametrize("example", TREE_EXAMPLES, ids=lambda e: e.__name__)
def test_worked_tree_examples_of_the_kit(make_tree: Callable[[int], SuffixIndex], example: Callable[..., str]) -> None:
    """§1.3 tie order, §3.4/E7 tree mode, E2, §3.2/E6 budget fallback, E5: the kit's worked examples
    (``arctic_ref.testing.suffix_tree.tree_examples``, also run on a user's tree by the plugin)."""
    assert example(make_tree) == ""


@pytest.mark.parametrize("example", CACHE_EXAMPLES, ids=lambda e: e.__name__)
def test_worked_cache_examples_of_the_kit(example: Callable[..., str]) -> None:
    assert example(SuffixDecodingCache) == ""


def test_tie_order_children_dump() -> None:
    ours, naive = SuffixTree(8), NaiveSuffixIndex(8)
    for tree in (ours, naive):
        tree.extend(0, [5, 6])
        tree.extend(1, [5, 7])
        tree.extend(2, [5, 7])
        tree.remove(2)
        assert tree.children([5]) == [(7, 1), (6, 1)]
        assert tree.count([5]) == 2


def test_probability_rounding_in_tree_mode_is_two_step() -> None:
    """§3.4: tree mode computes (p·c)/n, path mode p·(c/n); both in float32."""
    tree = SuffixTree(16)
    tree.extend(0, [1, 2] * 3 + [1, 3])
    draft = tree.speculate([9, 1], 8, 8.0, 0.0, 0.0, True)
    for prob in draft.probs:
        assert float(np.float32(prob)) == prob


def test_depth_zero_and_negative() -> None:
    """E10/E11: D = 0 keeps only the token count; D < 0 is unbounded."""
    flat = SuffixTree(0)
    flat.extend(0, [1, 2, 3])
    assert flat.count([]) == 3 and flat.num_nodes() == 0 and flat.check_integrity() == ""
    assert path(flat, [1, 2]) == Draft()
    deep = SuffixTree(-1)
    deep.extend(0, list(range(100)))
    assert deep.count(list(range(100))) == 1 and deep.check_integrity() == ""
    assert path(deep, [0, 1, 2], tokens=5).token_ids == [3, 4]  # match 2, budget = 2·factor


def test_extend_empty_and_remove_unknown_are_noops() -> None:
    """E12."""
    tree = SuffixTree(4)
    tree.extend(3, [])
    tree.remove(99)
    assert tree.num_seqs() == 0 and tree.dump() == [((), 0)]


def test_accepted_token_kinds() -> None:
    """E13: negative seq ids, extreme tokens, numpy integers, bool and __index__ objects."""

    class Index:
        def __index__(self) -> int:
            return 4

    tree = SuffixTree(4)
    tree.extend(-3, [-(2**31) + 2, 2**31 - 1, np.int64(7), True, Index()])  # type: ignore[list-item]
    tree.extend(2**31 - 1, np.array([1, 2], dtype=np.uint8)[::-1])
    tree.extend(5, np.array([], dtype=np.int64))  # nothing to append: no sequence 5
    assert tree.num_seqs() == 2 and tree.check_integrity() == ""
    assert tree.children([2**31 - 1]) == [(7, 1)]


@pytest.mark.parametrize(
    "bad",
    [
        [-(2**31)],
        [-(2**31) + 1],
        [2**31],
        [1.5],
        ["x"],
        [None],
        "ab",
        b"ab",
        5,
        np.array([[1]]),
        np.array([1.0]),
        np.array([4, -(2**31)], dtype=np.int32),
        np.array([4, 2**31], dtype=np.int64),
    ],
    ids=[
        "min",
        "min+1",
        "2^31",
        "float",
        "str-el",
        "None",
        "str",
        "bytes",
        "int",
        "2d",
        "float-array",
        "min-in-array",
        "2^31-in-array",
    ],
)
def test_bad_tokens_change_nothing(bad: object) -> None:
    """§2.2 / X2 / X5: rejected before any change, with a SuffixInputError."""
    tree = SuffixTree(4)
    tree.extend(0, [1, 2, 3])
    before = tree.dump()
    with pytest.raises(SuffixInputError):
        tree.extend(0, [4, *bad] if isinstance(bad, list) else bad)  # type: ignore[arg-type]
    with pytest.raises(SuffixInputError):
        tree.speculate([1, *bad] if isinstance(bad, list) else bad, 4, 1.0, 0.0, 0.1, False)  # type: ignore[arg-type]
    assert tree.dump() == before and tree.check_integrity() == ""


def test_error_messages_name_index_and_value() -> None:
    tree = SuffixTree(4)
    with pytest.raises(SuffixInputError, match=r"tokens\[3\] = -2147483648 is reserved"):
        tree.extend(0, [1, 2, 3, -(2**31)])
    with pytest.raises(SuffixInputError, match=r"seq_id = -2147483647 is reserved"):
        tree.extend(-(2**31) + 1, [1])
    tree.extend(-(2**31) + 2, [-(2**31) + 2, 2**31 - 1])  # the smallest id that is not reserved, and the largest
    assert tree.count([-(2**31) + 2, 2**31 - 1]) == 1 and tree.num_seqs() == 1
    tree.remove(-(2**31) + 2)
    assert tree.num_seqs() == 0
    with pytest.raises(SuffixInputError, match=r"max_depth = 2147483648 is outside int32"):
        SuffixTree(2**31)
    assert SuffixDecodingCache(64, 2**31 - 1).max_cached_requests == 2**31 - 1  # the largest int32 is allowed
    with pytest.raises(ValueError, match=r"max_cached_requests must be at most 2\^31"):
        SuffixDecodingCache(64, 2**31)
    with pytest.raises(TypeError, match="use_tree_spec"):
        tree.speculate([1, 2], 4, 1.0, 0.0, 0.1, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="min_token_prob"):
        tree.speculate([1, 2], 4, 1.0, 0.0, "0.1", False)  # type: ignore[arg-type]


class TestCache:
    def test_restart_of_cached_request_moves_it_to_fifo_end(self) -> None:
        """E15: restarting a cached, inactive id evicts the old response and re-allocates."""
        cache = SuffixDecodingCache(8, 2)
        for req in ("a", "b"):
            cache.start_request(req, [1, 2])
            cache.add_active_response(req, [3, 4])
            cache.stop_request(req)
        cache.start_request("a", [1])
        assert list(cache.cached_requests) == ["b", "a"]
        assert cache._req_to_seq_id == {"b": 1, "a": 2}

    def test_fifo_can_evict_an_active_request(self) -> None:
        """E17: an active request whose response was evicted extends its local tree only."""
        cache = SuffixDecodingCache(8, 1)
        cache.start_request("a", [1])
        cache.start_request("b", [2])
        assert list(cache.cached_requests) == ["b"]
        cache.add_active_response("a", [5, 6])
        assert cache._global_tree.num_seqs() == 0
        assert cache.speculate("a", [1, 5], 4).token_ids == [6]

    def test_zero_cached_requests_never_writes_global(self) -> None:
        """E16."""
        cache = SuffixDecodingCache(8, 0)
        cache.start_request("a", [1, 2])
        cache.add_active_response("a", [3])
        assert not cache.cached_requests and cache._global_tree.num_seqs() == 0

    def test_max_spec_tokens_zero_means_zero(self) -> None:
        """E18: the code, not upstream's docstring."""
        cache = SuffixDecodingCache(8)
        cache.start_request("a", [1, 2, 3, 1, 2])
        assert cache.speculate("a", [1, 2], 0).token_ids == []

    def test_max_spec_tokens_none_means_depth(self) -> None:
        """X1: None is the default and means max_tree_depth (upstream raises AttributeError)."""
        cache = SuffixDecodingCache(8)
        cache.start_request("a", list(range(10)) * 2)
        context = [0, 1, 2, 3, 4, 5]
        assert cache.speculate("a", context, None, 10.0).token_ids == [6, 7, 8, 9, 0, 1, 2]  # match 1, depth 8
        assert cache.speculate("a", context, None, 10.0) == cache.speculate("a", context, 8, 10.0)
        assert cache.speculate("a", context) == cache.speculate("a", context, 8)

    def test_seq_id_wraps_and_collides(self) -> None:
        """§4.3: an id held by an inactive cached request is taken and that request evicted."""
        cache = SuffixDecodingCache(8)
        cache.start_request("old", [1])
        cache.stop_request("old")
        cache._next_seq_id = 2**31 - 1
        cache.start_request("x", [1])
        cache.start_request("y", [1])
        assert cache._req_to_seq_id == {"x": 2**31 - 1, "y": 0}
        assert list(cache.cached_requests) == ["x", "y"]

    def test_seq_id_wrap_skips_an_id_held_by_an_active_request(self) -> None:
        """§4.3: ids of active requests are never reused; the next free id is taken instead."""
        cache = SuffixDecodingCache(8)
        cache.start_request("active", [1])  # id 0, stays active
        cache._next_seq_id = 2**31 - 1
        cache.start_request("x", [1])
        cache.start_request("y", [1])
        assert cache._req_to_seq_id == {"active": 0, "x": 2**31 - 1, "y": 1}
        cache.add_active_response("active", [5, 6])
        assert cache._global_tree.count([5, 6]) == 1

    @pytest.mark.parametrize(
        ("array", "message"),
        [
            (np.zeros((1, 2), dtype=np.int32), "ndim=2"),
            (np.zeros(2, dtype=np.int64), "dtype=int64"),
            (np.zeros(4, dtype=np.int32)[::2], "contiguous"),
        ],
        ids=["ndim", "dtype", "strided"],
    )
    def test_ndarray_checks(self, array: np.ndarray, message: str) -> None:
        cache = SuffixDecodingCache(8)
        with pytest.raises(ValueError, match=message):
            cache.start_request("a", array)
        assert not cache.active_requests

    def test_failed_start_leaves_nothing(self) -> None:
        """X5: upstream leaves the request active with an empty local tree; we leave nothing."""
        cache = SuffixDecodingCache(8)
        with pytest.raises(SuffixInputError):
            cache.start_request("a", [1, 2**31])
        assert not cache.active_requests and not cache.cached_requests and cache._next_seq_id == 0

    def test_errors(self) -> None:
        cache = SuffixDecodingCache(8)
        with pytest.raises(ValueError, match="max_cached_requests must be at most 2"):
            SuffixDecodingCache(8, 2**31)
        with pytest.raises(ValueError, match="'a' is not active"):
            cache.stop_request("a")
        with pytest.raises(ValueError, match="'a' is not cached"):
            cache.evict_cached_response("a")
        cache.start_request("a", [])
        with pytest.raises(ValueError, match="'a' is already active"):
            cache.start_request("a", [])
        with pytest.raises(TypeError):
            cache.start_request(["unhashable"], [1])  # type: ignore[arg-type]
        assert list(cache.active_requests) == ["a"]


DEFAULTS = {  # upstream 0.3.0's defaults, which a drop-in keeps
    "__init__": {"max_tree_depth": 64, "max_cached_requests": -1},
    "speculate": {
        "max_spec_tokens": None,
        "max_spec_factor": 1.0,
        "max_spec_offset": 0.0,
        "min_token_prob": 0.1,
        "use_tree_spec": False,
    },
}


@pytest.mark.parametrize("method", list(DEFAULTS))
def test_cache_defaults_are_upstreams(method: str) -> None:
    """The keyword defaults of the cache's API, as values and as upstream declares them."""
    ours = {
        n: p.default
        for n, p in inspect.signature(getattr(SuffixDecodingCache, method)).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    assert ours == DEFAULTS[method]
    if UpstreamSuffixDecodingCache is not None:
        theirs = inspect.signature(getattr(UpstreamSuffixDecodingCache, method)).parameters
        assert ours == {n: theirs[n].default for n in ours}
    cache = SuffixDecodingCache()
    assert (cache.max_tree_depth, cache.max_cached_requests) == (64, -1)


def test_accumulate_adds_one_at_a_time_past_two_to_the_24() -> None:
    """Above 2**24 float32 cannot hold every integer: 2**24 − 1 plus three ones is 2**24 (the second and
    third additions round back to even), not 2**24 + 2 as an exact sum would give."""
    assert accumulate(float(2**24 - 1), 1.0, 3) == float(2**24)
    assert accumulate(float(2**24 - 4), 1.0, 3) == float(2**24 - 1)
    assert accumulate(0.0, 0.1, 3) == f32(f32(f32(0.1) + f32(0.1)) + f32(0.1))


def test_path_score_rounds_counts_past_two_to_the_24_as_float32_first() -> None:
    """Counts ≥ 2**24 are rounded to float32 before the division, as upstream's C++ does: 3 / (2**24 + 1)
    becomes 3 / 2**24. Hand-built nodes (no tree holds 16.7M occurrences in a unit test): the scoring
    loop must agree with the draft builder, which always rounds first."""
    seq = [5, 6, 7]
    node = Node(2**24 + 1, None, seq, 1, 1, 1)
    child = Node(3, node, seq, 2, 1, 2)
    node.add_child(6, child)
    draft = path_draft(node, 1, 4, 0.0)
    assert draft.probs == [f32(3 / 2**24)]
    assert path_score(node, 1, 4, 0.0) == draft.score == f32(3 / 2**24)


def test_path_score_stalls_like_float32_when_certain_runs_cross_two_to_the_24() -> None:
    """A run of certain tokens that carries the score past 2**24 is added one float32 step at a time:
    2**24 − 2 certain tokens, then a child of the same count with 5 more, scores 2**24 (the sum
    stalls there), not the exact 2**24 + 3. Hand-built nodes: ``path_score`` reads only lengths and
    counts, so the 16.7M-token run needs no token list."""
    top = Node(2, None, [], 2**24 - 2, 2**24 - 2, 2**24 - 2)
    child = Node(2, top, [], 2**24 + 3, 5, 2**24 + 3)
    top.add_child(0, child)
    assert path_score(top, 0, 2**24 + 3, 0.0) == float(2**24)
    assert path_score(top, 0, 2**24 - 2, 0.0) == float(2**24 - 2)  # the exact sums below 2**24


def test_path_score_ratio_of_two_counts_past_two_to_the_24() -> None:
    """Both counts past 2**24 and close together: (2**24 + 1) / (2**24 + 3) is 1 − 2**-23 in float32
    when divided exactly, but 1 − 2**-22 after each count is rounded to float32 first (2**24 and
    2**24 + 4), which is what upstream computes. Counts of exactly 2**24 are float32 already."""
    seq = [5, 6, 7]
    node = Node(2**24 + 3, None, seq, 1, 1, 1)
    child = Node(2**24 + 1, node, seq, 2, 1, 2)
    node.add_child(6, child)
    rounded_first = f32(f32(float(2**24 + 1)) / f32(float(2**24 + 3)))
    assert rounded_first == 1 - 2**-22 and f32((2**24 + 1) / (2**24 + 3)) == 1 - 2**-23
    assert path_draft(node, 1, 4, 0.0).probs == [rounded_first]
    assert path_score(node, 1, 4, 0.0) == rounded_first


def test_a_min_token_prob_of_one_still_drafts_certain_tokens() -> None:
    """min_token_prob = 1 keeps every token of probability 1. D = 4 and factor 4: the match [3] can go
    three tokens deep (score 3), the longer match [2, 3] only two, so the shorter match wins."""
    tree = SuffixTree(4)
    tree.extend(0, [1, 2, 3, 4, 5, 6])
    draft = tree.speculate([1, 2, 3], 8, 4.0, 0.0, 1.0, False)
    assert (draft.token_ids, draft.probs, draft.score, draft.match_len) == ([4, 5, 6], [1.0, 1.0, 1.0], 3.0, 1)
    oracle = NaiveSuffixIndex(4)
    oracle.extend(0, [1, 2, 3, 4, 5, 6])
    assert oracle.speculate([1, 2, 3], 8, 4.0, 0.0, 1.0, False) == draft


def test_estimate_memory_counts_every_part_once() -> None:
    """The tree object, its two maps and open-suffix lists, every node with its two containers (a node that
    never had a child shares two read-only empties, counted nowhere), and every token list a node or a
    live sequence refers to, each list once."""
    tree = SuffixTree(8)
    tree.extend(0, [1, 2, 3, 1, 2, 4])
    tree.extend(1, [1, 2, 3, 5])
    tree.extend(2, [7, 8, 9])
    tree.extend(3, [7, 8])
    tree.remove(0)
    tree.remove(2)  # [7 8] keeps its own, now empty, containers
    expected = sys.getsizeof(tree) + sys.getsizeof(tree._seqs) + sys.getsizeof(tree._open)
    expected += sum(sys.getsizeof(walkers) for walkers in tree._open.values())
    lists: dict[int, list[int]] = {id(seq): seq for seq in tree._seqs.values()}
    stack = [tree._root]
    kinds = set()
    while stack:
        node = stack.pop()
        expected += sys.getsizeof(node)
        kinds.add(type(node.order).__name__ + ("" if node.order else " (empty)"))
        if not isinstance(node.order, tuple):  # its own containers
            expected += sys.getsizeof(node.children) + sys.getsizeof(node.order)
        lists[id(node.ref)] = node.ref
        stack.extend(node.order)
    expected += sum(sys.getsizeof(tokens) + sum(sys.getsizeof(t) for t in tokens) for tokens in lists.values())
    assert len(lists) >= 2  # at least sequence 1's list and the root's empty one
    assert kinds == {"list", "tuple (empty)", "list (empty)"}  # a leaf that lost its children to remove() too
    assert tree.estimate_memory() == expected


def test_an_empty_draft_is_empty_in_every_field() -> None:
    """A draft built with no arguments, ours or native, says "no match": no tokens, score 0, match 0."""
    empty = SuffixDecodingDraft()
    assert (empty.token_ids, empty.parents, empty.probs, empty.score, empty.match_len) == ([], [], [], 0.0, 0)
    assert SuffixDecodingDraft.from_native(Draft()) == empty
