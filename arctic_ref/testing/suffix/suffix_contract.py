"""The bodies of the suffix components' checks (docs/suffix-decoding.md): the
state machine side by side with the reference, deterministic gates beside it (the seeded
differential run, the code-edit replay, drafts field for field and float32 bit for bit), and the
bad-input table, where upstream's deviations X1–X7 are reported as known differences."""

from collections.abc import Callable
from typing import Any

from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.database import InMemoryExampleDatabase
from hypothesis.errors import Flaky
from hypothesis.stateful import initialize, run_state_machine_as_test

from arctic_ref.suffix.cache import SuffixDecodingCache
from arctic_ref.suffix.simulate import SimulationConfig, replay
from arctic_ref.suffix.validate import INT32_MAX, INT32_MIN
from arctic_ref.suffix.workload import code_edit_trace
from arctic_ref.testing.check import CheckTimeout, Verdict, describe_exception, time_limit
from arctic_ref.testing.suffix.examples import run_examples
from arctic_ref.testing.suffix.machines import (
    PackedDraft,
    SuffixCacheMachine,
    pack,
)

TREE_METHODS = ("extend", "remove", "speculate", "num_seqs")
CACHE_METHODS = ("start_request", "add_active_response", "stop_request", "evict_cached_response", "speculate")
PROBES = ([1], [1, 2], [2, 3], [3, 1, 2], [5], [1, 2, 3, 4])
"""Contexts whose drafts stand for an opaque tree's state."""


def first_field_difference(ours: PackedDraft, theirs: PackedDraft) -> str:
    """The first field where two packed drafts differ (floats as float32 bits), or ""; float
    fields show both drafts whole, labelled, with decimals beside their bits."""
    for name, mine, other in zip(PackedDraft._fields, ours, theirs, strict=True):
        if mine != other:
            if isinstance(mine, bytes):
                return f"{name}: arctic_ref {ours!r} vs yours {theirs!r}"
            return f"{name}: arctic_ref {mine} vs yours {other}"
    return ""


def _from_replay(packed: tuple[object, ...]) -> PackedDraft:
    """``simulate.pack_draft``'s tuple (same field order) as a ``PackedDraft``."""
    token_ids, parents, probs, score, match_len = packed
    return PackedDraft(list(token_ids), list(parents), probs, score, match_len)  # type: ignore[call-overload, arg-type]


SHRINK_SECONDS = 60.0
"""How long a failing state machine may shrink its example before the unshrunk one is reported."""


def machine_verdict(make: Callable[[], Any], profile: settings, what: str, check_id: str) -> Verdict:
    """Run the state machine ``make`` builds under ``profile``. A failure is reported as soon as it
    is found: the first run does not shrink; a second run shrinks it for at most ``SHRINK_SECONDS``,
    and the unshrunk example stands if shrinking is cut off or Hypothesis finds the rerun flaky.
    Both runs share a private in-memory example database, so the second starts from the failure
    and neither writes to the user's ``.hypothesis`` folder."""
    compared = f"{what}, {profile.max_examples} runs of up to {profile.stateful_step_count} steps"
    if profile.derandomize:
        compared += ", derandomized"
    examples = InMemoryExampleDatabase()
    fast = settings(
        profile,
        database=examples,
        phases=[p for p in profile.phases if p is not Phase.shrink],
        report_multiple_bugs=False,
    )
    try:
        run_state_machine_as_test(make, settings=fast)  # type: ignore[arg-type]  # any factory works
    except Exception as error:  # the implementation failed (or crashed): that is the verdict
        first = describe_exception(error)
    else:
        return Verdict(passed=True, compared=compared)
    shrunk = settings(profile, database=examples, report_multiple_bugs=False)
    try:
        with time_limit(SHRINK_SECONDS):
            run_state_machine_as_test(make, settings=shrunk)  # type: ignore[arg-type]
    except CheckTimeout:
        detail = f"{first}\n(shrinking stopped after {SHRINK_SECONDS:.0f} s; this is the unshrunk example)"
    except Flaky as error:  # Hypothesis could not replay it consistently: the first failure stands
        detail = f"{first}\n(not shrunk: the rerun was flaky, {type(error).__name__})"
    except Exception as error:  # the same failure, shrunk
        detail = describe_exception(error)
    else:
        detail = f"{first}\n(the failure did not recur when rerun with shrinking: flaky)"
    return Verdict(passed=False, compared=compared, detail=detail, replay=_replay_hint(profile, check_id))


