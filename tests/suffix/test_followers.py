"""Followers (``SuffixTree.extend``): boundary moves owed over a run of agreeing tokens and settled when
something else reads the nodes. Periodic text is where the settling orders matter — a follower is read
by the root step and by a shorter open suffix stepping into it, and a longer one's node may merge into
its child meanwhile — so these cases are periodic, with every depth and every way of cutting the run
into calls, against the brute-force oracle (counts *and* sibling order) after every call."""

import itertools

import pytest

from arctic_ref.suffix import SuffixTree
from arctic_ref.suffix.tree import _common_prefix
from arctic_ref.testing.suffix_tree.naive_oracle import NaiveSuffixIndex

PATTERNS = ([1, 0], [1, 0, 0], [1, 1, 0], [2, 0, 1], [0, 1, 0, 2], [1, 0, 1, 1, 0])
DEPTHS = (-1, 2, 3, 4, 5, 6, 8)


def _runs(pattern: list[int], repeats: int, noise_at: int | None) -> list[int]:
    tokens = pattern * repeats
    if noise_at is not None:
        tokens[noise_at % len(tokens)] = 3
    return tokens


def _cuts(tokens: list[int], size: int) -> list[list[int]]:
    return [tokens[i : i + size] for i in range(0, len(tokens), size)]


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: "".join(map(str, p)))
def test_periodic_runs_match_the_oracle_after_every_call(depth: int, pattern: list[int]) -> None:
    for repeats, noise_at, size in itertools.product((3, 5), (None, 4, 9), (1, 3, 7, 100)):
        tokens = _runs(pattern, repeats, noise_at)
        tree, oracle = SuffixTree(depth), NaiveSuffixIndex(depth)
        # Two sequences: the second copies the first, so followers follow another sequence's nodes too.
        for seq_id, chunk in [(0, c) for c in _cuts(tokens, size)] + [(1, c) for c in _cuts(tokens[2:], size)]:
            tree.extend(seq_id, chunk)
            oracle.extend(seq_id, chunk)
            where = f"D = {depth}, tokens {tokens}, calls of {size}, after extend({seq_id}, {chunk})"
            assert tree.check_integrity() == "", where
            assert tree.dump() == oracle.dump(), where


def test_a_follower_keeps_its_owed_moves_when_its_child_merges_into_a_grandchild() -> None:
    """D = 5 over 1 0 1 0 1 0 1 in one call: at the last token the node of the open suffix [1 0 1 0]
    merges with its only child while its parent, the node of a shorter open suffix, is a follower that
    owes it a boundary move. The moves are owed to the merged node, whose tokens begin the same way.
    The smallest such case found."""
    tree, oracle = SuffixTree(5), NaiveSuffixIndex(5)
    tree.extend(0, [1, 0, 1, 0, 1, 0, 1])
    oracle.extend(0, [1, 0, 1, 0, 1, 0, 1])
    assert tree.check_integrity() == ""
    assert tree.dump() == oracle.dump()


@pytest.mark.parametrize(
    ("a", "i", "b", "limit", "expected"),
    [
        ([1, 2, 3], 0, [1, 2, 3], 3, 3),
        ([1, 2, 3], 0, [1, 2, 4], 3, 2),
        ([5, 1, 2], 1, [1, 9], 1, 1),
        ([1], 0, [2], 1, 0),
        ([1, 2], 0, [1, 2], 0, 0),
        ([1, 2], 0, [1, 2], -1, 0),
    ],
)
def test_common_prefix(a: list[int], i: int, b: list[int], limit: int, expected: int) -> None:
    assert _common_prefix(a, i, b, 0, limit) == expected
