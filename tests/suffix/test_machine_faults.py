"""Faults of the tree state machine found by a trial with independent implementations (issue 37,
item 7): a tree draft that cuts at ``q <= P`` instead of ``q < P`` and one that gives the second
branch a wrong parent index passed ``SuffixTreeMachine`` (only the seeded ``differential`` run caught
them). Each broken tree is our ``SuffixTree`` with one step of ``tree_draft`` swapped."""

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from arctic_ref.suffix import Draft, SuffixTree
from arctic_ref.suffix.drafting import budgets
from arctic_ref.suffix.heap import Heap
from arctic_ref.suffix.node import Node
from arctic_ref.suffix.validate import f32
from arctic_ref.testing.suffix_tree.differential import run_differential
from arctic_ref.testing.suffix_tree.tree_machine import Implementation, SuffixTreeMachine


@dataclass(frozen=True, slots=True)
class TreeDraftRules:
    """The steps of ``arctic_ref.suffix.drafting.tree_draft`` that the broken trees swap."""

    cut_at_equality: bool = False
    """Cut a child when q <= P (the intended rule cuts when q < P, docs/suffix-decoding.md §3.4)."""
    second_branch_parent_off: bool = False
    """The second child pushed at an expansion hangs below the last token emitted so far instead of
    below the expanded node's token (the same index unless other tokens were emitted in between)."""


def tree_draft_with(rules: TreeDraftRules, node: Node, taken: int, limit: int, min_prob: float) -> Draft:
    """``tree_draft`` step for step, with ``rules``' steps (the intended ones by default)."""
    draft = Draft()
    tokens, parents, probs = draft.token_ids, draft.parents, draft.probs
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
        for k, child in enumerate(at.order):
            q = f32(f32(prob * f32(float(child.count))) / denominator)
            if (q <= min_prob) if rules.cut_at_equality else (q < min_prob):
                break
            wrong = rules.second_branch_parent_off and k == 1
            heap.push((q, child, 1, len(tokens) - 1 if wrong else parent))
    draft.score = score
    return draft


class RuledTree(SuffixTree):
    """Our tree whose tree-mode drafts come from ``tree_draft_with(RULES, ...)``."""

    RULES = TreeDraftRules()

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
        if not tree_mode or len(ctx) < 2:
            return super()._speculate_checked(ctx, spec_tokens, factor, offset, min_prob, tree_mode, tail_of=tail_of)
        limits = budgets(factor, offset, spec_tokens, len(ctx) - 1)
        best = Draft()
        for match_len in range(1, len(ctx)):
            found = self._find(ctx, len(ctx) - match_len)
            if found is None:
                break
            draft = tree_draft_with(self.RULES, found[0], found[1], limits[match_len], min_prob)
            if draft.score >= best.score:
                draft.match_len = match_len
                best = draft
        return best


class CutAtEquality(RuledTree):
    RULES = TreeDraftRules(cut_at_equality=True)


class SecondBranchParentOff(RuledTree):
    RULES = TreeDraftRules(second_branch_parent_off=True)


BROKEN = [CutAtEquality, SecondBranchParentOff]

MACHINE = settings(
    max_examples=100,
    stateful_step_count=40,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)
"""Half the ``ci`` profile's examples (the tree-machine check runs 200 x 40), no shrinking."""


def _pair(tree: type[SuffixTree]) -> list[Implementation]:
    return [
        Implementation(name="arctic_ref", make_tree=SuffixTree),
        Implementation(name="yours", make_tree=tree, rejects_bad_input=False),
    ]


@pytest.mark.parametrize("tree", BROKEN, ids=lambda t: t.__name__)
def test_tree_machine_catches(tree: type[SuffixTree]) -> None:
    """Before: at these settings the machine passed both. With the ``ci`` profile (200 examples x 40
    steps, the tree-machine check's) it passed ``SecondBranchParentOff`` and found ``CutAtEquality``
    only through a random ``speculate`` at min_token_prob 1/3, then shrank for over 5 minutes. Now
    its tree-mode probes (fixed arguments, min_token_prob in {0, 0.25, 0.5, 1}, every field of the
    draft compared) fail each within the first few examples."""
    with pytest.raises(AssertionError, match="tree draft under"):
        run_state_machine_as_test(lambda: SuffixTreeMachine(_pair(tree)), settings=MACHINE)


def test_the_differential_run_catches_the_cut() -> None:
    """The check that caught the cut in the trial still does. (``SecondBranchParentOff`` escapes
    its 200 trials too: only the machine's probes catch it.)"""
    assert run_differential(_pair(CutAtEquality), seed=0, trials=200, steps=40).failures


def test_the_ruled_tree_with_the_intended_rules_is_ours() -> None:
    """The broken trees differ from ours in the swapped step only."""
    run_state_machine_as_test(lambda: SuffixTreeMachine(_pair(RuledTree)), settings=MACHINE)
    assert not run_differential(_pair(RuledTree), seed=0, trials=200, steps=40).failures
