"""Model-based tests: ours, the naive oracle and upstream (when installed) driven side by side."""

import pytest
from hypothesis.stateful import run_state_machine_as_test

from arctic_ref.testing.stateful import (
    SuffixCacheMachine,
    SuffixTreeMachine,
    reference_caches,
    reference_trees,
)
from arctic_ref.testing.upstream import UPSTREAM_AVAILABLE


def test_tree_against_naive_oracle() -> None:
    run_state_machine_as_test(lambda: SuffixTreeMachine(reference_trees(with_upstream=False)))


@pytest.mark.upstream
@pytest.mark.skipif(not UPSTREAM_AVAILABLE, reason="arctic-inference 0.3.0 is not installed")
def test_tree_three_way_with_upstream() -> None:
    run_state_machine_as_test(lambda: SuffixTreeMachine(reference_trees()))


def test_cache_bounds_and_bad_input() -> None:
    run_state_machine_as_test(lambda: SuffixCacheMachine(reference_caches(with_upstream=False)))


@pytest.mark.upstream
@pytest.mark.skipif(not UPSTREAM_AVAILABLE, reason="arctic-inference 0.3.0 is not installed")
def test_cache_against_upstream() -> None:
    run_state_machine_as_test(lambda: SuffixCacheMachine(reference_caches()))
