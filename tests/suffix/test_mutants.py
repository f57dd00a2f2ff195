"""The comparisons can fail: mutants of the tree that reintroduce plausible bugs — a wrong tie rule,
upstream's pre-#206 match loop — are caught by the differential run and by the state machine."""

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from arctic_ref.suffix import Draft, SuffixTree
from arctic_ref.suffix.drafting import budgets, path_draft, tree_draft
from arctic_ref.suffix.node import Node
from arctic_ref.testing.suffix_tree.differential import run_differential
from arctic_ref.testing.suffix_tree.tree_machine import Implementation, SuffixTreeMachine, reference_trees


def _always_last(order: list[Node], i: int, old: int) -> None:
    """S2 mutant: an incremented child always becomes the last with its new count."""
    node = order.pop(i)
    j = 0
    while j < len(order) and order[j].count >= node.count:
        j += 1
    order.insert(j, node)


class TieRuleMutant(SuffixTree):
    _promote = staticmethod(_always_last)


class LegacyLoopMutant(SuffixTree):
    """v0.0.9's outer loop: descending from min(len, D), the full context included, strict ``>``."""

    def _speculate_checked(
        self, ctx: list[int], spec_tokens: int, factor: float, offset: float, min_prob: float, tree_mode: bool
    ) -> Draft:
        best = Draft()
        longest = len(ctx) if self._max_depth < 0 else min(len(ctx), self._max_depth)
        limits = budgets(factor, offset, spec_tokens, max(longest, 1))
        for match_len in range(longest, 0, -1):
            found = self._find(ctx, len(ctx) - match_len)
            if found is None:
                continue
            draw = tree_draft if tree_mode else path_draft
            draft = draw(found[0], found[1], limits[match_len], min_prob)
            if draft.score > best.score:
                draft.match_len = match_len
                best = draft
        return best


MUTANTS = [TieRuleMutant, LegacyLoopMutant]


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.__name__)
def test_differential_run_catches(mutant: type[SuffixTree]) -> None:
    impls = [*reference_trees(with_upstream=False), Implementation(name="mutant", make_tree=mutant)]
    report = run_differential(impls, seed=0, trials=60, steps=40)
    assert report.failures, f"{mutant.__name__} survived {report.speculate_calls} compared speculate calls"


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.__name__)
def test_state_machine_catches(mutant: type[SuffixTree]) -> None:
    impls = [*reference_trees(with_upstream=False), Implementation(name="mutant", make_tree=mutant)]
    quick = settings(
        max_examples=300,
        stateful_step_count=40,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    with pytest.raises(AssertionError, match="mutant"):
        run_state_machine_as_test(lambda: SuffixTreeMachine(impls), settings=quick)
