"""``check_integrity`` can fail: each invariant of docs/suffix-decoding.md §6.1, broken on its own in a valid
tree, is reported with its name and numbers (the state machines only ever see it return "")."""

import random
import re
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arctic_ref.suffix import SuffixTree
from arctic_ref.suffix.integrity import _check_counts
from arctic_ref.suffix.node import Node
from arctic_ref.suffix.tree import _common_suffix

Corruption = Callable[[SuffixTree], None]


def valid_tree() -> SuffixTree:
    """D = 4 over 1 2 1 3. Nodes: [1] (count 2) with leaves [1 2 1 3] and [1 3]; leaves [2 1 3] and [3]."""
    tree = SuffixTree(4)
    tree.extend(0, [1, 2, 1, 3])
    assert tree.check_integrity() == "" and tree.num_nodes() == 5
    return tree


def _root(tree: SuffixTree) -> Node:
    return tree._root


def _child(node: Node, token: int) -> Node:
    return node.children[token]


def _set_count(token: int, count: int) -> Corruption:
    def corrupt(tree: SuffixTree) -> None:
        _child(_root(tree), token).count = count

    return corrupt


def _rekey(tree: SuffixTree) -> None:
    children = _root(tree).children
    children[7] = children.pop(3)


def _unlink(tree: SuffixTree) -> None:
    _child(_root(tree), 3).parent = _child(_root(tree), 1)


def _deepen(tree: SuffixTree) -> None:
    _child(_root(tree), 3).depth = 2


def _lower_max_depth(tree: SuffixTree) -> None:
    tree._max_depth = 2


def _drop_leaf(tree: SuffixTree) -> None:
    root = _root(tree)
    leaf = root.children.pop(3)
    root.order.remove(leaf)
    tree._num_nodes -= 1


def _cut_after_first_token(tree: SuffixTree, node: Node) -> None:
    """Split ``node``'s first token into a head of the same count (an unmerged chain)."""
    parent = node.parent
    assert parent is not None
    head = Node(node.count, parent, node.ref, node.end - node.length + 1, 1, parent.depth + 1)
    node.length -= 1
    node.parent = head
    head.add_child(node.first_token(), node)
    parent.children[head.first_token()] = head
    parent.order[parent.order.index(node)] = head
    tree._num_nodes += 1


def _split_unmerged(tree: SuffixTree) -> None:
    """Cut the leaf [2 1 3] after its first token: a node [2] with one child of its own count."""
    _cut_after_first_token(tree, _child(_root(tree), 2))


def _before_its_list(tree: SuffixTree) -> None:
    _child(_root(tree), 3).depth = 5  # its string would start before the list does


def _too_many_nodes(tree: SuffixTree) -> None:
    """Cut the leaves [2 1 3] and [1 | 2 1 3] into one-token nodes: 9 nodes for 4 live tokens (the
    chains are unmerged too, but the bound is checked first)."""
    for leaf in (_child(_root(tree), 2), _child(_child(_root(tree), 1), 2)):
        while leaf.length > 1:
            _cut_after_first_token(tree, leaf)


def _lower_max_depth_to_zero(tree: SuffixTree) -> None:
    tree._max_depth = 0


def _phantom_leaf(tree: SuffixTree) -> None:
    """A leaf [9] of count 1 that no sequence holds (its own one-token list, so it reads fine)."""
    root = _root(tree)
    root.add_child(9, Node(1, root, [9], 1, 1, 1))
    tree._num_nodes += 1


def _past_its_list(tree: SuffixTree) -> None:
    _child(_root(tree), 3).end = 10


def _drop_open_suffix(tree: SuffixTree) -> None:
    tree._open[0] = tree._open[0][1:]


def _swap_open_suffixes(tree: SuffixTree) -> None:
    walkers = tree._open[0]
    walkers[0], walkers[1] = walkers[1], walkers[0]


def _stray_open_list(tree: SuffixTree) -> None:
    tree._open[5] = []


def _empty_sequence(tree: SuffixTree) -> None:
    tree._seqs[9] = []
    tree._open[9] = []


def _more_root_tokens(tree: SuffixTree) -> None:
    _root(tree).count += 1


def _owed_moves(tree: SuffixTree) -> None:
    """A follower left unsettled: node [1] still owes two boundary moves."""
    node = _child(_root(tree), 1)
    node.since, node.until = 4, 6


def _more_nodes_counted(tree: SuffixTree) -> None:
    tree._num_nodes += 1


