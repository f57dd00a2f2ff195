"""The rejection-sampler kit's checks, one row each (as PyTorch's OpInfo gives each operator one
declarative entry that every test derives from): what passing proves, its category, the routes it
runs on, the known upstream difference that excuses its failure, and the code that runs it. The
pytest plugin, ``arctic-ref check --impl``, the kit and the docs read this table; ``MEANINGS``,
``CATEGORIES``, ``KNOWN_DIFFERENCE_OF_CHECK`` and ``VLLM_0_32_DIFFERENCES`` derive from it.

Categories:

- ``"semantics"``: what any correct rejection sampler with vLLM's argument list computes on valid
  input (docs/verification.md §1.3–§2, §5): output layout, acceptance, recovery, draw order, masks, no
  mutation, and refusing a ``max_spec_len`` over the limit instead of truncating.
- ``"strict"``: arctic_ref's stricter input contract (docs/verification.md §1.2): malformed shapes and
  counts, contradictory greedy flags and NaN rows (field bug F-4) raise ``ValueError``. A sampler that
  validates elsewhere, or follows vLLM 0.9.2 (which checks none of these), may leave them out:
  ``check_rejection_sampler(..., categories=("semantics",))`` reports them as skipped.

Routes (how an exact check knows the randomness a random row uses, ``kit.py``): ``"A"``, the kit
injects u and E through the candidate's ``with_noise``; ``"B"``, every random request gets a seeded
generator and the kit predicts its draws on clones. A check of one route only is skipped on the
other, with the row's ``off_route`` reason. Statistical checks need neither.

Importing this module raises ``TableError`` when the table and the check ids (``check_ids.py``,
the names the code records verdicts under) disagree: an id without a row, a row without an id.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from arctic_ref.check_options import SamplerCategory
from arctic_ref.testing.sampler import check_ids as ids
from arctic_ref.testing.sampler import exact
from arctic_ref.testing.sampler.exact import ExactScenario
from arctic_ref.testing.sampler.stats import StatisticalRun, statistical_checks

Route = Literal["A", "B"]
BOTH: Final[frozenset[Route]] = frozenset({"A", "B"})

StatisticalBattery = Callable[..., StatisticalRun]
"""S1–S5's one run (``stats.statistical_checks``): every statistical check's verdict at once."""


class TableError(Exception):
    """The check table and the check ids disagree (see the module docstring)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplerCheck:
    """One check of the kit."""

    id: str
    """One of ``check_ids.py``'s names: the id every report and selection uses."""
    meaning: str
    """One line: what passing proves."""
    category: SamplerCategory = "semantics"
    routes: frozenset[Route] = BOTH
    """The routes the check runs on (exact checks); a statistical check runs on any sampler."""
    off_route: str = ""
    """Why a candidate of a route not in ``routes`` skips it."""
    difference: str = ""
    """The known upstream difference (docs/verification.md §2.4, X1–X6) that explains its failure:
    reported, and a failure only under ``--arctic-ref-strict``, when the caller names it."""
    fails_on_vllm_0_32: bool = False
    """Whether vLLM 0.32's own ``RejectionSampler`` fails it, by ``difference``: the differences of
    these rows are ``VLLM_0_32_DIFFERENCES``."""
    exact: ExactScenario | None = None
    """The scenario that records it (``exact.py``), for an exact check."""
    statistical: StatisticalBattery | None = None
    """The statistical battery that reports it (``stats.py``), for a statistical check."""

    @property
    def kind(self) -> Literal["exact", "statistical"]:
        return "exact" if self.exact is not None else "statistical"


def _exact(
    check_id: str,
    meaning: str,
    scenario: ExactScenario,
    *,
    category: SamplerCategory = "semantics",
    routes: frozenset[Route] = BOTH,
    off_route: str = "",
    difference: str = "",
    fails_on_vllm_0_32: bool = False,
) -> SamplerCheck:
    return SamplerCheck(
        id=check_id,
        meaning=meaning,
        exact=scenario,
        category=category,
        routes=routes,
        off_route=off_route,
        difference=difference,
        fails_on_vllm_0_32=fails_on_vllm_0_32,
    )


def _statistical(check_id: str, meaning: str) -> SamplerCheck:
    return SamplerCheck(id=check_id, meaning=meaning, statistical=statistical_checks)