def _replay_hint(profile: settings, check: str) -> str:
    return (
        f"rerun this check alone (-k {check}); Hypothesis profile derandomize={profile.derandomize}, "
        "so a derandomized run fails the same way; the steps are listed above"
    )


def examples_verdict(examples: tuple[Callable[[Any], str], ...], make: Any) -> Verdict:
    problems = run_examples(examples, make)
    return Verdict(
        passed=not problems,
        count=len(examples),
        compared=f"{len(examples)} worked examples of docs/suffix-decoding.md",
        detail="; ".join(problems),
        replay="arctic_ref.testing.suffix.examples.<name>(your factory)",
    )


# ----------------------------------------------------------------------------- suffix trees


def _tree_state(tree: Any) -> tuple[object, ...]:
    drafts = []
    for probe in PROBES:
        draft = tree.speculate(probe, 8, 1.0, 0.0, 0.0, False)
        drafts.append((list(draft.token_ids), [float(p) for p in draft.probs]))
    return tree.num_seqs(), tuple(map(str, drafts))


TREE_BAD_INPUTS: tuple[tuple[str, str, Callable[[Any], object]], ...] = (
    ("reserved token in extend", "X2", lambda t: t.extend(0, [4, INT32_MIN])),
    ("reserved token in context", "X3", lambda t: t.speculate([1, INT32_MIN, 2], 8, 1.0, 0.0, 0.0, False)),
    ("reserved seq id", "X4", lambda t: t.extend(INT32_MIN, [1, 2])),
    ("token outside int32", "X5", lambda t: t.extend(1, [1, INT32_MAX + 1])),
    ("non-integer token", "X5", lambda t: t.extend(1, [1, 1.5])),
    ("string token", "X5", lambda t: t.extend(1, ["x"])),
)


def _bad_input_verdict(rows: list[tuple[str, str, str]], total: int, strict: bool, what: str) -> Verdict:
    """rows: (label, X id or "", problem) for every row that behaved unlike arctic_ref."""
    unexplained = [r for r in rows if not r[1]]
    known = sorted({r[1] for r in rows if r[1]})
    detail = "; ".join(f"{label}: {problem}" + (f" ({x})" if x else "") for label, x, problem in rows)
    return Verdict(
        passed=not unexplained and (not known or not strict),
        compared=f"{total} rejected inputs on {what}: each must raise ValueError or TypeError and change nothing",
        count=total,
        detail=detail,
        known_difference=", ".join(known),
    )


def _bad_input_rows(
    table: tuple[tuple[str, str, Callable[[Any], object]], ...],
    fresh: Callable[[], Any],
    state: Callable[[Any], object],
) -> list[tuple[str, str, str]]:
    """(label, X id, problem) for every row of ``table`` whose call on a ``fresh()`` object was
    accepted, raised something else than ValueError or TypeError, or changed ``state``."""
    rows = []
    for label, x_id, call in table:
        target = fresh()
        before = state(target)
        try:
            call(target)
        except (ValueError, TypeError):
            if state(target) != before:
                rows.append((label, x_id, "raised, but the state changed"))
        except Exception as error:  # any other exception is a different behaviour, reported
            rows.append((label, x_id, f"raised {type(error).__name__}, not ValueError or TypeError"))
        else:
            rows.append((label, x_id, "accepted"))
    return rows


def _seeded_tree(make_tree: Callable[[int], Any]) -> Any:
    tree = make_tree(8)
    tree.extend(0, [1, 2, 3, 1, 2])
    return tree


def tree_bad_input(make_tree: Callable[[int], Any], *, strict: bool) -> Verdict:
    rows = _bad_input_rows(TREE_BAD_INPUTS, lambda: _seeded_tree(make_tree), _tree_state)
    return _bad_input_verdict(rows, len(TREE_BAD_INPUTS), strict, "the tree")


# ----------------------------------------------------------------------------- suffix caches