CORRUPTIONS: dict[str, tuple[Corruption, str]] = {
    "root-count": (_more_root_tokens, r"^C1: count\(root\) = 5 but the live sequences hold 4 tokens$"),
    "empty-sequence": (_empty_sequence, r"^C1: live sequence 9 is empty$"),
    "num-nodes": (_more_nodes_counted, r"^C5: num_nodes\(\) = 6 but the tree has 5 non-root nodes$"),
    "order": (_set_count(3, 2), r"^C4: children of \[\] have counts \[2, 1, 2\], not non-increasing$"),
    "lookup": (_rekey, r"^C4: children of \[\]: order \[1, 2, 3\] disagrees with lookup \[1, 2, 7\]$"),
    "parent": (_unlink, r"^C4: child 3 of \[\] does not link back$"),
    "depth": (_deepen, r"^C5: node \[1, 3\] has length 1, depth 2, parent depth 0$"),
    "past-its-list": (_past_its_list, r"^C5: node at depth 1 references 9:10 of a list of 4$"),
    "before-its-list": (_before_its_list, r"^C5: node at depth 5 references -1:4 of a list of 4$"),
    "too-many-nodes": (_too_many_nodes, r"^C5: 9 nodes exceed 2 x 4 live tokens$"),
    "max-depth-zero": (_lower_max_depth_to_zero, r"^C2: node \[[0-9, ]+\] is deeper than max_depth 0$"),
    "phantom": (_phantom_leaf, r"^C2: count\(\[9\]\) = 1 but it occurs 0 times$"),
    "max-depth": (_lower_max_depth, r"^C2: node \[[0-9, ]+\] is deeper than max_depth 2$"),
    "owed-moves": (_owed_moves, r"^C5: node \[1\] owes 2 boundary moves between calls$"),
    "unmerged": (_split_unmerged, r"^C5: node \[2\] \(count 1\) has one child of equal count: not merged$"),
    "count": (_set_count(1, 3), r"^C2: count\(\[1\]\) = 3 but it occurs 2 times$"),
    "missing": (_drop_leaf, r"^C2: substring \[3\] occurs 1 times but is not a node$"),
    "open-count": (_drop_open_suffix, r"^C6: sequence 0 of length 4 has 2 open suffixes, expected 3$"),
    "open-order": (_swap_open_suffixes, r"^C6: open suffix of length 3 of sequence 0 does not end at its node$"),
    "open-lists": (_stray_open_list, r"^C6: open-suffix lists for \[0, 5\] but live sequences \[0\]$"),
}


@pytest.mark.parametrize("name", CORRUPTIONS)
def test_each_broken_invariant_is_named(name: str) -> None:
    corrupt, message = CORRUPTIONS[name]
    tree = valid_tree()
    corrupt(tree)
    problem = tree.check_integrity()
    assert problem, f"{name}: the corruption went unnoticed"
    assert re.match(message, problem), problem
    assert tree.check_integrity() == problem  # read-only: the same answer twice


@pytest.mark.parametrize("seed", range(40))
def test_small_depths_keep_every_invariant_under_random_extends(seed: int) -> None:
    """Depths 1-6 with sequences that outgrow them, token runs of 1-5 over a 3-token alphabet
    (repeats, shared suffixes, closing suffixes at every step): every invariant holds after every
    extend. An open suffix kept one token past D (the closing rule off by one) is C2."""
    rng = random.Random(seed)
    depth = 1 + seed % 6
    tree = SuffixTree(depth)
    for step in range(25):
        tree.extend(rng.randrange(3), [rng.randrange(3) for _ in range(rng.randint(1, 5))])
        assert tree.check_integrity() == "", f"D = {depth}, step {step}"


@given(st.lists(st.integers(0, 2), max_size=12), st.lists(st.integers(0, 2), max_size=12), st.integers(0, 14))
def test_common_suffix_is_the_longest_shared_tail(a: list[int], b: list[int], limit: int) -> None:
    """``_common_suffix`` (the speculate hint's length) against a brute-force count, at most ``limit``."""
    limit = min(limit, len(a), len(b))
    expected = 0
    while expected < limit and a[len(a) - 1 - expected] == b[len(b) - 1 - expected]:
        expected += 1
    assert _common_suffix(a, b, limit) == expected


def test_c3_is_named_when_it_alone_fails() -> None:
    """C3 with its numbers, on a hand-made graph that passes C2 (every string a live substring with its
    count) but not C3: [1] of sequence [1] has a second node [1] below it, so nothing ends at [1].
    Built directly, since C4 and C5 would object to the graph first in ``check_integrity``."""
    seq = [1]
    root = Node(1, None, [], 0, 0, 0)
    node = Node(1, root, seq, 1, 1, 1)
    root.add_child(1, node)
    node.add_child(1, Node(1, node, seq, 1, 1, 1))
    assert _check_counts(root, {0: seq}, 4, 2) == "C3: count([1]) - children = 0, but 1 occurrences end there"
