"""Issue 38's proof that the engine checks catch bugs: each broken engine of examples/broken-engines
(vLLM 0.32 with one fault planted in its own instances) fails the check named for it, with a
first failure that names the case. Runs in the vLLM environment only (scripts/test-vllm.sh); the
two fastest (one per kind of check: lossless, drafts) run by default, the rest are marked ``slow``. Times and runs: docs/engine-bugs.md."""

import re
from pathlib import Path
from typing import Final

import pytest

# Not "vllm" itself: tests/ is on sys.path under pytest, and tests/vllm imports as a namespace package.
pytest.importorskip("vllm.sampling_params", reason="vLLM is not installed (scripts/test-vllm.sh)")

from arctic_ref.check_options import CheckOptions
from arctic_ref.testing.check import Verdict, run_and_settle
from arctic_ref.testing.front_door import component_checks, select

BROKEN_ENGINES: Final = Path(__file__).resolve().parents[2] / "examples" / "broken-engines"
SPEC_ON: Final = r"(ngram|suffix) k=\d+"
CASE: Final = {
    "lossless": re.compile(rf"^{SPEC_ON}, .* vs spec off: request \d+ \(.+\) position \d+: expected \d+, got \d+"),
    "drafts": re.compile(rf"^{SPEC_ON}, .*, request \d+ \(.+\): the engine counted .*; its semantics predict"),
    "distribution": re.compile(
        rf"(^|; ){SPEC_ON}( vs spec off)? / T=[^;]*(position \d+: (chi-square|two-sample) p = |accepted − expected = )"
    ),
}
"""The first failure each check must report: the configuration, the request and, where the check has
one, the position (``distribution``: a statistical test, not a crash)."""
OVERRUN: Final = re.compile(
    rf"^{SPEC_ON}, .*(request \d+ \(.+\): the engine counted"
    r"|batch \d+: generate raised AssertionError: Sampled token IDs exceed the max model length)"
)
"""The overrun is seen either in the counters (an extra draft token counted near max_model_len) or,
when every draft of that step is accepted, by vLLM's model runner refusing M + 1 tokens: both name
the setup and the request (``batch`` i is request i, the ``drafts`` check sends one at a time)."""

slow = pytest.mark.slow
ENGINES: Final = [
    # Default: two of the fastest, one per kind of check (about a minute each on 2 cores,
    # docs/engine-bugs.md); the rest are slow, to keep CI within its budget.
    pytest.param("overrun_max_model_len", "drafts", id="overrun_max_model_len-drafts", marks=slow),
    pytest.param("pattern_one_short", "drafts", id="pattern_one_short-drafts"),
    pytest.param("greedy_changes_with_ngram", "lossless", id="F-6-greedy_changes_with_ngram-lossless"),
    pytest.param("suffix_cache_off_by_one", "drafts", id="suffix_cache_off_by_one-drafts", marks=slow),
    pytest.param("kv_of_rejected_drafts", "lossless", id="F-1-kv_of_rejected_drafts-lossless", marks=slow),
    pytest.param("long_draft_corruption", "lossless", id="F-3-long_draft_corruption-lossless", marks=slow),
    pytest.param("scaled_uniforms", "distribution", id="scaled_uniforms-distribution", marks=slow),
    pytest.param("recovered_wrong_zeroed", "distribution", id="recovered_wrong_zeroed-distribution", marks=slow),
    pytest.param("batch_corruption", "distribution", id="F-2-batch_corruption-distribution", marks=slow),
]


def verdict_of(engine: str, check_id: str) -> Verdict:
    checks = component_checks(
        "engine", f"broken_engines.vllm_engines:{engine}", CheckOptions(), base_dir=BROKEN_ENGINES
    )
    (check,) = select(checks, [check_id])
    return run_and_settle(check, strict=False)


@pytest.mark.parametrize(("engine", "check_id"), ENGINES)
def test_broken_engine_fails_its_check(engine: str, check_id: str) -> None:
    verdict = verdict_of(engine, check_id)
    assert not verdict.passed, f"{engine} passed {check_id}: {verdict}"
    assert not verdict.known_difference, f"{engine}'s failure was taken for a known upstream bug: {verdict}"
    case = OVERRUN if engine == "overrun_max_model_len" else CASE[check_id]
    assert case.search(verdict.detail), f"the failure does not name its case: {verdict.detail}"


@slow
def test_the_control_passes_distribution() -> None:
    """The engine every broken one is built on (vLLM with V-20 and V-17 repaired) passes outright:
    a broken engine's ``distribution`` failure is its fault's, not vLLM's."""
    verdict = verdict_of("repaired", "distribution")
    assert verdict.passed and not verdict.known_difference, verdict
