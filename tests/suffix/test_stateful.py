"""Model-based tests: ours, the naive oracle and upstream (when installed) driven side by side."""

from collections import Counter

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from arctic_ref.suffix.upstream import UPSTREAM_AVAILABLE
from arctic_ref.testing.suffix_cache.cache_machine import SuffixCacheMachine, reference_caches
from arctic_ref.testing.suffix_tree.tree_machine import SuffixTreeMachine, reference_trees

needs_upstream = pytest.mark.skipif(not UPSTREAM_AVAILABLE, reason="arctic-inference 0.3.0 is not installed")

# The tree machines run twice the profile's examples, the cache machine against upstream three times
# (its speculate calls per example fell when copied_tokens began to draw periodic runs): the faster
# extend (issue 14) paid for them.
TREE_MACHINE = settings(settings.default, max_examples=2 * settings.default.max_examples)
CACHE_MACHINE = settings(settings.default, max_examples=3 * settings.default.max_examples)


def test_tree_against_naive_oracle(comparisons: Counter[str]) -> None:
    machines: list[SuffixTreeMachine] = []
    run_state_machine_as_test(
        lambda: machines.append(SuffixTreeMachine(reference_trees(with_upstream=False))) or machines[-1],
        settings=TREE_MACHINE,
    )
    comparisons["naive oracle (tree machine)"] += sum(m.compared for m in machines)
    comparisons["naive oracle (tree machine, tree-mode probes)"] += sum(m.tree_probes for m in machines)


@pytest.mark.upstream
@needs_upstream
def test_tree_three_way_with_upstream(comparisons: Counter[str]) -> None:
    machines: list[SuffixTreeMachine] = []
    run_state_machine_as_test(
        lambda: machines.append(SuffixTreeMachine(reference_trees())) or machines[-1], settings=TREE_MACHINE
    )
    comparisons["upstream (tree machine)"] += sum(m.compared for m in machines)
    comparisons["upstream (tree machine, tree-mode probes)"] += sum(m.tree_probes for m in machines)


def test_cache_bounds_and_bad_input() -> None:
    run_state_machine_as_test(lambda: SuffixCacheMachine(reference_caches(with_upstream=False)))


@pytest.mark.upstream
@needs_upstream
def test_cache_against_upstream(comparisons: Counter[str]) -> None:
    machines: list[SuffixCacheMachine] = []
    run_state_machine_as_test(
        lambda: machines.append(SuffixCacheMachine(reference_caches())) or machines[-1], settings=CACHE_MACHINE
    )
    comparisons["upstream (cache machine)"] += sum(m.compared for m in machines)
