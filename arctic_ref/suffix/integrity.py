"""``find_violation``: the read-only self-check behind ``SuffixTree.check_integrity`` (docs/suffix-decoding.md §6.1).

It recomputes everything by brute force — every substring of length ≤ D of the live sequences and
its number of occurrences — and compares that with the compressed tree. Cost O(Σ L·min(L, D)) time
and memory; for tests and debugging.
"""

from collections import Counter

from arctic_ref.suffix.node import Node


def find_violation(
    root: Node, seqs: dict[int, list[int]], walkers: dict[int, list[Node]], max_depth: int, num_nodes: int
) -> str:
    """``""`` when every invariant holds, else one line naming the first failed one, with numbers."""
    live_tokens = sum(len(seq) for seq in seqs.values())
    if root.count != live_tokens:
        return f"C1: count(root) = {root.count} but the live sequences hold {live_tokens} tokens"
    for seq_id, seq in seqs.items():
        if not seq:
            return f"C1: live sequence {seq_id} is empty"
    for check in (_check_structure, _check_counts):
        problem = check(root, seqs, max_depth, num_nodes)
        if problem:
            return problem
    return _check_open_suffixes(seqs, walkers, max_depth)


def _occurrences(seqs: dict[int, list[int]], max_depth: int) -> Counter[tuple[int, ...]]:
    occ: Counter[tuple[int, ...]] = Counter()
    if max_depth == 0:
        return occ
    for seq in seqs.values():
        for start in range(len(seq)):
            stop = len(seq) if max_depth < 0 else min(len(seq), start + max_depth)
            for end in range(start + 1, stop + 1):
                occ[tuple(seq[start:end])] += 1
    return occ


def _walk(root: Node) -> list[tuple[Node, tuple[int, ...]]]:
    """Every non-root node with its full string (read from its reference)."""
    out: list[tuple[Node, tuple[int, ...]]] = []
    stack = list(root.order)
    while stack:
        node = stack.pop()
        out.append((node, tuple(node.ref[node.end - node.depth : node.end])))
        stack.extend(node.order)
    return out


def _check_structure(root: Node, seqs: dict[int, list[int]], max_depth: int, num_nodes: int) -> str:
    nodes = _walk(root)
    if len(nodes) != num_nodes:
        return f"C5: num_nodes() = {num_nodes} but the tree has {len(nodes)} non-root nodes"
    live_tokens = root.count
    if num_nodes > 2 * live_tokens:
        return f"C5: {num_nodes} nodes exceed 2 x {live_tokens} live tokens"
    for node, string in nodes:  # first, so that reading a node's tokens below cannot fail
        if len(string) != node.depth or node.end > len(node.ref):
            return f"C5: node at depth {node.depth} references {node.end - node.depth}:{node.end} of a list of {len(node.ref)}"
    for node, string in [(root, ()), *nodes]:
        counts = [child.count for child in node.order]
        if counts != sorted(counts, reverse=True):
            return f"C4: children of {list(string)} have counts {counts}, not non-increasing"
        keys = [child.first_token() for child in node.order]
        if len(set(keys)) != len(keys) or set(keys) != set(node.children) or len(node.children) != len(keys):
            return f"C4: children of {list(string)}: order {keys} disagrees with lookup {sorted(node.children)}"
        for child in node.order:
            if child.parent is not node or node.children[child.first_token()] is not child:
                return f"C4: child {child.first_token()} of {list(string)} does not link back"
        if node.until:
            return f"C5: node {list(string)} owes {node.until - node.since} boundary moves between calls"
        if node is root:
            continue
        assert node.parent is not None
        if node.length < 1 or node.depth != node.parent.depth + node.length:
            return f"C5: node {list(string)} has length {node.length}, depth {node.depth}, parent depth {node.parent.depth}"
        if 0 <= max_depth < node.depth:
            return f"C2: node {list(string)} is deeper than max_depth {max_depth}"
        if len(node.order) == 1 and node.order[0].count == node.count:
            return f"C5: node {list(string)} (count {node.count}) has one child of equal count: not merged"
    return ""


def _check_counts(root: Node, seqs: dict[int, list[int]], max_depth: int, num_nodes: int) -> str:
    occ = _occurrences(seqs, max_depth)
    trie: dict[tuple[int, ...], int] = {}
    for node, string in _walk(root):
        for depth in range(node.depth - node.length + 1, node.depth + 1):
            trie[string[:depth]] = node.count
    for string, count in trie.items():
        if occ.get(string, 0) != count:
            return f"C2: count({list(string)}) = {count} but it occurs {occ.get(string, 0)} times"
    missing = [string for string in occ if string not in trie]
    if missing:
        return f"C2: substring {list(missing[0])} occurs {occ[missing[0]]} times but is not a node"
    endings: Counter[tuple[int, ...]] = Counter()
    for seq in seqs.values():
        for start in range(len(seq)):
            stop = len(seq) if max_depth < 0 else min(len(seq), start + max_depth)
            if stop > start:
                endings[tuple(seq[start:stop])] += 1
    for node, string in [(root, ()), *_walk(root)]:
        below = sum(child.count for child in node.order)
        expected = 0 if node is root else endings.get(string, 0)
        if node is root and max_depth == 0:
            expected = root.count
        if node.count - below != expected:
            return f"C3: count({list(string)}) - children = {node.count - below}, but {expected} occurrences end there"
    return ""


def _check_open_suffixes(seqs: dict[int, list[int]], walkers: dict[int, list[Node]], max_depth: int) -> str:
    if set(walkers) != set(seqs):
        return f"C6: open-suffix lists for {sorted(walkers)} but live sequences {sorted(seqs)}"
    for seq_id, seq in seqs.items():
        expected = len(seq) if max_depth < 0 else min(len(seq), max(max_depth - 1, 0))
        nodes = walkers[seq_id]
        if len(nodes) != expected:
            return f"C6: sequence {seq_id} of length {len(seq)} has {len(nodes)} open suffixes, expected {expected}"
        for k, node in enumerate(nodes):
            length = len(nodes) - k
            if node.depth != length or node.ref[node.end - length : node.end] != seq[len(seq) - length :]:
                return f"C6: open suffix of length {length} of sequence {seq_id} does not end at its node"
    return ""
