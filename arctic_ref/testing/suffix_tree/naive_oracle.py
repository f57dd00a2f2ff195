"""``NaiveSuffixIndex``: a deliberately naive suffix index to test ``SuffixTree`` against.

It stores only the live sequences and, per trie node, the order of its children (tie order is
history, which no scan can recover). Every count comes from scanning the sequences; the float
arithmetic uses ``numpy.float32`` scalars, independently of the tree's ``struct``-based rounding.
Cost: O(total tokens) per count, so keep the inputs small (docs/suffix-decoding.md §9).
"""

import math
from collections.abc import Sequence

import numpy as np

from arctic_ref.suffix.draft import Draft
from arctic_ref.suffix.heap import Heap
from arctic_ref.suffix.validate import (
    INT32_MAX,
    INT32_MIN,
    check_bool,
    check_float,
    check_id,
    check_int32,
    check_tokens,
)

String = tuple[int, ...]
_F32 = np.float32


class NaiveSuffixIndex:
    """Same surface as ``SuffixTree`` (without the compressed-node extras)."""

    def __init__(self, max_depth: int) -> None:
        self._max_depth = check_int32("max_depth", max_depth)
        self._seqs: dict[int, list[int]] = {}
        self._first_live: dict[int, int] = {}  # starts below this are already removed
        self._order: dict[String, list[int]] = {}

    # ------------------------------------------------------------------ counting by scanning

    def _occ(self, p: String) -> int:
        if not p:
            return sum(len(seq) - self._first_live[sid] for sid, seq in self._seqs.items())
        if 0 <= self._max_depth < len(p):
            return 0
        n = len(p)
        total = 0
        for sid, seq in self._seqs.items():
            for i in range(self._first_live[sid], len(seq) - n + 1):
                if tuple(seq[i : i + n]) == p:
                    total += 1
        return total

    def _is_node(self, p: String) -> bool:
        return self._max_depth != 0 and self._occ(p) > 0

    def _child_counts(self, parent: String) -> list[int]:
        return [self._occ((*parent, token)) for token in self._order.get(parent, [])]

    # ------------------------------------------------------------------ updates

    def extend(self, seq_id: int, tokens: Sequence[int] | np.ndarray) -> None:
        sid = check_id("seq_id", seq_id)
        new_tokens = check_tokens("tokens", tokens)
        if not new_tokens:
            return
        seq = self._seqs.setdefault(sid, [])
        self._first_live.setdefault(sid, 0)
        for token in new_tokens:
            old_length = len(seq)
            seq.append(token)
            if self._max_depth == 0:
                continue
            first = 0 if self._max_depth < 0 else max(0, old_length + 1 - self._max_depth)
            for j in range(first, old_length + 1):
                self._count_up(tuple(seq[j:old_length]), token)

    def _count_up(self, parent: String, token: int) -> None:
        siblings = self._order.setdefault(parent, [])
        if token not in siblings:
            siblings.append(token)  # S1
            return
        counts = self._child_counts(parent)
        i = siblings.index(token)
        new = counts[i]
        old = new - 1
        was_first = all(counts[k] != old for k in range(i))
        del siblings[i]
        del counts[i]
        # S2: first among `new` if it was first among `old`, else last among `new`.
        if was_first:
            position = next((k for k, c in enumerate(counts) if c <= new), len(counts))
        else:
            position = next((k for k, c in enumerate(counts) if c < new), len(counts))
        siblings.insert(position, token)

    def remove(self, seq_id: int) -> None:
        sid = check_id("seq_id", seq_id)
        seq = self._seqs.get(sid)
        if seq is None:
            return
        depth = self._max_depth
        for j in range(len(seq)):
            self._first_live[sid] = j
            stop = len(seq) - j if depth < 0 else min(depth, len(seq) - j)
            for k in range(1, stop + 1):
                p = tuple(seq[j : j + k])
                parent = p[:-1]
                siblings = self._order[parent]
                if self._occ(p) == 1:
                    siblings.remove(p[-1])
                    for key in [key for key in self._order if key[:k] == p]:
                        del self._order[key]
                    break
                self._first_live[sid] = j + 1  # p's count drops by one
                counts = self._child_counts(parent)
                self._first_live[sid] = j
                i = siblings.index(p[-1])
                new = counts[i]
                del siblings[i]
                del counts[i]
                position = next((q for q, c in enumerate(counts) if c <= new), len(counts))  # S3
                siblings.insert(position, p[-1])
        del self._seqs[sid]
        del self._first_live[sid]
        for key in [key for key, children in self._order.items() if not children and key]:
            del self._order[key]

    # ------------------------------------------------------------------ queries

    def num_seqs(self) -> int:
        return len(self._seqs)

    def count(self, tokens: Sequence[int]) -> int:
        p = tuple(check_tokens("tokens", tokens))
        if not p:
            return self._occ(p)
        return self._occ(p) if self._is_node(p) else 0

    def children(self, tokens: Sequence[int]) -> list[tuple[int, int]]:
        p = tuple(check_tokens("tokens", tokens))
        if p and not self._is_node(p):
            return []
        return [(token, self._occ((*p, token))) for token in self._order.get(p, [])]

    def dump(self) -> list[tuple[String, int]]:
        out: list[tuple[String, int]] = [((), self._occ(()))]
        stack: list[String] = [(token,) for token in reversed(self._order.get((), []))]
        while stack:
            p = stack.pop()
            out.append((p, self._occ(p)))
            stack.extend((*p, token) for token in reversed(self._order.get(p, [])))
        return out

    def check_integrity(self) -> str:
        for parent, _siblings in self._order.items():
            counts = self._child_counts(parent)
            if counts != sorted(counts, reverse=True) or 0 in counts:
                return f"order of {list(parent)} has counts {counts}"
        return ""

    def estimate_memory(self) -> int:
        return sum(8 * len(seq) for seq in self._seqs.values()) + sum(
            8 * (len(k) + len(v)) for k, v in self._order.items()
        )

    def speculate(
        self,
        context: Sequence[int] | np.ndarray,
        max_spec_tokens: int,
        max_spec_factor: float,
        max_spec_offset: float,
        min_token_prob: float,
        use_tree_spec: bool,
    ) -> Draft:
        ctx = tuple(check_tokens("context", context))
        spec_tokens = check_int32("max_spec_tokens", max_spec_tokens)
        factor = _F32(check_float("max_spec_factor", max_spec_factor))
        offset = _F32(check_float("max_spec_offset", max_spec_offset))
        min_prob = _F32(check_float("min_token_prob", min_token_prob))
        tree = check_bool("use_tree_spec", use_tree_spec)
        best = Draft()
        for m in range(1, len(ctx)):
            t = ctx[len(ctx) - m :]
            if not self._is_node(t):
                break
            limit = _budget(m, factor, offset, spec_tokens)
            d = self._tree_draft(t, limit, min_prob) if tree else self._path_draft(t, limit, min_prob)
            if d.score >= best.score:
                d.match_len = m
                best = d
        return best

    def _interior(self, t: String) -> bool:
        siblings = self._order.get(t, [])
        return bool(t) and len(siblings) == 1 and self._occ((*t, siblings[0])) == self._occ(t)

    def _path_draft(self, t: String, limit: int, min_prob: np.float32) -> Draft:
        d = Draft()
        prob = _F32(1.0)
        score = _F32(0.0)
        while len(d.token_ids) < limit and prob >= min_prob:
            siblings = self._order.get(t, [])
            if not siblings:
                break
            u = (*t, siblings[0])
            if not self._interior(t):
                prob = _F32(prob * _F32(_F32(self._occ(u)) / _F32(self._occ(t))))
                if not prob >= min_prob:
                    break
            d.token_ids.append(u[-1])
            d.parents.append(len(d.token_ids) - 2)
            d.probs.append(float(prob))
            score = _F32(score + prob)
            t = u
        d.score = float(score)
        return d

    def _tree_draft(self, t: String, limit: int, min_prob: np.float32) -> Draft:
        d = Draft()
        score = _F32(0.0)
        heap: Heap[tuple[float, bool, String, int]] = Heap()

        def next_action(node: String, prob: float, parent: int) -> tuple[float, bool, String, int]:
            if self._interior(node):
                return (prob, True, (*node, self._order[node][0]), parent)  # EMIT the only child
            return (prob, False, node, parent)  # EXPAND

        heap.push(next_action(t, 1.0, -1))
        while len(d.token_ids) < limit and len(heap):
            prob, emit, node, parent = heap.pop()
            if emit:
                d.token_ids.append(node[-1])
                d.parents.append(parent)
                d.probs.append(prob)
                score = _F32(score + _F32(prob))
                heap.push(next_action(node, prob, len(d.token_ids) - 1))
                continue
            for token in self._order.get(node, []):
                u = (*node, token)
                q = _F32(_F32(_F32(prob) * _F32(self._occ(u))) / _F32(self._occ(node)))
                if q < min_prob:
                    break
                heap.push((float(q), True, u, parent))
        d.score = float(score)
        return d


def _budget(m: int, factor: np.float32, offset: np.float32, max_spec_tokens: int) -> int:
    with np.errstate(over="ignore", invalid="ignore"):
        s = _F32(_F32(_F32(m) * factor) + offset)
    c = float(s) + 1e-6
    t = INT32_MIN if not math.isfinite(c) or not INT32_MIN <= math.trunc(c) <= INT32_MAX else math.trunc(c)
    return max(0, min(max_spec_tokens, t))
