"""The kit: checks that point at an implementation (ours or yours) and say whether it conforms.

Needs the ``testing`` extra (Hypothesis and SciPy): ``pip install 'arctic-ref[testing]'``.
Everything a user imports is named in ``__all__`` below; the sub-packages hold the rest:

- ``suffix``: the naive suffix oracle, Hypothesis strategies, the tree and cache state machines,
  adapters over upstream's C++ (suffix-decoding.md §9);
- ``rejection``: the rejection-sampler conformance kit, exact and statistical (verification.md §6);
- ``drafts``: the draft-selection suite, the seed's bug replays, the replays in a running runner
  (verification.md §4, runner.md §2.6);
- ``layouts``: the layout matrix and the multi-rank checks (parallel.md §5);
- ``hf``: transformers as an oracle for the model (runner.md §3.7).
"""

try:
    import hypothesis
    import scipy
except ImportError as error:  # the product itself needs neither; the kit needs both
    raise ImportError(
        f"arctic_ref.testing needs the 'testing' extra (missing: {error.name}): pip install 'arctic-ref[testing]'"
    ) from error

from arctic_ref.testing.battery import BatteryResult, Outcome
from arctic_ref.testing.check import BATTERY_IDS, format_report, run_batteries
from arctic_ref.testing.drafts.in_runner import (
    RunnerReplayResult,
    check_replay_in_runner,
    check_replays_in_runner,
    check_runner_replay,
)
from arctic_ref.testing.drafts.replays import BUG_REPLAYS, BugReplay, replay_by_id
from arctic_ref.testing.drafts.runner_replays import RUNNER_REPLAYS, RunnerReplay
from arctic_ref.testing.drafts.selection import SelectionCheck, check_draft_selection
from arctic_ref.testing.layouts.cross_mode import check_cross_mode
from arctic_ref.testing.layouts.exchanges import check_exchanges, check_kv_invariance, check_logits_order
from arctic_ref.testing.layouts.isolation import check_interleaved_layouts
from arctic_ref.testing.layouts.matrix import (
    L9,
    LAYOUTS,
    TOLERANCE,
    Comparison,
    LayoutCase,
    LayoutOutcome,
    compare,
    run_case,
    run_cases,
    run_world,
)
from arctic_ref.testing.layouts.rank_figure import RankFigure
from arctic_ref.testing.layouts.volume_check import check_volumes
from arctic_ref.testing.rejection.kit import check_rejection_sampler
from arctic_ref.testing.rejection.report import CheckResult, ConformanceReport, RejectionSampleFn, Status
from arctic_ref.testing.suffix.differential import DifferentialReport, run_differential
from arctic_ref.testing.suffix.machines import (
    CacheImplementation,
    Implementation,
    SuffixCacheMachine,
    SuffixTreeMachine,
    reference_caches,
    reference_trees,
)
from arctic_ref.testing.suffix.oracles import NaiveSuffixIndex
from arctic_ref.testing.suffix.strategies import SpeculateArgs, bad_tokens, copied_tokens, speculate_args, token_lists
from arctic_ref.testing.suffix.upstream import UPSTREAM_AVAILABLE, UpstreamSuffixDecodingCache, UpstreamSuffixTree

del hypothesis, scipy

__all__ = [
    "BATTERY_IDS",
    "BUG_REPLAYS",
    "L9",
    "LAYOUTS",
    "RUNNER_REPLAYS",
    "TOLERANCE",
    "UPSTREAM_AVAILABLE",
    "BatteryResult",
    "BugReplay",
    "CacheImplementation",
    "CheckResult",
    "Comparison",
    "ConformanceReport",
    "DifferentialReport",
    "Implementation",
    "LayoutCase",
    "LayoutOutcome",
    "NaiveSuffixIndex",
    "Outcome",
    "RankFigure",
    "RejectionSampleFn",
    "RunnerReplay",
    "RunnerReplayResult",
    "SelectionCheck",
    "SpeculateArgs",
    "Status",
    "SuffixCacheMachine",
    "SuffixTreeMachine",
    "UpstreamSuffixDecodingCache",
    "UpstreamSuffixTree",
    "bad_tokens",
    "check_cross_mode",
    "check_draft_selection",
    "check_exchanges",
    "check_interleaved_layouts",
    "check_kv_invariance",
    "check_logits_order",
    "check_rejection_sampler",
    "check_replay_in_runner",
    "check_replays_in_runner",
    "check_runner_replay",
    "check_volumes",
    "compare",
    "copied_tokens",
    "format_report",
    "reference_caches",
    "reference_trees",
    "replay_by_id",
    "run_batteries",
    "run_case",
    "run_cases",
    "run_differential",
    "run_world",
    "speculate_args",
    "token_lists",
]
