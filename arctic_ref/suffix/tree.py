"""``SuffixTree``: a path-compressed, depth-limited suffix tree over many sequences.

Trie terms (docs/suffix-decoding.md §1): the tree observably holds every substring ``p`` of length
≤ D of the live sequences, with ``count(p)`` = its number of occurrences and an ordered sibling list
on each node. Storage is compressed: a ``_Node`` is a maximal chain of trie nodes t₁ → … → t_k in
which each tᵢ (i < k) is *interior* (exactly one child, of equal count), so all its trie nodes share
one count and only t₁ has siblings.

Invariants kept between public calls (``check_integrity`` verifies them):

- compression is maximal: no non-root node has exactly one child of equal count;
- ``node.ref[node.end - node.depth : node.end]`` is an occurrence of the node's full string, so the
  node's own tokens are ``ref[end - length : end]`` (``ref`` may be a removed sequence's list, which
  stays alive and never changes again);
- an *open suffix* of a live sequence — ``seq[j:L]`` with ``L - j < D`` — ends at the end of a node
  (its occurrence ending there makes that trie node non-interior). ``_open[seq_id]`` lists those
  nodes, longest suffix first; they are the "active nodes" of upstream.

An append therefore costs O(min(L, D)) node steps, and a node step is O(1) except the sibling
reordering of a node with many children (a bisection on counts). The open suffixes of count 1 —
leaves of one sequence, which only grow — are not stepped per token: ``extend`` catches each up
once per call, or when a step reaches it, so novel text costs O(shared suffixes) per token.

Copied text is the other common case: an open suffix whose node has one child, one count lower, that
goes on with the coming tokens. Each token moves that boundary down one token; a *follower* owes those
moves instead (``since``/``until`` on the node, one per token, counted up front by comparing the
coming tokens with the child's) and is skipped. It settles them when its run ends, when a step into
it reads it (from the root, or from the open suffix at its parent), and at the end of the call. When
its child merges with a grandchild, the moves are owed to the merged node, which begins with the same
tokens. Every node has ``until == 0`` between public calls.

Speculation walks from the root once per match length, except where the context ends like a live
sequence named as a hint (the cache's request): those matches are that sequence's open suffixes.
"""

import sys
from collections.abc import Sequence

import numpy as np

from arctic_ref.suffix.draft import Draft
from arctic_ref.suffix.drafting import budgets, path_draft, path_score, tree_draft
from arctic_ref.suffix.integrity import find_violation
from arctic_ref.suffix.node import Node, demote, index_of, move_boundary, promote
from arctic_ref.suffix.validate import check_bool, check_float, check_id, check_int32, check_tokens


def _common_suffix(a: list[int], b: list[int], limit: int) -> int:
    """The length of the longest common suffix of ``a`` and ``b``, at most ``limit`` (≤ both lengths)."""
    if limit <= 0 or a[-limit:] == b[-limit:]:
        return max(limit, 0)
    n = 0
    while a[-1 - n] == b[-1 - n]:  # stops before `limit`: the slices differ
        n += 1
    return n


def _common_prefix(a: list[int], i: int, b: list[int], j: int, limit: int) -> int:
    """How many leading tokens ``a[i:]`` and ``b[j:]`` share, at most ``limit`` (≤ both lengths)."""
    if limit <= 0 or a[i : i + limit] == b[j : j + limit]:
        return max(limit, 0)
    n = 0
    while a[i + n] == b[j + n]:  # stops before `limit`: the slices differ
        n += 1
    return n


def _catch_up(leaf: Node, end: int) -> None:
    """Bring a stale leaf — an open suffix of count 1 of the sequence being extended — up to that
    sequence's ``end``: it grew by every token since it was last touched (``SuffixTree.extend``)."""
    grown = end - leaf.end
    leaf.end = end
    leaf.length += grown
    leaf.depth += grown


