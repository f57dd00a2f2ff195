"""Path and tree drafts from a matched position, and the budget rule (docs/suffix-decoding.md §3.2–§3.5).

All float arithmetic is float32: every operation on float32 operands is rounded at once with
``f32``, which equals upstream's C++ ``float`` arithmetic because float64 carries ≥ 2·24+2 bits.
"""

import functools
import math

from arctic_ref.suffix.draft import Draft
from arctic_ref.suffix.heap import Heap
from arctic_ref.suffix.node import Node
from arctic_ref.suffix.validate import INT32_MAX, INT32_MIN, f32


def budget(match_len: int, factor: float, offset: float, max_spec_tokens: int) -> int:
    """budget(m) of docs/suffix-decoding.md §3.2, with upstream's float32 arithmetic and its x86-64 cast fallback."""
    scaled = f32(f32(float(match_len)) * factor)
    total = f32(scaled + offset) + 1e-6
    if math.isnan(total) or math.isinf(total):
        limit = INT32_MIN
    else:
        limit = math.trunc(total)
        if not INT32_MIN <= limit <= INT32_MAX:
            limit = INT32_MIN
    return max(0, min(max_spec_tokens, limit))


@functools.lru_cache(maxsize=256)
def budgets(factor: float, offset: float, max_spec_tokens: int, longest: int) -> tuple[int, ...]:
    """``(budget(0), budget(1), …, budget(longest))`` for one call's arguments."""
    return tuple(budget(m, factor, offset, max_spec_tokens) for m in range(longest + 1))


def path_score(node: Node, taken: int, limit: int, min_prob: float) -> float:
    """The score ``path_draft`` would give, without building the draft (the hot loop of speculate)."""
    if not min_prob <= 1.0:
        return 0.0
    prob = 1.0
    score = 0.0
    emitted = 0
    while emitted < limit:
        if taken < node.length:
            run = min(node.length - taken, limit - emitted)
            if prob == 1.0 and score + run <= 2**24:
                score += run  # integers: every partial sum is exact
            else:
                score = accumulate(score, prob, run)
            emitted += run
            taken += run
            continue
        if not node.order:
            break
        child = node.order[0]
        if child.count < 2**24 and node.count < 2**24:
            ratio = f32(child.count / node.count)
        else:
            ratio = f32(f32(float(child.count)) / f32(float(node.count)))
        prob = ratio if prob == 1.0 else f32(prob * ratio)
        if not prob >= min_prob:
            break
        node = child
        taken = 0
    return score


@functools.lru_cache(maxsize=1 << 16)
def accumulate(score: float, prob: float, times: int) -> float:
    """``times`` sequential float32 additions of ``prob`` to ``score`` (never ``times * prob``)."""
    if prob == 1.0 and score.is_integer() and score + times <= 2**24:
        return score + times  # every partial sum is an exactly representable integer
    for _ in range(times):
        score = f32(score + prob)
    return score


def path_draft(node: Node, taken: int, limit: int, min_prob: float) -> Draft:
    """Follow first children from the matched position (docs/suffix-decoding.md §3.3)."""
    draft = Draft()
    prob = 1.0
    if not prob >= min_prob:
        return draft
    tokens = draft.token_ids
    probs = draft.probs
    score = 0.0
    while len(tokens) < limit:
        if taken < node.length:
            # Inside a compressed node: the rest of it follows with the same probability.
            run = min(node.length - taken, limit - len(tokens))
            base = node.end - node.length + taken
            tokens.extend(node.ref[base : base + run])
            probs.extend([prob] * run)
            score = accumulate(score, prob, run)
            taken += run
            continue
        if not node.order:
            break
        child = node.order[0]
        prob = f32(prob * f32(f32(float(child.count)) / f32(float(node.count))))
        if not prob >= min_prob:
            break
        node = child
        taken = 0
    draft.parents = list(range(-1, len(tokens) - 1))
    draft.score = score
    return draft


def tree_draft(node: Node, taken: int, limit: int, min_prob: float) -> Draft:
    """Best-first expansion by joint probability (docs/suffix-decoding.md §3.4). Heap items are
    ``(prob, node, taken, parent)``: ``taken < 0`` means EXPAND(node's end), otherwise EMIT the
    trie node ``taken`` tokens into ``node``."""
    draft = Draft()
    tokens = draft.token_ids
    parents = draft.parents
    probs = draft.probs
    score = 0.0
    heap: Heap[tuple[float, Node, int, int]] = Heap()
    heap.push((1.0, node, taken + 1 if taken < node.length else -1, -1))
    while len(tokens) < limit and len(heap):
        prob, at, emit, parent = heap.pop()
        if emit >= 0:
            tokens.append(at.ref[at.end - at.length + emit - 1])
            parents.append(parent)
            probs.append(prob)
            score = f32(score + prob)
            heap.push((prob, at, emit + 1 if emit < at.length else -1, len(tokens) - 1))
            continue
        denominator = f32(float(at.count))
        for child in at.order:
            q = f32(f32(prob * f32(float(child.count))) / denominator)
            if q < min_prob:
                break
            heap.push((q, child, 1, parent))
    draft.score = score
    return draft
