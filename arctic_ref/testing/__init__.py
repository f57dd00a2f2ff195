"""The kit: checks that point at an implementation (ours or yours) and say whether it conforms.

Needs the ``testing`` extra (Hypothesis and SciPy): ``pip install 'arctic-ref[testing]'``. The
names below are the kit's surface; each loads its module when first used, so importing the package
loads nothing else. The sub-packages hold the rest:

- ``check``, ``front_door``, ``report``: the one check model (``Check``, ``Verdict``), the list of
  checks per component, the report; ``components/``: one module of named checks per component;
- ``suffix``: the naive suffix oracle, Hypothesis strategies, the tree and cache state machines
  (docs/suffix-decoding.md §9);
- ``sampler``: the rejection-sampler conformance kit, exact and statistical (docs/verification.md §6);
- ``drafts``: the draft-selection suite, the seed's bug replays, the replays in a running runner
  (docs/verification.md §4, docs/runner.md §2.6);
- ``layouts``: the layout matrix and the multi-rank checks (docs/parallel.md §5);
- ``hf``: transformers as an oracle for the model (docs/runner.md §3.7).
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
    from arctic_ref.testing.drafts.replays import BUG_REPLAYS
    from arctic_ref.testing.drafts.selection import check_draft_selection
    from arctic_ref.testing.front_door import component_checks, our_checks
    from arctic_ref.testing.layouts.matrix import LAYOUTS, compare, run_cases
    from arctic_ref.testing.sampler.kit import check_rejection_sampler
    from arctic_ref.testing.sampler.report import ConformanceReport
    from arctic_ref.testing.sampler.sampler_fn import RejectionSampleFn
    from arctic_ref.testing.suffix.machines import (
        Implementation,
        SuffixCacheMachine,
        SuffixTreeMachine,
        reference_trees,
    )
    from arctic_ref.testing.suffix.oracles import NaiveSuffixIndex

_HOME: Final[dict[str, str]] = {
    "Check": "arctic_ref.testing.check",
    "Verdict": "arctic_ref.testing.check",
    "run_check": "arctic_ref.testing.check",
    "component_checks": "arctic_ref.testing.front_door",
    "our_checks": "arctic_ref.testing.front_door",
    "check_rejection_sampler": "arctic_ref.testing.sampler.kit",
    "ConformanceReport": "arctic_ref.testing.sampler.report",
    "RejectionSampleFn": "arctic_ref.testing.sampler.sampler_fn",
    "NaiveSuffixIndex": "arctic_ref.testing.suffix.oracles",
    "Implementation": "arctic_ref.testing.suffix.machines",
    "SuffixTreeMachine": "arctic_ref.testing.suffix.machines",
    "SuffixCacheMachine": "arctic_ref.testing.suffix.machines",
    "reference_trees": "arctic_ref.testing.suffix.machines",
    "BUG_REPLAYS": "arctic_ref.testing.drafts.replays",
    "check_draft_selection": "arctic_ref.testing.drafts.selection",
    "LAYOUTS": "arctic_ref.testing.layouts.matrix",
    "compare": "arctic_ref.testing.layouts.matrix",
    "run_cases": "arctic_ref.testing.layouts.matrix",
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
