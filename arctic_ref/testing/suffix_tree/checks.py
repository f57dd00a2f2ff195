"""The suffix-tree component: checks of any object with arctic-inference 0.3.0's ``SuffixTree`` API
(``extend``, ``remove``, ``speculate``, ``num_seqs``), built by ``factory(max_depth)`` or
``factory()``. Yours is compared with arctic_ref's tree; ours with the independent oracles instead
(the brute-force scan and upstream's C++), since comparing ours with itself proves nothing."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import settings

from arctic_ref.check_options import CheckOptions
from arctic_ref.suffix.tree import SuffixTree
from arctic_ref.suffix.upstream import UPSTREAM_AVAILABLE
from arctic_ref.testing.check import Check, Verdict
from arctic_ref.testing.loading import arity, build, load_target, require_callable, require_methods
from arctic_ref.testing.machine_verdict import machine_verdict
from arctic_ref.testing.profiles import register_profiles
from arctic_ref.testing.suffix_tree.differential import run_differential
from arctic_ref.testing.suffix_tree.tree_bad_input import tree_bad_input
from arctic_ref.testing.suffix_tree.tree_examples import TREE_EXAMPLES, TreeFactory
from arctic_ref.testing.suffix_tree.tree_machine import Implementation, SuffixTreeMachine, reference_trees
from arctic_ref.testing.worked_examples import examples_verdict

TREE_METHODS = ("extend", "remove", "speculate", "num_seqs")


def load(value: str, options: CheckOptions, base_dir: Path | None) -> TreeFactory:
    """``make(max_depth)`` over the factory ``value`` names, after one probe tree showed the API."""
    option = options.option("suffix-tree")
    factory: Callable[..., Any] = require_callable(option, value, load_target(option, value, base_dir=base_dir))
    params = arity(option, value, factory, 1)
    require_methods(option, value, build(option, value, factory, *([64] * params)), TREE_METHODS)
    if params:
        return lambda depth: factory(depth)
    return lambda depth: factory()


def checks(make_tree: TreeFactory | None, options: CheckOptions) -> list[Check]:
    """Yours: the state machine and the seeded differential run against arctic_ref, the worked
    examples and the bad-input table. Ours (``None``): the worked examples, the bad-input table, and
    the differential runs against the naive oracle and against upstream."""
    register_profiles()
    profile = settings.get_profile(options.hypothesis_profile)
    if make_tree is None:
        return [
            _differential_vs_naive(),
            _differential_vs_upstream(),
            _worked_examples(SuffixTree),
            _bad_input(SuffixTree),
        ]
    reference = Implementation(name="arctic_ref", make_tree=SuffixTree)
    yours = Implementation(name="yours", make_tree=make_tree, rejects_bad_input=False)
    return [
        Check(
            component="suffix-tree",
            id="tree-machine",
            run=lambda: machine_verdict(
                lambda: SuffixTreeMachine([reference, yours]),
                profile,
                "extend/remove/speculate sequences with many ties against arctic_ref's tree",
                "tree-machine",
            ),
            meaning="a state machine drives your tree and arctic_ref's side by side: same drafts, bit for bit",
        ),
        Check(
            component="suffix-tree",
            id="differential",
            run=lambda: _differential([reference, yours]),
            meaning="200 seeded trials of 40 operations (ties, removals, edge parameters): same drafts",
        ),
        _worked_examples(make_tree),
        _bad_input(make_tree),
    ]


def _differential(impls: list[Implementation]) -> Verdict:
    report = run_differential(impls, seed=0, trials=200, steps=40)
    return Verdict(
        passed=not report.failures,
        compared=f"{report.speculate_calls} speculate results of {report.operations} seeded operations with arctic_ref's",
        count=report.speculate_calls,
        detail=report.failures[0] if report.failures else "",
        replay="run_differential([reference, yours], seed=0, trials=200, steps=40) from arctic_ref.testing",
    )


def _worked_examples(make_tree: TreeFactory) -> Check:
    return Check(
        component="suffix-tree",
        id="worked-examples",
        run=lambda: examples_verdict(TREE_EXAMPLES, make_tree),
        meaning="docs/suffix-decoding.md's worked examples: tie order is history, tree mode, budget fallbacks, E2, E5",
    )


def _bad_input(make_tree: TreeFactory) -> Check:
    return Check(
        component="suffix-tree",
        id="bad-input",
        run=lambda: tree_bad_input(make_tree),
        meaning="rejected inputs raise ValueError or TypeError and change nothing (X2-X5 reported)",
    )


def _differential_vs_naive(seed: int = 0) -> Check:
    def run() -> Verdict:
        report = run_differential(reference_trees(with_upstream=False), seed=seed, trials=120, steps=40)
        return Verdict(
            passed=not report.failures,
            compared="arctic_ref's tree against the brute-force scan",
            count=report.speculate_calls,
            figures={"trials": str(report.trials), "ops": str(report.operations)},
            detail=report.failures[0] if report.failures else "",
        )

    return Check(
        component="suffix-tree",
        id="suffix-naive",
        title="suffix tree vs naive oracle (random ops)",
        meaning="120 seeded trials of 40 operations: arctic_ref's drafts equal the brute-force scan's",
        run=run,
    )


def _differential_vs_upstream(seed: int = 0) -> Check:
    def run() -> Verdict:
        if not UPSTREAM_AVAILABLE:
            return Verdict(passed=True, skipped="arctic-inference not installed")
        impls = [impl for impl in reference_trees() if impl.name != "naive"]
        report = run_differential(impls, seed=seed, trials=400, steps=40)
        return Verdict(
            passed=not report.failures,
            compared="arctic_ref's tree against upstream's C++ tree",
            count=report.speculate_calls,
            figures={"trials": str(report.trials), "ops": str(report.operations)},
            detail=report.failures[0] if report.failures else "",
        )

    return Check(
        component="suffix-tree",
        id="suffix-upstream",
        title="suffix tree vs upstream C++ (random ops)",
        meaning="400 seeded trials of 40 operations: arctic_ref's drafts equal arctic-inference 0.3.0's, bit for bit",
        run=run,
    )
