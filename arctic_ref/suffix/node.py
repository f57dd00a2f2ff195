"""``Node``: one compressed node of a ``SuffixTree``, and the sibling-order rules S1–S4.

A node is a maximal chain of trie nodes t₁ → … → t_k in which each tᵢ (i < k) is interior (exactly
one child, of equal count); its ``length`` tokens are ``ref[end - length : end]`` and ``depth`` is
the length of its full string from the root. ``order`` lists the children by non-increasing count;
among equal counts the order is history, changed only by the rules of docs/suffix-decoding.md §1.3.
"""

import bisect
import sys
from types import MappingProxyType
from typing import Final, cast

_LINEAR_SCAN_MAX: Final = 8  # below this, scan instead of bisecting


class Node:
    """A compressed node: ``length`` tokens ending at ``ref[end - 1]``, at string depth ``depth``."""

    __slots__ = ("children", "count", "depth", "end", "length", "order", "parent", "ref", "since", "until")

    def __init__(self, count: int, parent: "Node | None", ref: list[int], end: int, length: int, depth: int) -> None:
        self.count = count
        self.parent = parent
        # A childless node shares two read-only empties (fewer objects for the cyclic collector);
        # ``add_child`` gives it its own containers.
        self.children: dict[int, Node] = _NO_CHILDREN
        self.order: list[Node] = _NO_ORDER  # the children in sibling order (non-increasing count)
        self.ref = ref
        self.end = end
        self.length = length
        self.depth = depth
        # A *follower* (SuffixTree.extend) owes boundary moves: one per token of seq ends
        # since <= end < until. ``until`` is 0 for every other node and between public calls.
        self.since = 0
        self.until = 0

    def first_token(self) -> int:
        return self.ref[self.end - self.length]

    def container_bytes(self) -> int:
        """``sys.getsizeof`` of its children map and order, 0 for the shared empties of a childless node."""
        own = (c for c in (self.children, self.order) if c is not _NO_CHILDREN and c is not _NO_ORDER)
        return sum(sys.getsizeof(c) for c in own)

    def add_child(self, token: int, child: "Node") -> None:
        """Rule S1: a new child, keyed by its first token, goes to the end of the order."""
        if self.order:
            self.children[token] = child
            self.order.append(child)
        else:
            self.children = {token: child}
            self.order = [child]


_NO_CHILDREN: Final = cast(dict[int, Node], MappingProxyType({}))  # read-only: adding to it raises
_NO_ORDER: Final = cast(list[Node], ())


def move_boundary(node: Node, moves: int) -> None:
    """Move the boundary between ``node`` and its only child down by ``moves`` tokens: the child's
    first ``moves`` trie nodes join ``node`` (their count became ``node.count``). Settles a follower."""
    child = node.order[0]
    ref = child.ref
    start = child.end - child.length
    child.length -= moves
    node.ref = ref
    node.end = start + moves
    node.length += moves
    node.depth += moves
    node.until = 0
    children = node.children
    del children[ref[start]]
    children[ref[start + moves]] = child


def _neg_count(node: Node) -> int:
    return -node.count


def first_at_most(order: list[Node], value: int, lo: int, hi: int) -> int:
    """The first index in ``order[lo:hi]`` whose count is ≤ ``value`` (``hi`` if none)."""
    if hi - lo <= _LINEAR_SCAN_MAX:
        while lo < hi and order[lo].count > value:
            lo += 1
        return lo
    return bisect.bisect_left(order, -value, lo, hi, key=_neg_count)


def index_of(order: list[Node], node: Node) -> int:
    if len(order) <= _LINEAR_SCAN_MAX or order[_LINEAR_SCAN_MAX].count < node.count:
        return order.index(node)  # it is among the first _LINEAR_SCAN_MAX
    return order.index(node, first_at_most(order, node.count, 0, len(order)))


def promote(order: list[Node], i: int, old: int) -> None:
    """Rule S2: ``order[i]`` went from count ``old`` to ``old + 1``. If it was the first child with
    count ``old`` it becomes the first with ``old + 1``, otherwise the last with ``old + 1``."""
    if i == 0:
        return
    previous = order[i - 1].count
    if previous > old + 1:
        return
    node = order[i]
    # previous == old + 1: it was first among `old`, so it goes before the block of `old + 1`;
    # previous == old: it was not, so it goes after that block (the start of the `old` block).
    j = first_at_most(order, old + 1 if previous == old + 1 else old, 0, i)
    del order[i]
    order.insert(j, node)


def demote(order: list[Node], i: int, old: int) -> None:
    """Rule S3: ``order[i]`` went from count ``old`` to ``old - 1`` and becomes the first child with
    count ``old - 1``, i.e. it moves after the siblings that still have count ``old``."""
    j = first_at_most(order, old - 1, i + 1, len(order))
    if j == i + 1:
        return
    node = order[i]
    del order[i]
    order.insert(j - 1, node)
