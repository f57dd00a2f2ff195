"""The kit: checks that point at an implementation (ours or yours) and say whether it conforms.

Needs the ``testing`` extra (Hypothesis and SciPy): ``pip install 'arctic-ref[testing]'``. The
names below are the kit's surface; each loads its module when first used, so importing the package
loads nothing else. One folder per component holds its ``checks.py`` (``load``, ``checks``) beside
the code only that component uses: ``suffix_tree``, ``suffix_cache``, ``sampler``, ``drafter``,
``exchange``, ``engine``, and arctic_ref's own ``drafting``, ``layouts`` and ``model``. The ground
floor holds the check model (``check``), the registry (``front_door``), the report, and what several
components share (the layout matrix, the suffix strategies, worked examples, bad-input tables).
"""

import importlib
import importlib.util
from typing import TYPE_CHECKING, Final


def _missing(names: tuple[str, ...]) -> str | None:
    """The first of ``names`` that cannot be imported (found without importing it), or None."""
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # ValueError: a module blocked with sys.modules[name] = None
            found = False
        if not found:
            return name
    return None


_MISSING = _missing(("hypothesis", "scipy"))
if _MISSING is not None:  # the product itself needs neither; the kit needs both
    raise ImportError(
        f"arctic_ref.testing needs the 'testing' extra (missing: {_MISSING}): pip install 'arctic-ref[testing]'",
        name=_MISSING,
    )

if TYPE_CHECKING:
    from arctic_ref.testing.check import Check, Verdict, run_check
    from arctic_ref.testing.drafting.replays import BUG_REPLAYS
    from arctic_ref.testing.drafting.selection import check_draft_selection
    from arctic_ref.testing.front_door import component_checks, our_checks
    from arctic_ref.testing.layout_matrix import LAYOUTS, compare, run_cases
    from arctic_ref.testing.sampler.kit import check_rejection_sampler
    from arctic_ref.testing.sampler.report import ConformanceReport
    from arctic_ref.testing.sampler.sampler_fn import RejectionSampleFn
    from arctic_ref.testing.suffix_cache.cache_machine import SuffixCacheMachine
    from arctic_ref.testing.suffix_tree.naive_oracle import NaiveSuffixIndex
    from arctic_ref.testing.suffix_tree.tree_machine import Implementation, SuffixTreeMachine, reference_trees

_HOME: Final[dict[str, str]] = {
    "Check": "arctic_ref.testing.check",
    "Verdict": "arctic_ref.testing.check",
    "run_check": "arctic_ref.testing.check",
    "component_checks": "arctic_ref.testing.front_door",
    "our_checks": "arctic_ref.testing.front_door",
    "check_rejection_sampler": "arctic_ref.testing.sampler.kit",
    "ConformanceReport": "arctic_ref.testing.sampler.report",
    "RejectionSampleFn": "arctic_ref.testing.sampler.sampler_fn",
    "NaiveSuffixIndex": "arctic_ref.testing.suffix_tree.naive_oracle",
    "Implementation": "arctic_ref.testing.suffix_tree.tree_machine",
    "SuffixTreeMachine": "arctic_ref.testing.suffix_tree.tree_machine",
    "SuffixCacheMachine": "arctic_ref.testing.suffix_cache.cache_machine",
    "reference_trees": "arctic_ref.testing.suffix_tree.tree_machine",
    "BUG_REPLAYS": "arctic_ref.testing.drafting.replays",
    "check_draft_selection": "arctic_ref.testing.drafting.selection",
    "LAYOUTS": "arctic_ref.testing.layout_matrix",
    "compare": "arctic_ref.testing.layout_matrix",
    "run_cases": "arctic_ref.testing.layout_matrix",
}
"""Where each public name is defined."""

__all__ = [
    "BUG_REPLAYS",
    "LAYOUTS",
    "Check",
    "ConformanceReport",
    "Implementation",
    "NaiveSuffixIndex",
    "RejectionSampleFn",
    "SuffixCacheMachine",
    "SuffixTreeMachine",
    "Verdict",
    "check_draft_selection",
    "check_rejection_sampler",
    "compare",
    "component_checks",
    "our_checks",
    "reference_trees",
    "run_cases",
    "run_check",
]
assert sorted(__all__) == sorted(_HOME)


def __getattr__(name: str) -> object:
    """Load a public name's module on first use (PEP 562), so each component's checks import on
    their own: the sampler kit never loads the layout matrix's process launcher."""
    if name not in _HOME:
        raise AttributeError(f"module 'arctic_ref.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)
