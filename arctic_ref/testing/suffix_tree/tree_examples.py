"""The suffix tree's worked examples of docs/suffix-decoding.md as checks of any implementation: each
takes a factory and returns "" or what differed. Trees need only extend, remove and speculate.
``tests/suffix/test_examples.py`` runs them on ours, the naive oracle and upstream; the plugin's
``worked-examples`` checks run them on yours."""

import math
from collections.abc import Callable
from typing import Any, Final

from arctic_ref.testing.worked_examples import expect

TreeFactory = Callable[[int], Any]


def _path(tree: Any, context: list[int], factor: float = 1.0, min_prob: float = 0.1, tokens: int = 32) -> Any:
    return tree.speculate(context, tokens, factor, 0.0, min_prob, False)


def sibling_tie_order_is_history(make: TreeFactory) -> str:
    """§1.3: removing a sequence restores counts but not the order of ties."""
    tree = make(8)
    tree.extend(0, [5, 6])
    tree.extend(1, [5, 7])
    first = list(_path(tree, [9, 5]).token_ids)
    tree.extend(2, [5, 7])
    second = list(_path(tree, [9, 5]).token_ids)
    tree.remove(2)
    third = list(_path(tree, [9, 5]).token_ids)
    return expect("drafts after [5,6],[5,7]; +[5,7]; -[5,7]", [first, second, third], [[6], [7], [7]])


def tree_mode_emits_rest_of_node(make: TreeFactory) -> str:
    """§3.4 / E7: min_token_prob > 1 — path drafts nothing, tree emits the matched node's rest."""
    tree = make(8)
    tree.extend(0, [5, 6, 7, 8, 9])
    path = list(tree.speculate([5, 6], 32, 4.0, 0.0, 1.5, False).token_ids)
    draft = tree.speculate([5, 6], 32, 4.0, 0.0, 1.5, True)
    got = (
        path,
        list(draft.token_ids),
        list(draft.parents),
        [float(p) for p in draft.probs],
        float(draft.score),
        draft.match_len,
    )
    return expect("path draft, then tree draft fields", got, ([], [7, 8, 9], [-1, 0, 1], [1.0] * 3, 3.0, 1))


def longest_match_is_shorter_than_context(make: TreeFactory) -> str:
    """E2: the full context is never tried."""
    tree = make(8)
    tree.extend(0, [5, 6, 7, 8, 9])
    lone = _path(tree, [7])
    deep = make(4)
    deep.extend(0, [1, 2, 3, 1, 2, 4])
    got = (list(lone.token_ids), lone.match_len, _path(deep, [1, 2]).match_len)
    return expect("(draft of [7], its match_len, match_len of [1, 2] at D = 4)", got, ([], 0, 1))


def budget_cast_fallback(make: TreeFactory) -> str:
    """§3.2 / E6: out-of-range budgets fall back to INT32_MIN, i.e. budget 0."""
    problems = []
    for factor, wanted in ((1e10, []), (math.inf, []), (math.nan, []), (2.0, [3, 4])):
        tree = make(8)
        tree.extend(0, [1, 2, 3, 4])
        draft = _path(tree, [0, 2], factor=factor)
        problems.append(
            expect(f"factor {factor}: (draft, match_len)", (list(draft.token_ids), draft.match_len), (wanted, 1))
        )
    return "; ".join(p for p in problems if p)


def empty_draft_keeps_longest_match(make: TreeFactory) -> str:
    """E5: every budget 0 gives an empty draft whose match_len is the longest successful match."""
    tree = make(8)
    tree.extend(0, [1, 2, 3, 4])
    draft = tree.speculate([1, 2, 3], 0, 1.0, 0.0, 0.1, False)
    return expect("(draft, match_len) at max_spec_tokens 0", (list(draft.token_ids), draft.match_len), ([], 2))


TREE_EXAMPLES: Final[tuple[Callable[[TreeFactory], str], ...]] = (
    sibling_tie_order_is_history,
    tree_mode_emits_rest_of_node,
    longest_match_is_shorter_than_context,
    budget_cast_fallback,
    empty_draft_keeps_longest_match,
)
