"""Worked examples of docs/suffix-decoding.md as checks of any implementation: each takes a factory and
returns "" or what differed. The tree's examples are in ``suffix_tree.tree_examples``, the cache's in
``suffix_cache.cache_examples``; this runs a tuple of them and states the verdict."""

from collections.abc import Callable
from typing import Any

from arctic_ref.testing.check import Verdict


def expect(label: str, got: object, wanted: object) -> str:
    return "" if got == wanted else f"{label}: got {got!r}, expected {wanted!r}"


def run_examples(examples: tuple[Callable[[Any], str], ...], make: Any) -> list[str]:
    """``"name: problem"`` for every example that fails (an exception is a failure, named)."""
    problems = []
    for example in examples:
        try:
            problem = example(make)
        except Exception as error:  # the implementation's exception is the finding
            problem = f"raised {type(error).__name__}: {error}"
        if problem:
            problems.append(f"{example.__name__}: {problem}")
    return problems


def examples_verdict(examples: tuple[Callable[[Any], str], ...], make: Any) -> Verdict:
    problems = run_examples(examples, make)
    return Verdict(
        passed=not problems,
        count=len(examples),
        compared=f"{len(examples)} worked examples of docs/suffix-decoding.md",
        detail="; ".join(problems),
        replay=f"{examples[0].__module__}.<name>(your factory)",  # the module that holds them
    )