class SuffixTree:
    """A drop-in for ``arctic_inference.suffix_decoding._C.SuffixTree`` (0.3.0), in pure Python.

    ``max_depth`` D bounds the stored substrings: D < 0 is unbounded, D = 0 stores only the number
    of live tokens. Every public method validates its input completely before changing anything.
    """

    _promote = staticmethod(promote)
    """Rule S2 (a seam for the test suite's mutants, which must be caught)."""

    def __init__(self, max_depth: int) -> None:
        self._max_depth = check_int32("max_depth", max_depth)
        self._root = Node(0, None, [], 0, 0, 0)
        self._seqs: dict[int, list[int]] = {}
        self._open: dict[int, list[Node]] = {}
        self._num_nodes = 0

    # ---------------------------------------------------------------- updates

    def extend(self, seq_id: int, tokens: Sequence[int] | np.ndarray) -> None:
        """Append ``tokens`` to sequence ``seq_id`` (created on its first token)."""
        sid = check_id("seq_id", seq_id)
        new_tokens = check_tokens("tokens", tokens)
        if not new_tokens:
            return
        seq = self._seqs.get(sid)
        if seq is None:
            seq = self._seqs[sid] = []
            self._open[sid] = []
        depth_limit = self._max_depth
        root = self._root
        walkers = self._open[sid]
        # Lazy leaves: the open suffixes of count 1 are leaves of this sequence alone, and lead
        # `walkers` (count(x·s) <= count(s)). Each grows by every token; instead of stepping them,
        # they are left behind ("stale") and caught up once — by `_catch_up` when a step reaches
        # one, when one closes, and at the end of this call. `own` is how many lead the list.
        own = 0
        end = len(seq)
        while own < len(walkers) and walkers[own].count == 1:
            leaf = walkers[own]
            leaf.ref = seq
            leaf.end = end
            own += 1
        step = self._step
        first = end  # seq[first:] are this call's tokens
        last = end + len(new_tokens)  # seq's length after this call
        for token in new_tokens:
            seq.append(token)
            root.count += 1
            if depth_limit == 0:
                continue
            end = len(seq)
            # walkers[k] is where seq[j:end-1] ends, longest first; step each shared one by `token`.
            for k in range(own, len(walkers)):
                node = walkers[k]
                if node.until > end:
                    continue  # a follower: its move for this token is owed
                if node.until:
                    move_boundary(node, node.until - node.since)  # its last owed move was the one before
                if len(node.order) == 1:
                    # The most common step, inlined (the rest, and the reasons, are in _step).
                    child = node.order[0]
                    if child.until:
                        move_boundary(child, end + 1 - child.since)  # a longer follower, stepped already
                    ref = child.ref
                    if ref is seq and child.count == 1 and child.depth != depth_limit:
                        _catch_up(child, end)  # one of ours (a closed leaf has depth D)
                    length = child.length
                    start = child.end - length
                    if length > 1 and node.count == child.count + 1 and ref[start] == token:
                        # Move the boundary down one token, and as many more as the coming tokens
                        # agree with the child's: owed, and settled when something else reads them.
                        moves = 1 + _common_prefix(new_tokens, end - first, ref, start + 1, min(length - 2, last - end))
                        if moves == 1:
                            move_boundary(node, 1)
                        else:
                            node.since = end
                            node.until = end + moves
                        continue
                walkers[k] = step(node, token, seq, end)
            walkers.append(step(root, token, seq, end))
            while own < len(walkers) and walkers[own].count == 1:
                own += 1  # new leaves: the longest shared suffixes that were new here
            if 0 < depth_limit <= len(walkers):
                if own:
                    _catch_up(walkers[0], end)
                    own -= 1
                del walkers[0]  # that suffix reached length D and is closed
        for node in walkers[own:]:
            if node.until:
                move_boundary(node, node.until - node.since)
        for leaf in walkers[:own]:
            _catch_up(leaf, end)
        self._open[sid] = walkers

    def _step(self, node: Node, token: int, seq: list[int], end: int) -> Node:
        """count(s·token) += 1 where s, the node's full string, is a suffix of ``seq[:end-1]``;
        return the node where s·token ends."""
        child = node.children.get(token)
        if child is None:
            leaf = Node(1, node, seq, end, 1, node.depth + 1)
            node.add_child(token, leaf)
            self._num_nodes += 1
            return leaf
        if child.until:
            move_boundary(child, end + 1 - child.since)  # a longer follower, stepped already
        if child.count == 1 and child.ref is seq and child.depth != self._max_depth:
            _catch_up(child, end)  # one of our stale leaves (a closed leaf has depth D)
        order = node.order
        old = child.count
        if len(order) == 1:
            if node.count == old + 1 and node.parent is not None:
                # After the increment `node` is interior. `extend` moves the boundary down itself when
                # the child is longer, so here the child is one token long: the two merge.
                child.count = old + 1
                self._absorb_parent(child)  # the parent may be a follower: it owes the same moves to `child`
                return child
            i = 0
        else:
            i = index_of(order, child)
        if child.length > 1:
            # Split: the first trie node of `child` gets count old+1, the rest keeps `old`.
            head = Node(old, node, child.ref, child.end - child.length + 1, 1, node.depth + 1)
            child.length -= 1
            child.parent = head
            head.add_child(child.ref[child.end - child.length], child)
            node.children[token] = head
            order[i] = head
            self._num_nodes += 1
            child = head
        child.count = old + 1
        if i and order[i - 1].count <= old + 1:  # otherwise it keeps its place (S2)
            self._promote(order, i, old)
        return child

    def _absorb_parent(self, child: Node) -> None:
        """``child`` is the only child of its parent and has its count: merge the two into ``child``."""
        node = child.parent
        assert node is not None and node.parent is not None
        grand = node.parent
        child.length += node.length
        child.parent = grand
        grand.children[child.first_token()] = child
        grand.order[index_of(grand.order, node)] = child
        self._num_nodes -= 1

    def remove(self, seq_id: int) -> None:
        """Forget sequence ``seq_id`` (a no-op for an id that is not live)."""
        sid = check_id("seq_id", seq_id)
        seq = self._seqs.pop(sid, None)
        if seq is None:
            return
        del self._open[sid]
        depth_limit = self._max_depth
        root = self._root
        length = len(seq)
        for j in range(length):
            root.count -= 1
            if depth_limit == 0:
                continue
            stop = length - j if depth_limit < 0 else min(depth_limit, length - j)
            node = root
            depth = 0
            path: list[Node] = []
            # Decrement count(seq[j:j+k]) for k = 1..stop; a count-1 node is deleted instead.
            while depth < stop:
                child = node.children[seq[j + depth]]
                order = node.order
                i = index_of(order, child)
                if child.count == 1:
                    del node.children[seq[j + depth]]
                    del order[i]
                    self._num_nodes -= self._subtree_size(child)
                    break
                old = child.count
                child.count = old - 1
                demote(order, i, old)
                path.append(child)
                depth += child.length
                node = child
            for visited in reversed(path):
                if len(visited.order) == 1 and visited.order[0].count == visited.count:
                    self._absorb_parent(visited.order[0])

    @staticmethod
    def _subtree_size(node: Node) -> int:
        size = 0
        stack = [node]
        while stack:
            current = stack.pop()
            size += 1
            stack.extend(current.order)
        return size

    # ---------------------------------------------------------------- queries

    def speculate(
        self,
        context: Sequence[int] | np.ndarray,
        max_spec_tokens: int,
        max_spec_factor: float,
        max_spec_offset: float,
        min_token_prob: float,
        use_tree_spec: bool,
    ) -> Draft:
        """The best draft over every matched context suffix (docs/suffix-decoding.md §3). Read-only."""
        return self._speculate_checked(
            check_tokens("context", context),
            check_int32("max_spec_tokens", max_spec_tokens),
            check_float("max_spec_factor", max_spec_factor),
            check_float("max_spec_offset", max_spec_offset),
            check_float("min_token_prob", min_token_prob),
            check_bool("use_tree_spec", use_tree_spec),
        )

    def _speculate_checked(
        self,
        ctx: list[int],
        spec_tokens: int,
        factor: float,
        offset: float,
        min_prob: float,
        tree_mode: bool,
        *,
        tail_of: int | None = None,
    ) -> Draft:
        """``speculate`` on validated arguments (floats already rounded to float32).

        ``tail_of`` names a live sequence the context is likely to end like (a request's own): the
        suffixes the two share are found in its open-suffix list instead of by a walk from the root.
        It is only a hint; the drafts are the same with or without it.
        """
        size = len(ctx)
        if size < 2:
            return Draft()
        limits = budgets(factor, offset, spec_tokens, size - 1)
        known: list[Node] = []
        shared = 0
        if tail_of is not None and tail_of in self._seqs:
            known = self._open[tail_of]  # known[-m] is where the sequence's last m tokens end
            shared = _common_suffix(ctx, self._seqs[tail_of], min(len(known), size - 1))
        if tree_mode:
            best = Draft()
            for match_len in range(1, size):
                found = self._match(ctx, match_len, known, shared)
                if found is None:
                    break
                draft = tree_draft(found[0], found[1], limits[match_len], min_prob)
                if draft.score >= best.score:
                    draft.match_len = match_len
                    best = draft
            return best
        # Path mode: score every match first, build only the winner's draft.
        best_score = 0.0
        winner: tuple[Node, int, int] | None = None
        depth_limit = self._max_depth
        for match_len in range(1, size):
            # A path draft has at most min(budget, D - m) tokens of prob <= 1, so its float32 score
            # is at most that; D - m only falls, so once it is below the best nothing later wins.
            if depth_limit > 0 and depth_limit - match_len < best_score:
                break
            if limits[match_len] < best_score:
                continue
            found = self._match(ctx, match_len, known, shared)
            if found is None:
                break
            node, taken = found
            score = path_score(node, taken, limits[match_len], min_prob)
            if score >= best_score:
                best_score = score
                winner = (node, taken, match_len)
        if winner is None:
            return Draft()
        node, taken, match_len = winner
        best = path_draft(node, taken, limits[match_len], min_prob)
        best.match_len = match_len
        return best

    def _match(self, ctx: list[int], match_len: int, known: list[Node], shared: int) -> tuple[Node, int] | None:
        """Where ``ctx``'s last ``match_len`` tokens end, as ``_find`` gives it: read from the hinted
        sequence's open suffixes ``known`` when the context shares that many tokens with it, else walked."""
        if match_len <= shared:
            node = known[-match_len]
            return node, node.length
        return self._find(ctx, len(ctx) - match_len)

    def _find(self, ctx: list[int], start: int) -> tuple[Node, int] | None:
        """Where ``ctx[start:]`` ends: (node, tokens of it consumed), or None if it is not a node."""
        node = self._root
        i = start
        size = len(ctx)
        taken = 0
        while i < size:
            child = node.children.get(ctx[i])
            if child is None:
                return None
            taken = min(child.length, size - i)
            if taken > 1:
                base = child.end - child.length
                if child.ref[base + 1 : base + taken] != ctx[i + 1 : i + taken]:
                    return None
            i += taken
            node = child
        return node, (taken if node is not self._root else 0)

    speculate_ndarray = speculate
    extend_ndarray = extend

    def num_seqs(self) -> int:
        return len(self._seqs)

    def num_nodes(self) -> int:
        """Non-root nodes of the compressed representation (arctic_ref only)."""
        return self._num_nodes

    def count(self, tokens: Sequence[int]) -> int:
        """count(tokens): live tokens for ``()``, 0 when the string is not a node (arctic_ref only)."""
        ctx = check_tokens("tokens", tokens)
        if not ctx:
            return self._root.count
        found = self._find(ctx, 0)
        return 0 if found is None else found[0].count

    def children(self, tokens: Sequence[int]) -> list[tuple[int, int]]:
        """``(token, count)`` of each child of that trie node, in sibling order (arctic_ref only)."""
        ctx = check_tokens("tokens", tokens)
        found = (self._root, 0) if not ctx else self._find(ctx, 0)
        if found is None:
            return []
        node, taken = found
        if node is not self._root and taken < node.length:
            return [(node.ref[node.end - node.length + taken], node.count)]
        return [(child.first_token(), child.count) for child in node.order]

    def dump(self) -> list[tuple[tuple[int, ...], int]]:
        """Every trie node as (string, count) in depth-first sibling order: counts *and* order."""
        out: list[tuple[tuple[int, ...], int]] = [((), self._root.count)]
        stack: list[tuple[Node, tuple[int, ...]]] = [(c, ()) for c in reversed(self._root.order)]
        while stack:
            node, prefix = stack.pop()
            for k in range(node.length):
                prefix = (*prefix, node.ref[node.end - node.length + k])
                out.append((prefix, node.count))
            stack.extend((c, prefix) for c in reversed(node.order))
        return out

    def estimate_memory(self) -> int:
        """Bytes held: nodes, their containers, and every token list a node or sequence refers to."""
        total = sys.getsizeof(self) + sys.getsizeof(self._seqs) + sys.getsizeof(self._open)
        lists: dict[int, list[int]] = {id(seq): seq for seq in self._seqs.values()}
        total += sum(sys.getsizeof(walkers) for walkers in self._open.values())
        stack = [self._root]
        while stack:
            node = stack.pop()
            total += sys.getsizeof(node) + node.container_bytes()
            lists[id(node.ref)] = node.ref
            stack.extend(node.order)
        for tokens in lists.values():
            total += sys.getsizeof(tokens) + sum(sys.getsizeof(t) for t in tokens)
        return total

    def check_integrity(self) -> str:
        """``""`` iff every invariant of docs/suffix-decoding.md §6.1 holds, else one line naming the first failure."""
        return find_violation(self._root, self._seqs, self._open, self._max_depth, self._num_nodes)
