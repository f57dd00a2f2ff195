"""The suffix tree's bad-input table (docs/suffix-decoding.md §2.2, X2–X5)."""

from collections.abc import Callable
from typing import Any

from arctic_ref.suffix.validate import INT32_MAX, INT32_MIN
from arctic_ref.testing.bad_input import PROBES, bad_input_rows, bad_input_verdict
from arctic_ref.testing.check import Verdict


def _tree_state(tree: Any) -> tuple[object, ...]:
    drafts = []
    for probe in PROBES:
        draft = tree.speculate(probe, 8, 1.0, 0.0, 0.0, False)
        drafts.append((list(draft.token_ids), [float(p) for p in draft.probs]))
    return tree.num_seqs(), tuple(map(str, drafts))


TREE_BAD_INPUTS: tuple[tuple[str, str, Callable[[Any], object]], ...] = (
    ("reserved token in extend", "X2", lambda t: t.extend(0, [4, INT32_MIN])),
    ("reserved token in context", "X3", lambda t: t.speculate([1, INT32_MIN, 2], 8, 1.0, 0.0, 0.0, False)),
    ("reserved seq id", "X4", lambda t: t.extend(INT32_MIN, [1, 2])),
    ("token outside int32", "X5", lambda t: t.extend(1, [1, INT32_MAX + 1])),
    ("non-integer token", "X5", lambda t: t.extend(1, [1, 1.5])),
    ("string token", "X5", lambda t: t.extend(1, ["x"])),
)


def _seeded_tree(make_tree: Callable[[int], Any]) -> Any:
    tree = make_tree(8)
    tree.extend(0, [1, 2, 3, 1, 2])
    return tree


def tree_bad_input(make_tree: Callable[[int], Any]) -> Verdict:
    rows = bad_input_rows(TREE_BAD_INPUTS, lambda: _seeded_tree(make_tree), _tree_state)
    return bad_input_verdict(rows, len(TREE_BAD_INPUTS), "the tree")
