"""A suffix tree that shows only extend, remove, speculate and num_seqs (an opaque implementation);
here arctic_ref's own tree stands behind it."""

from collections.abc import Sequence
from typing import Any

from arctic_ref.suffix import SuffixTree


class OpaqueTree:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def extend(self, seq_id: int, tokens: Sequence[int]) -> None:
        self._inner.extend(seq_id, tokens)

    def remove(self, seq_id: int) -> None:
        self._inner.remove(seq_id)

    def speculate(self, context: Sequence[int], *args: Any) -> Any:
        return self._inner.speculate(context, *args)

    def num_seqs(self) -> int:
        return int(self._inner.num_seqs())


def make_tree(max_depth: int) -> OpaqueTree:
    return OpaqueTree(SuffixTree(max_depth))