ROUTE_A: Final[frozenset[Route]] = frozenset({"A"})
ROUTE_B: Final[frozenset[Route]] = frozenset({"B"})
_STRICT: Final[SamplerCategory] = "strict"

SAMPLER_CHECKS: Final[tuple[SamplerCheck, ...]] = (
    _exact(ids.E1, "output shape [B, max_spec_len+1], int32, on the logits' device", exact.corpus_cases),
    _exact(ids.E2, "rows left-packed, 1 <= L <= n+1, -1 after the prefix", exact.corpus_cases),
    _exact(ids.E3, "the accepted prefix equals the drafts; a rejected draft is not re-emitted", exact.corpus_cases),
    _exact(ids.E4, "all drafts accepted <=> the row ends with the bonus token", exact.corpus_cases),
    _exact(ids.E5, "greedy rows follow the argmax rule, independent of noise and other rows", exact.e5_greedy),
    _exact(
        ids.E6,
        "a zero-probability draft is never accepted; probability 1 always is",
        exact.e6_zero_probability,
        routes=ROUTE_A,
        off_route="needs injected u = 0 (route A)",
        difference="X1",
    ),
    _exact(ids.E7, "a recovered id is in the vocabulary with positive residual probability", exact.corpus_cases),
    _exact(
        ids.E8,
        "acceptance and recovery equal the closed-form rule bit for bit (known randomness)",
        exact.corpus_cases,
    ),
    _exact(ids.E9, "one-hot draft_probs give the output of draft_probs=None", exact.e9_one_hot),
    _exact(
        ids.E10,
        "permuting or splitting the batch permutes or splits the output",
        exact.e10_permutation,
        routes=ROUTE_A,
        off_route="needs injected noise rows to permute (route A)",
    ),
    _exact(
        ids.E11,
        "greedy and draft-less rows advance no generator",
        exact.e11_generators,
        difference="X4",
        fails_on_vllm_0_32=True,
    ),
    _exact(ids.E12, "a seeded row draws n uniforms then V exponentials, as on a clone", exact.e12_identity),
    _exact(ids.E13, "a seeded row depends only on its own inputs and generator", exact.e13_seeded_isolation),
    _exact(ids.E14, "no argument is mutated", exact.corpus_cases, difference="X6"),
    _exact(
        ids.E15_SPEC_LEN,
        "max_spec_len over the profile's limit (33; 129 under vllm-0.32) is an error, never a "
        "truncation: any ValueError (vLLM 0.9.2 and 0.32 profiles: also vLLM's AssertionError)",
        exact.e15_errors,  # a crash outside the candidate call is charged here, its first row
        difference="X5",
        fails_on_vllm_0_32=True,
    ),
    _exact(
        ids.E15_SHAPES,
        "strict: malformed shapes and counts raise ValueError (draft ids outside [0, V), "
        "cu_num_draft_tokens != cumsum, max_spec_len < max(n))",
        exact.e15_errors,
        category=_STRICT,
        difference="X5",
    ),
    _exact(
        ids.E15_FLAGS,
        "strict: all_greedy/all_random flags that contradict the temperatures raise ValueError",
        exact.e15_errors,
        category=_STRICT,
        difference="X4",
        fails_on_vllm_0_32=True,
    ),
    _exact(
        ids.E15_NAN,
        "strict: NaN in a random row's logits raises ValueError instead of emitting from it (F-4)",
        exact.e15_errors,
        category=_STRICT,
        difference="X3",
        fails_on_vllm_0_32=True,
    ),
    _exact(ids.E16, "temperatures below 1e-5 are greedy, 1e-5 is random", exact.e16_greedy_threshold, difference="X4"),
    _exact(ids.E17, "temperature -> top-k (ties kept) -> top-p (maximum kept) on hand-built rows", exact.e17_masks),
    _exact(ids.E18, "parse_output returns exactly the emitted lists", exact.e18_parse),
    _exact(
        ids.E20, "greedy speculative generation equals plain greedy decoding, with six drafters", exact.e20_generation
    ),
    _exact(
        ids.RNG_ORDER,
        "per-request generators advance in vLLM's order (predicted on clones)",
        exact.corpus_cases,
        routes=ROUTE_B,
        off_route="noise is injected (route A)",
    ),
    _statistical(
        ids.S1, "per position, conditional on emission, tokens follow the target (chi-square, family alpha 1e-4)"
    ),
    _statistical(ids.S2, "acceptance rate inside a 5-sigma band at every position; mean emitted length matches"),
    _statistical(ids.S3, "conditional on rejection, the recovered token follows the residual (chi-square)"),
    _statistical(ids.S4, "the exponential race alone follows w / sum(w) (chi-square)"),
    _statistical(ids.S5, "drafts never change the output distribution (exact 216-sequence GOF, chi-square)"),
    _statistical(ids.S5_SPEED, "an oracle drafter needs fewer verification steps than no drafter"),
    _statistical(ids.S_DESIGN, "every tested (position, branch) got enough conditional samples"),
)
"""Every check of the kit, in report order."""


