"""The ``lossless`` and ``reference`` checks.

``lossless``: under greedy decoding an engine with drafting on must emit exactly the tokens it emits
with drafting off, for every drafting method, over a matrix of scheduler configurations
(``cases.lossless_matrix``). ``reference``: the engine's spec-off greedy tokens must be the
checkpoint's float64 greedy tokens. Both judge a divergence by the float64 reference's top-2 margin
at the first differing position, given the common prefix: below ``MARGIN_BOUND`` the two choices are
a near-tie that float32 arithmetic may break either way, and the divergence is reported but does not
fail; above it the check fails."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from arctic_ref.testing.check import Verdict
from arctic_ref.testing.engine.cases import DraftMethod, LosslessGroup, lossless_matrix
from arctic_ref.testing.engine.checkpoint import ReferenceModel, top2_margin
from arctic_ref.testing.engine.engine_target import EngineFailure, EngineRequest
from arctic_ref.testing.engine.known_bugs import explain
from arctic_ref.testing.engine.session import EngineSession

MARGIN_BOUND: Final = 1e-3
"""Logit units. A float32 engine reproduces the kit's model's float64 logits to about 1e-5; its
greedy top-2 margins are at least about 0.1 (``checkpoint.LOGIT_SCALE``). On a user's checkpoint in
bfloat16 a divergence at a margin between this and the engine's own rounding is a real
finding to look at, and the report gives the margin."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Divergence:
    """The first position where two token lists differ, with the reference's view of it."""

    request: int
    position: int
    expected: int
    got: int
    margin: float

    @property
    def is_tie(self) -> bool:
        return self.margin < MARGIN_BOUND

    def describe(self, requests: Sequence[EngineRequest]) -> str:
        return (
            f"request {self.request} ({requests[self.request].label}) position {self.position}: "
            f"expected {self.expected}, got {self.got}; float64 top-2 margin {self.margin:.3g}"
        )


def first_divergence(
    reference: ReferenceModel,
    requests: Sequence[EngineRequest],
    want: Sequence[Sequence[int]],
    got: Sequence[Sequence[int]],
) -> tuple[Divergence | None, int]:
    """(the first request's first differing position, or None; tokens compared). A length
    difference counts as a difference at the shorter length."""
    compared = 0
    for index, (request, a, b) in enumerate(zip(requests, want, got, strict=True)):
        common = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        compared += common
        if common == len(a) == len(b):
            continue
        prefix = list(request.prompt) + list(a[:common])
        margin = top2_margin(reference.logits(prefix)[-1])
        expected = a[common] if common < len(a) else -1
        token = b[common] if common < len(b) else -1
        return Divergence(request=index, position=common, expected=expected, got=token, margin=margin), compared
    return None, compared


def lossless_check(session: EngineSession, methods: tuple[DraftMethod, ...]) -> Verdict:
    groups = lossless_matrix(session.reference().config.vocab_size, session.level, methods)
    compared = configs = 0
    ties: list[str] = []
    preemption_notes: list[str] = []
    known: list[str] = []
    for group in groups:  # group by group, so that a broken engine fails at its first wrong group
        off, *ons = session.complete_runs(
            [(group.base, [group.requests])] + [(group.spec_on(m, k), [group.requests]) for m, k in group.drafts]
        )
        results = iter(ons)
        for method, k in group.drafts:
            setup, on = group.spec_on(method, k), next(results)
            for run in (off, on):
                if isinstance(run, EngineFailure):
                    verdict = engine_failed(session.target.identity, "lossless", run, f"group {group.name!r}")
                    if not verdict.known_difference:
                        return verdict
                    known.append(f"{verdict.known_difference}: {verdict.detail}")
            if isinstance(off, EngineFailure) or isinstance(on, EngineFailure):
                continue
            configs += 1
            divergence, n = first_divergence(session.reference(), group.requests, off.tokens, on.tokens)
            compared += n
            if divergence is not None and not divergence.is_tie:
                return Verdict(
                    passed=False,
                    compared=f"greedy tokens with drafting on vs off, {configs} configurations",
                    count=compared,
                    detail=f"{setup.label} vs spec off: {divergence.describe(group.requests)}",
                    replay=f"lossless group {group.name!r}, {setup.label}",
                )
            if divergence is not None:
                ties.append(f"{setup.label}: {divergence.describe(group.requests)}")
            if group.expects_preemption:
                preemption_notes.append(f"{method} k={k}: {_preemptions(on.preemptions)}")
    return Verdict(
        passed=not known,
        known_difference=", ".join(sorted({k.split(":")[0] for k in known})),
        compared=f"greedy tokens with drafting on vs off, {configs} configurations in {len(groups)} groups",
        count=compared,
        figures={
            "configurations": str(configs),
            "near-ties": str(len(ties)),
            "preemptions": "; ".join(preemption_notes) or "n/a",
        },
        detail="; ".join(known + ties),
    )


def _preemptions(count: int | None) -> str:
    return "not reported" if count is None else f"{count} preemptions"


def engine_failed(identity: str, check: str, failure: EngineFailure, where: str) -> Verdict:
    """A failed verdict for an engine failure, with the catalogued bug of this engine that explains
    it, if any."""
    known = explain(identity, check, str(failure))
    text = str(failure)
    detail = text if text.startswith(where) else f"{where}: {text}"
    return Verdict(passed=False, compared=where, detail=detail, known_difference=known)


def reference_check(session: EngineSession) -> Verdict:
    """The first ``lossless`` group's spec-off run against the reference, teacher-forced."""
    group: LosslessGroup = lossless_matrix(session.reference().config.vocab_size, session.level, ())[0]
    try:
        off = session.run((group.base, [group.requests]))
    except EngineFailure as failure:
        return engine_failed(session.target.identity, "reference", failure, f"group {group.name!r}, spec off")
    reference = session.reference()
    compared = 0
    ties: list[str] = []
    smallest = float("inf")
    for index, (request, tokens) in enumerate(zip(group.requests, off.tokens, strict=True)):
        logits = reference.logits(list(request.prompt) + list(tokens))[len(request.prompt) - 1 : -1]
        for position, (row, token) in enumerate(zip(logits, tokens, strict=True)):
            margin = top2_margin(row)
            smallest = min(smallest, margin)
            compared += 1
            best = int(row.argmax())
            if best == token:
                continue
            found = Divergence(request=index, position=position, expected=best, got=token, margin=margin)
            if not found.is_tie:
                return Verdict(
                    passed=False,
                    compared="spec-off greedy tokens vs the float64 reference, teacher-forced",
                    count=compared,
                    detail=f"{group.base.label}: {found.describe(group.requests)}",
                )
            ties.append(found.describe(group.requests))
            break
    return Verdict(
        passed=True,
        compared=f"spec-off greedy tokens of {len(group.requests)} requests vs the float64 reference, teacher-forced",
        count=compared,
        figures={"smallest top-2 margin": f"{smallest:.3g}", "near-ties": str(len(ties))},
        detail="; ".join(ties),
    )