def fixed_cache_machine(depth: int, limit: int) -> type[SuffixCacheMachine]:
    """The cache machine at one (max_tree_depth, max_cached_requests), for a zero-argument factory."""

    class FixedCacheMachine(SuffixCacheMachine):
        @initialize(wrap=st.booleans(), vocab=st.integers(2, 5))
        def start(self, wrap: bool, vocab: int) -> None:
            SuffixCacheMachine.start(self, depth, limit, wrap, vocab)

    return FixedCacheMachine


def cache_replay(make_cache: Callable[[int, int], Any], *, requests: int = 30, tree: bool = False) -> Verdict:
    """The code-edit trace through both caches, one draft at a time."""
    trace = code_edit_trace(requests=requests)
    config = SimulationConfig(use_tree_spec=tree)
    ours = replay(SuffixDecodingCache(config.max_depth, config.max_cached_requests), trace, config, keep_drafts=True)
    theirs = replay(make_cache(config.max_depth, config.max_cached_requests), trace, config, keep_drafts=True)
    for step, (a, b) in enumerate(zip(ours.drafts, theirs.drafts, strict=False)):
        difference = first_field_difference(_from_replay(a), _from_replay(b))
        if difference:
            record = ours.steps[step] if step < len(ours.steps) else None
            where = f"request {record.req_id}, " if record is not None else ""
            return Verdict(
                passed=False,
                compared=f"drafts of the code-edit replay ({requests} requests)",
                detail=f"step {step} ({where}speculate call {step}): {difference}",
                replay=f"arctic_ref.suffix.simulate.replay(cache, code_edit_trace(requests={requests}), "
                f"SimulationConfig(use_tree_spec={tree}), keep_drafts=True), draft {step}",
            )
    if len(ours.drafts) != len(theirs.drafts):
        return Verdict(
            passed=False,
            compared="number of speculate calls in the code-edit replay",
            detail=f"arctic_ref made {len(ours.drafts)}, yours {len(theirs.drafts)}",
        )
    return Verdict(
        passed=True,
        compared=f"{len(ours.drafts)} drafts of the code-edit replay ({requests} requests)",
        count=len(ours.drafts),
    )


def _cache_state(cache: Any) -> tuple[object, ...]:
    drafts = []
    for req in list(cache.active_requests):
        for probe in PROBES:
            draft = cache.speculate(req, probe, 8, 1.0, 0.0, 0.0, False)
            drafts.append(str((list(draft.token_ids), [float(p) for p in draft.probs])))
    return list(cache.active_requests), list(cache.cached_requests), tuple(drafts)


CACHE_BAD_INPUTS: tuple[tuple[str, str, Callable[[Any], object]], ...] = (
    ("reserved token in start_request", "X2", lambda c: c.start_request("new", [1, INT32_MIN])),
    ("reserved token in add_active_response", "X2", lambda c: c.add_active_response("a", [2, INT32_MIN])),
    ("token outside int32", "X5", lambda c: c.add_active_response("a", [INT32_MAX + 1])),
    ("non-integer token", "X5", lambda c: c.start_request("new", [1, 1.5])),
    ("response for an unknown request", "", lambda c: c.add_active_response("nobody", [1])),
    ("a request started twice", "", lambda c: c.start_request("a", [1, 2])),
)


def _seeded_cache(make_cache: Callable[[int, int], Any]) -> Any:
    cache = make_cache(8, -1)
    cache.start_request("a", [1, 2, 3])
    cache.add_active_response("a", [1, 2])
    return cache


def cache_bad_input(make_cache: Callable[[int, int], Any], *, strict: bool) -> Verdict:
    rows = _bad_input_rows(CACHE_BAD_INPUTS, lambda: _seeded_cache(make_cache), _cache_state)
    cache = make_cache(8, -1)
    cache.start_request("a", [1, 2, 3, 1, 2, 3, 1, 2])
    try:
        default, explicit = cache.speculate("a", [1, 2]), cache.speculate("a", [1, 2], 8)
        if first_field_difference(pack(default), pack(explicit)):
            rows.append(("speculate(max_spec_tokens=None)", "X1", "differs from max_spec_tokens=max_tree_depth"))
    except Exception as error:  # upstream raises AttributeError here (X1)
        rows.append(("speculate(max_spec_tokens=None)", "X1", f"raised {type(error).__name__}"))
    return _bad_input_verdict(rows, len(CACHE_BAD_INPUTS) + 1, strict, "the cache")