def table_problems(rows: Sequence[SamplerCheck], declared: Sequence[str]) -> list[str]:
    """What is wrong with ``rows`` against the ``declared`` check ids: an id recorded by the code
    without a row, a row whose id no code records, a repeated row, a row that is neither exact nor
    statistical (or both), a route restriction without its reason, a strict check whose meaning
    does not say so, a statistical check excused by an upstream difference."""
    problems = []
    row_ids = [row.id for row in rows]
    problems += [f"check {i} has no row" for i in declared if i not in row_ids]
    problems += [f"row {i} is no check (not in check_ids.py)" for i in row_ids if i not in declared]
    problems += [f"row {i} is repeated" for i in sorted(set(row_ids)) if row_ids.count(i) > 1]
    for row in rows:
        if (row.exact is None) == (row.statistical is None):
            problems.append(f"row {row.id} must name exactly one of exact, statistical")
        if not row.routes or (row.routes != BOTH) != bool(row.off_route):
            problems.append(f"row {row.id}: routes {sorted(row.routes)} with off_route {row.off_route!r}")
        if (row.category == _STRICT) != row.meaning.startswith("strict:"):
            problems.append(f"row {row.id}: category {row.category!r} and meaning {row.meaning!r} disagree")
        if row.statistical is not None and (row.difference or row.routes != BOTH):
            problems.append(f"row {row.id}: a statistical check has no route and no known difference")
        if row.fails_on_vllm_0_32 and not row.difference:
            problems.append(f"row {row.id}: fails_on_vllm_0_32 without a difference")
    return problems


def require_consistent(rows: Sequence[SamplerCheck], declared: Sequence[str]) -> None:
    """Raise ``TableError`` listing ``table_problems``, if any."""
    problems = table_problems(rows, declared)
    if problems:
        raise TableError("the sampler check table disagrees with check_ids.py: " + "; ".join(problems))


require_consistent(SAMPLER_CHECKS, ids.declared_ids())

CHECK_OF: Final[dict[str, SamplerCheck]] = {row.id: row for row in SAMPLER_CHECKS}
MEANINGS: Final[dict[str, str]] = {row.id: row.meaning for row in SAMPLER_CHECKS}
CATEGORIES: Final[dict[str, SamplerCategory]] = {row.id: row.category for row in SAMPLER_CHECKS}
KNOWN_DIFFERENCE_OF_CHECK: Final[dict[str, str]] = {row.id: row.difference for row in SAMPLER_CHECKS if row.difference}
"""Which check a known upstream difference (docs/verification.md §2.4) explains. vLLM 0.9.2
validates neither lengths nor shapes (X5's rows), nor greedy flags (X4), nor NaN rows (X3)."""
VLLM_0_32_DIFFERENCES: Final[tuple[str, ...]] = tuple(
    sorted({row.difference for row in SAMPLER_CHECKS if row.fails_on_vllm_0_32})
)
"""The differences the kit reports on vLLM 0.32's own ``RejectionSampler`` class
(``vllm_class.py``): X3, a NaN row is sampled from, not refused (E15-NAN); X4, greedy flags are
not validated (E15-FLAGS) and a greedy row's generator advances (E11: vLLM never gives a greedy
request one, its rows with drafts draw from any generator they are given); X5, ``max_spec_len``
is not checked against 32 (E15-SPEC-LEN under a profile whose limit is 32: vLLM's is 128, where it
asserts). Not X1, X2 or X6: E8 and E14 pass, and E6 needs injected noise."""
EXACT_SCENARIOS: Final[tuple[tuple[str, ExactScenario], ...]] = tuple(
    (row.id, row.exact) for row in SAMPLER_CHECKS if row.exact is not None
)
"""(check id, scenario) of every exact check, for ``exact.exact_checks``."""
