"""Exact checks E1–E18 and E20 of docs/verification.md §5.1, run against any candidate sampler.

Every random-row comparison uses known randomness: injected noise (route A) when the candidate has
an injector, otherwise per-request seeded generators whose draws are predicted on clones (route B).
"""

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate
from typing import Final, Literal

import torch
from torch import Tensor

from arctic_ref.spec.metadata import SamplingMetadata
from arctic_ref.spec.noise import RejectionNoise, draw_noise
from arctic_ref.spec.profile import PLACEHOLDER_TOKEN_ID, VLLM_0_9_2, VLLM_0_32, SamplerProfile
from arctic_ref.spec.rejection import parse_output, rejection_sample_with_noise
from arctic_ref.spec.sampling import compute_target_probs
from arctic_ref.testing.check import Verdict
from arctic_ref.testing.sampler.check_ids import (
    E1,
    E2,
    E3,
    E4,
    E5,
    E6,
    E7,
    E8,
    E9,
    E10,
    E11,
    E12,
    E13,
    E14,
    E15_FLAGS,
    E15_NAN,
    E15_SHAPES,
    E15_SPEC_LEN,
    E16,
    E17,
    E18,
    E20,
    RNG_ORDER,
)
from arctic_ref.testing.sampler.corpus import (
    RejectionCase,
    clone_generators,
    make_metadata,
    random_case,
    random_noise,
)
from arctic_ref.testing.sampler.malformed import malformed_output
from arctic_ref.testing.sampler.sampler_fn import NoiseInjector, RejectionSampleFn
from arctic_ref.testing.sampler.toy_generation import GREEDY_DRAFTERS, greedy_generation_matches


@dataclass(slots=True, kw_only=True)
class Candidate:
    """A sampler under test with how to call it."""

    fn: RejectionSampleFn
    takes: Literal["logits", "probs"]
    profile: SamplerProfile
    injector: NoiseInjector | None
    greedy_temperature: float
    unsafe_inputs: dict[str, str] = field(default_factory=dict)
    """Strict checks whose invalid inputs are never fed to the candidate, with why (check id →
    reason), reported as skipped: inputs its native kernels would read or write out of bounds with.
    vLLM 0.32's kernels: E15-SHAPES (``vllm_class.py``); vLLM 0.9.2's under TRITON_INTERPRET
    corrupt the heap with all three strict checks' inputs (inconsistent greedy flags too)."""

    def call(self, case: RejectionCase, noise: RejectionNoise | None = None) -> tuple[Tensor, tuple[object, ...]]:
        """Output and the (possibly mutated) arguments it was given."""
        args = list(case.args())
        if self.takes == "probs" and not case.sampling_metadata.all_greedy:
            args[5] = compute_target_probs(
                case.target_logits, case.cu_num_draft_tokens, case.sampling_metadata, profile=self.profile
            )
        if noise is not None and self.injector is not None:
            with self.injector(noise):
                out = self.fn(*args)  # type: ignore[arg-type]
        else:
            out = self.fn(*args)  # type: ignore[arg-type]
        return out, tuple(args)

    def case(self, rng: random.Random) -> RejectionCase:
        return random_case(rng, greedy_temperature=self.greedy_temperature, seeded=self.injector is None)

    def compare(self, case: RejectionCase, rng: random.Random) -> tuple[Tensor, Tensor, tuple[object, ...], str]:
        """(actual, expected, arguments after the call, RNG-ORDER problem or "")."""
        if self.injector is not None:
            noise = random_noise(case, self.profile, rng)
            actual, args = self.call(case, noise)
            return actual, expected_output(case, noise, self.profile), args, ""
        predicted_meta = clone_generators(case.sampling_metadata)
        noise = draw_noise(case.num_draft_tokens, case.vocab, predicted_meta, profile=self.profile)
        actual, args = self.call(case)
        meta_after = args[7]
        assert isinstance(meta_after, SamplingMetadata)
        problem = ""
        for i, g in predicted_meta.generators.items():
            if not torch.equal(g.get_state(), meta_after.generators[i].get_state()):
                problem = f"request {i}'s generator advanced differently from docs/verification.md §2.1"
        expected = expected_output(case, noise, self.profile)
        # The same number of draws in another order leaves the same final states: the rows tell.
        problem = problem or draw_order_problem(case, actual, self.profile, every_row=False, in_order=expected)
        return actual, expected, args, problem


def expected_output(case: RejectionCase, noise: RejectionNoise | None, profile: SamplerProfile) -> Tensor:
    return rejection_sample_with_noise(*case.args(), noise, profile=profile)


def seeded_rows(case: RejectionCase) -> list[int]:
    """The requests whose output rests on their own generator's draws: random, seeded, nᵢ > 0."""
    greedy = case.greedy
    return [i for i in sorted(case.sampling_metadata.generators) if not greedy[i] and case.num_draft_tokens[i] > 0]


def predict_seeded_noise(
    case: RejectionCase, profile: SamplerProfile, *, exponentials_first: bool = False
) -> RejectionNoise:
    """u and E of the seeded rows, drawn on clones of their generators in docs/verification.md §2.1's
    order (nᵢ uniforms, then V exponentials), or, with ``exponentials_first``, in the swapped order.
    Other rows get u = 0.5 and E = 1 (their output does not depend on these); no global draw."""
    uniforms = torch.full((sum(case.num_draft_tokens),), 0.5, dtype=profile.uniform_dtype)
    exponentials = torch.ones(len(case.num_draft_tokens), case.vocab, dtype=torch.float32)
    starts = [0, *accumulate(case.num_draft_tokens)]
    generators = clone_generators(case.sampling_metadata).generators
    for i in seeded_rows(case):
        g = generators[i]
        u = uniforms[starts[i] : starts[i + 1]]
        if exponentials_first:
            exponentials[i].exponential_(generator=g)
            u.uniform_(generator=g)
        else:
            u.uniform_(generator=g)
            exponentials[i].exponential_(generator=g)
    return RejectionNoise(uniforms=uniforms, exponentials=exponentials)


def draw_order_problem(
    case: RejectionCase, out: Tensor, profile: SamplerProfile, *, every_row: bool, in_order: Tensor | None = None
) -> str:
    """ "" when every seeded row of ``out`` (``seeded_rows``) equals what its generator's draws predict
    in docs/verification.md §2.1's order (nᵢ uniforms, then V exponentials; the output identity of
    §2.3), else the first row that does not, saying whether it is what the swapped order predicts.
    Without ``every_row`` only rows whose output tells the two orders apart are compared.
    ``in_order``: that prediction when the caller has it (seeded rows of any route-B expectation)."""
    rows = seeded_rows(case)
    if not rows or not isinstance(out, Tensor) or out.dim() != 2 or out.shape[0] != len(case.num_draft_tokens):
        return ""  # nothing seeded, or a malformed output (the layout checks report that)
    if in_order is None:
        in_order = expected_output(case, predict_seeded_noise(case, profile), profile)
    got = out.cpu().to(torch.int32)
    if got.shape != in_order.shape or all(torch.equal(got[i], in_order[i]) for i in rows):
        return ""
    swapped = expected_output(case, predict_seeded_noise(case, profile, exponentials_first=True), profile)
    for i in rows:
        if torch.equal(got[i], in_order[i]) or (not every_row and torch.equal(in_order[i], swapped[i])):
            continue
        n = case.num_draft_tokens[i]
        expected = f"vLLM's order ({n} uniforms, then {case.vocab} exponentials) predicts {in_order[i].tolist()}"
        if torch.equal(got[i], swapped[i]):
            return (
                f"request {i} drew its exponentials before its uniforms: its row {got[i].tolist()} is what that "
                f"order predicts; {expected} (docs/verification.md §2.1)"
            )
        return f"request {i}'s row {got[i].tolist()} is not what its generator's draws predict: {expected}"
    return ""


def layout_problem(case: RejectionCase, out: Tensor) -> tuple[str, str]:
    """(check id, problem) for E1, E2, E3, E4, E7 on one output; ("", "") when fine."""
    num_reqs = len(case.num_draft_tokens)
    if tuple(out.shape) != (num_reqs, case.max_spec_len + 1) or out.dtype != torch.int32:
        return E1, f"output {out.dtype} {tuple(out.shape)}, expected int32 {(num_reqs, case.max_spec_len + 1)}"
    drafts = case.draft_token_ids.tolist()
    greedy = case.greedy
    probs = None
    if not case.sampling_metadata.all_greedy:
        probs = compute_target_probs(case.target_logits, case.cu_num_draft_tokens, case.sampling_metadata)
    start = 0
    for i, (row, n) in enumerate(zip(out.tolist(), case.num_draft_tokens, strict=True)):
        length = next((k for k, t in enumerate(row) if t == PLACEHOLDER_TOKEN_ID), len(row))
        if any(t != PLACEHOLDER_TOKEN_ID for t in row[length:]) or not 1 <= length <= n + 1:
            return E2, f"row {i} with {n} drafts: {row}"
        mine = drafts[start : start + n]
        last = row[length - 1]
        bonus = int(case.bonus_token_ids[i, 0])
        if row[: length - 1] != mine[: length - 1]:
            if length == n + 1 and last == bonus and row[: n - 1] == mine[: n - 1]:
                # E4 holds this too: the row ends with the bonus, but not every draft was accepted.
                return E3, (
                    f"row {i}: bonus after a rejected draft: it emits {row[n - 1]} for its last draft "
                    f"{mine[n - 1]}, then the bonus {bonus} (drafts {mine}, row {row[:length]})"
                )
            at = next(k for k, (a, b) in enumerate(zip(row[: length - 1], mine, strict=False)) if a != b)
            return (
                E3,
                f"row {i}: position {at} emits {row[at]} where the draft {mine[at]} was not accepted, yet the row goes on (drafts {mine}, row {row[:length]})",
            )
        if length == n + 1 and last != bonus:
            return E4, f"row {i} accepted all {n} drafts but ends with {last}, not the bonus"
        if length <= n:
            if not 0 <= last < case.vocab:
                return E7, f"row {i} recovered id {last} outside [0, {case.vocab})"
            if last == mine[length - 1] and (greedy[i] or case.draft_probs is None):
                return E3, f"row {i} ends with its rejected draft {last}"
            if probs is not None and not greedy[i] and float(probs[start + length - 1, last]) <= 0:
                return E7, f"row {i} recovered {last}, which has zero target probability"
        start += n
    return "", ""


def _first_row_difference(actual: Tensor, expected: Tensor) -> str:
    """ "" when equal, else the first row that differs (both versions of it), and how many differ."""
    if tuple(actual.shape) != tuple(expected.shape):
        return f"output shape {tuple(actual.shape)}, expected {tuple(expected.shape)}"
    got = actual.cpu().to(torch.int32)
    if torch.equal(got, expected):
        return ""
    rows = [i for i, (a, b) in enumerate(zip(got.tolist(), expected.tolist(), strict=True)) if a != b]
    i = rows[0]
    return f"row {i} differs (of {len(rows)} rows): got {got[i].tolist()} expected {expected[i].tolist()}"


def _mutated(case: RejectionCase, args: tuple[object, ...], takes: str) -> str:
    originals = case.args()
    for index, (before, after) in enumerate(zip(originals, args, strict=True)):
        if index == 5 and takes == "probs":
            continue
        if isinstance(before, Tensor) and isinstance(after, Tensor) and not torch.equal(before, after):
            return f"argument {index} was modified"
    return ""


class Tally:
    """Each exact check's cases: how many ran, how many failed and the first failure, or why the
    check was skipped."""

    def __init__(self) -> None:
        self.failures: dict[str, tuple[int, str]] = {}
        self.skips: dict[str, str] = {}
        self.runs: dict[str, int] = {}

    def record(self, check: str, problem: str, counterexample: Callable[[], str] = lambda: "") -> None:
        self.runs[check] = self.runs.get(check, 0) + 1
        if problem:
            count, first = self.failures.get(check, (0, ""))
            self.failures[check] = (count + 1, first or f"{problem} [{counterexample()}]")

    def skip(self, check: str, reason: str) -> None:
        self.skips[check] = reason

    def verdict(self, check: str) -> Verdict:
        """Failed (how many of how many cases, and the first), else skipped, else passed."""
        if check in self.failures:
            count, first = self.failures[check]
            return Verdict(passed=False, count=1, detail=f"{count} of {self.runs[check]} failed; first case: {first}")
        if check in self.skips:
            return Verdict(passed=True, skipped=self.skips[check])
        return Verdict(passed=True, count=1, detail=f"{self.runs.get(check, 0)} cases")

    def verdicts(self, ids: Sequence[str]) -> dict[str, Verdict]:
        return {check: self.verdict(check) for check in ids}


def _describe(case: RejectionCase) -> str:
    return (
        f"n={case.num_draft_tokens} V={case.vocab} greedy={case.greedy} top_k={case.sampling_metadata.top_k} "
        f"top_p={case.sampling_metadata.top_p} draft_probs={'yes' if case.draft_probs is not None else 'no'}"
    )


def _describer(case: RejectionCase) -> Callable[[], str]:
    return lambda: _describe(case)


ExactScenario = Callable[[Candidate, Tally, random.Random, int], None]
"""How one or more exact checks run: ``scenario(candidate, tally, rng, n)`` records each of its
checks' cases on the tally, from ``n`` random cases where it draws any (the table's ``exact``)."""

CORPUS_SCALE: Final = 10
"""The random corpus runs this many times a scenario's ``n`` cases (400 at the quick level)."""


def corpus_cases(c: Candidate, t: Tally, rng: random.Random, n: int) -> None:
    """E1–E4, E7, E8, E14 and RNG-ORDER on every case of the random corpus: the output's layout,
    its bits against ``rejection_sample_with_noise`` on the same randomness, the arguments after
    the call, and (route B) the generators' draw order."""
    for _ in range(n * CORPUS_SCALE):
        case = c.case(rng)
        try:
            actual, expected, args, rng_problem = c.compare(case, rng)
        except Exception as error:  # a crash on valid input fails every corpus check it blocks
            t.record(E1, f"raised {type(error).__name__}: {error}", _describer(case))
            continue
        if not isinstance(actual, Tensor) or actual.dim() != 2:
            t.record(E1, malformed_output(actual, case.num_draft_tokens, case.vocab), _describer(case))
            continue
        check, problem = layout_problem(case, actual)
        bonus_after_rejection = check == E3 and "bonus after a rejected draft" in problem
        for layout_id in (E1, E2, E3, E4, E7):
            found = problem if check == layout_id or (layout_id == E4 and bonus_after_rejection) else ""
            t.record(layout_id, found, _describer(case))
        t.record(E8, _first_row_difference(actual, expected), _describer(case))
        t.record(E14, _mutated(case, args, c.takes))
        t.record(RNG_ORDER, rng_problem)


def exact_checks(
    candidate: Candidate,
    scenarios: Sequence[tuple[str, ExactScenario]],
    *,
    skipped: Mapping[str, str],
    level: str,
    seed: int,
) -> dict[str, Verdict]:
    """Each check of ``scenarios`` (check id, the scenario that records it; the table's order)
    from one shared random stream: a scenario runs once, at its first check, unless every check it
    records is in ``skipped`` (check id → why, e.g. a route-A check on a route-B candidate).
    A verdict carries what was found (outcome, count, detail); the kit adds what was compared."""
    rng = random.Random(seed)
    tally = Tally()
    n = (2000 if level == "full" else 400) // CORPUS_SCALE
    for check_id, reason in skipped.items():
        tally.skip(check_id, reason)
    ran: list[ExactScenario] = []
    for check_id, scenario in scenarios:
        if scenario in ran or all(i in skipped for i, s in scenarios if s is scenario):
            continue
        ran.append(scenario)
        if scenario is corpus_cases:  # it guards every call of the candidate itself
            scenario(candidate, tally, rng, n)
            continue
        try:
            scenario(candidate, tally, rng, n)
        except Exception as error:  # the candidate crashed on valid input: that check fails
            tally.record(check_id, f"raised {type(error).__name__}: {error}")
    return tally.verdicts([check_id for check_id, _ in scenarios])


def _greedy_rows(case: RejectionCase, out: Tensor) -> list[list[int]]:
    return [row for row, g in zip(out.tolist(), case.greedy, strict=True) if g]


def e5_greedy(c: Candidate, t: Tally, rng: random.Random, n: int) -> None:
    """Greedy rows follow §1.5 and do not depend on noise, draft probs or top-k/top-p."""
    if c.profile.greedy_argmax_on == "logits":
        t.record(E5, _tied_maxima_problem(c))
    for _ in range(n):
        case = c.case(rng)
        if not any(case.greedy):
            continue
        first, _ = c.call(case, random_noise(case, c.profile, rng))
        variant = replace(
            case, draft_probs=None, sampling_metadata=replace(case.sampling_metadata, top_k=None, top_p=None)
        )
        if c.profile.greedy_argmax_on != "logits":
            variant = case
        second, _ = c.call(variant, random_noise(variant, c.profile, rng))
        expected = expected_output(case, random_noise(case, c.profile, rng), c.profile)
        ok = _greedy_rows(case, first) == _greedy_rows(case, second) == _greedy_rows(case, expected)
        t.record(E5, "" if ok else f"greedy rows {_greedy_rows(case, first)} vs {_greedy_rows(case, expected)}")


def tied_maxima_case(greedy_temperature: float) -> RejectionCase:
    """V-21's case: a greedy row whose two largest logits tie ([2, 2, 0]) with top-p 0.3, which keeps
    only one of them, and draft 1, beside a seeded random row. The greedy row's argmax is the first
    maximum of the raw logits, whatever top-p and the rest of the batch; a sampler that takes the
    argmax after top-p (vLLM 0.32) emits the maximum its sort keeps instead."""
    return RejectionCase(
        draft_token_ids=torch.tensor([1, 2]),
        num_draft_tokens=[1, 1],
        max_spec_len=1,
        cu_num_draft_tokens=torch.tensor([1, 2]),
        draft_probs=None,
        target_logits=torch.tensor([[2.0, 2.0, 0.0], [0.0, 1.0, 2.0]]),
        bonus_token_ids=torch.tensor([[2], [0]]),
        sampling_metadata=make_metadata(
            [None, 1.0],
            greedy_temperature=greedy_temperature,
            top_p=[0.3, 1.0],
            generators={1: torch.Generator().manual_seed(21)},
        ),
    )


def _tied_maxima_problem(c: Candidate) -> str:
    """E5's probe of ``tied_maxima_case``: only the greedy row is read, so no noise is needed."""
    out, _ = c.call(tied_maxima_case(c.greedy_temperature))
    row = [int(t) for t in out[0].tolist()]
    if row[:1] == [0]:
        return ""
    return (
        f"a greedy row with tied maxima (logits [2, 2, 0], top-p 0.3, draft 1) beside a random row emitted "
        f"{row}, not the first maximum 0 (vLLM 0.32's argmax after top-p, V-21)"
    )


def _single(
    logits: list[float],
    draft: int,
    *,
    top_k: int | None = None,
    greedy_temperature: float = 0.0,
    temperature: float | None = 1.0,
    draft_probs: list[float] | None = None,
) -> RejectionCase:
    return RejectionCase(
        draft_token_ids=torch.tensor([draft]),
        num_draft_tokens=[1],
        max_spec_len=1,
        cu_num_draft_tokens=torch.tensor([1]),
        draft_probs=None if draft_probs is None else torch.tensor([draft_probs], dtype=torch.float32),
        target_logits=torch.tensor([logits], dtype=torch.float32),
        bonus_token_ids=torch.tensor([[len(logits) - 1]]),
        sampling_metadata=make_metadata(
            [temperature], greedy_temperature=greedy_temperature, top_k=None if top_k is None else [top_k]
        ),
    )


def e6_zero_probability(c: Candidate, t: Tally, rng: random.Random, n: int) -> None:
    """u = 0 never accepts a draft that top-k cut (p(d) = 0); u just below 1 accepts p(d) = 1 (route A only)."""
    cut = _single([3.0, 2.0, 1.0, 0.0], 3, top_k=2)  # draft 3 is cut by top-k: p(d) = 0
    zero = RejectionNoise(uniforms=torch.zeros(1, dtype=c.profile.uniform_dtype), exponentials=torch.ones(1, 4))
    out, _ = c.call(cut, zero)
    t.record(E6, "" if out[0, 0].item() != 3 else "a zero-probability draft was accepted at u = 0")
    sure = _single([0.0, float("-inf"), float("-inf")], 0)  # p(d) = 1
    almost_one = RejectionNoise(
        uniforms=torch.tensor([1 - 2**-24], dtype=c.profile.uniform_dtype), exponentials=torch.ones(1, 3)
    )
    out, _ = c.call(sure, almost_one)
    t.record(E6, "" if out[0].tolist()[:2] == [0, 2] else f"p(d) = 1 rejected: {out.tolist()}")


def e9_one_hot(c: Candidate, t: Tally, rng: random.Random, n: int) -> None:
    """draft_probs = one_hot(d) is bitwise draft_probs = None."""
    for _ in range(n):
        case = c.case(rng)
        noise = random_noise(case, c.profile, rng)
        one_hot = torch.nn.functional.one_hot(case.draft_token_ids, case.vocab).to(torch.float32)
        # Route B needs nothing more: both calls start from the same generator states (fresh clones).
        a, _ = c.call(replace(case, draft_probs=None), noise)
        b, _ = c.call(replace(case, draft_probs=one_hot), noise)
        t.record(E9, "" if torch.equal(a, b) else f"{a.tolist()} vs {b.tolist()}")


def e10_permutation(c: Candidate, t: Tally, rng: random.Random, n: int) -> None:
    """Permuting the requests, and their injected noise rows, permutes the output (route A only)."""
    for _ in range(n):
        case = c.case(rng)
        noise = random_noise(case, c.profile, rng)
        out, _ = c.call(case, noise)
        order = list(range(len(case.num_draft_tokens)))
        rng.shuffle(order)
        permuted, permuted_noise = _permute(case, noise, order)
        out2, _ = c.call(permuted, permuted_noise)
        t.record(E10, "" if torch.equal(out[order], out2) else f"order {order}: {out.tolist()} vs {out2.tolist()}")


def _permute(
    case: RejectionCase, noise: RejectionNoise | None, order: list[int]
) -> tuple[RejectionCase, RejectionNoise | None]:
    counts = case.num_draft_tokens
    starts = [sum(counts[:i]) for i in range(len(counts))]
    rows = [r for i in order for r in range(starts[i], starts[i] + counts[i])]
    index = torch.tensor(rows, dtype=torch.int64)
    meta = case.sampling_metadata
    new_counts = [counts[i] for i in order]
    pick = torch.tensor(order)
    greedy = [case.greedy[i] for i in order]
    permuted = RejectionCase(
        draft_token_ids=case.draft_token_ids[index],
        num_draft_tokens=new_counts,
        max_spec_len=case.max_spec_len,
        cu_num_draft_tokens=torch.tensor(new_counts, dtype=torch.int64).cumsum(0),
        draft_probs=None if case.draft_probs is None else case.draft_probs[index],
        target_logits=case.target_logits[index],
        bonus_token_ids=case.bonus_token_ids[pick],
        sampling_metadata=replace(
            meta,
            all_greedy=all(greedy),
            all_random=not any(greedy),
            temperature=None if meta.temperature is None else meta.temperature[pick],
            top_k=None if meta.top_k is None else meta.top_k[pick],
            top_p=None if meta.top_p is None else meta.top_p[pick],
            generators={order.index(i): g for i, g in meta.generators.items() if i in order},
        ),
    )
    if noise is None:
        return permuted, None
    return permuted, RejectionNoise(uniforms=noise.uniforms[index], exponentials=noise.exponentials[pick])


def e11_generators(c: Candidate, t: Tally, rng: random.Random, n: int) -> None:
    """Generators of greedy rows and of nᵢ = 0 rows never advance; an all-greedy batch draws nothing."""
    for _ in range(n):
        case = c.case(rng)
        generators = {i: torch.Generator().manual_seed(rng.randrange(2**31)) for i in range(len(case.num_draft_tokens))}
        case = replace(case, sampling_metadata=replace(case.sampling_metadata, generators=generators))
        before = {i: g.get_state() for i, g in generators.items()}
        global_before = torch.get_rng_state()
        _, args = c.call(case)
        meta = args[7]
        assert isinstance(meta, SamplingMetadata)
        for i, (greedy, count) in enumerate(zip(case.greedy, case.num_draft_tokens, strict=True)):
            if (greedy or count == 0) and not torch.equal(meta.generators[i].get_state(), before[i]):
                t.record(E11, f"request {i} (greedy={greedy}, n={count}) advanced its generator")
                break
        else:
            t.record(E11, "")
        if all(case.greedy) and not torch.equal(torch.get_rng_state(), global_before):
            t.record(E11, "an all-greedy batch advanced the global generator")


def e12_identity(c: Candidate, t: Tally, rng: random.Random, n: int) -> None:
    """docs/verification.md §2.3: a seeded random row with nᵢ > 0 consumes exactly nᵢ uniforms then V
    exponentials (final states, on a clone), and its output is what those draws predict."""
    for _ in range(n):
        case = random_case(rng, greedy_temperature=c.greedy_temperature, seeded=True)
        out, args = c.call(case)
        meta = args[7]
        assert isinstance(meta, SamplingMetadata)
        problem = ""
        for i, g in case.sampling_metadata.generators.items():
            clone = torch.Generator().manual_seed(0)
            clone.set_state(g.get_state())
            if case.num_draft_tokens[i] > 0:
                torch.rand(case.num_draft_tokens[i], dtype=c.profile.uniform_dtype, generator=clone)
                torch.empty(case.vocab, dtype=torch.float32).exponential_(generator=clone)
            if not torch.equal(clone.get_state(), meta.generators[i].get_state()):
                problem = f"request {i} (n={case.num_draft_tokens[i]}) consumed a different number of draws"
                break
        t.record(E12, problem or draw_order_problem(case, out, c.profile, every_row=True), _describer(case))


def e13_seeded_isolation(c: Candidate, t: Tally, rng: random.Random, n: int) -> None:
    """A seeded row's output depends only on its own inputs and generator, not on its neighbours."""
    for _ in range(n):
        case = random_case(rng, greedy_temperature=c.greedy_temperature, seeded=True)
        seeded = [i for i in case.sampling_metadata.generators if case.num_draft_tokens[i] > 0]
        if not seeded:
            continue
        i = seeded[0]
        alone = _permute(case, None, [i])[0]
        together, _ = c.call(case)
        solo, _ = c.call(alone)
        width = case.max_spec_len + 1
        t.record(
            E13,
            ""
            if together[i, :width].tolist() == solo[0, :width].tolist()
            else f"request {i}: {together[i].tolist()} in the batch, {solo[0].tolist()} alone",
        )


def _with_nan_in_a_random_row(case: RejectionCase) -> Tensor:
    """The logits with one NaN in the first draft row of the first random request with drafts
    (docs/verification.md §1.2 item 5: a ``ValueError``, never an out-of-vocabulary id, vLLM bug V-5)."""
    starts = [0, *accumulate(case.num_draft_tokens)]
    i = next(i for i, n in enumerate(case.num_draft_tokens) if n > 0 and not case.greedy[i])
    logits = case.target_logits.clone()
    logits[starts[i], 0] = float("nan")
    return logits


def _e15_base(c: Candidate, rng: random.Random) -> RejectionCase:
    """A valid case with at least one random request that has drafts (so a NaN row can be placed)."""
    base = random_case(random.Random(1), greedy_temperature=c.greedy_temperature)
    while not any(n > 0 and not greedy for n, greedy in zip(base.num_draft_tokens, base.greedy, strict=True)):
        base = random_case(rng, greedy_temperature=c.greedy_temperature)
    return base


def _raises(c: Candidate, bad: RejectionCase, accepted: tuple[type[BaseException], ...]) -> str:
    """ "" when calling the candidate on ``bad`` raises one of ``accepted``, else what happened."""
    try:
        c.call(bad)
    except accepted:
        return ""
    except Exception as error:
        return f"raised {type(error).__name__}: {error}"
    return "accepted"


def e15_errors(c: Candidate, t: Tally, rng: random.Random, n: int) -> None:
    """Invalid input raises (docs/verification.md §1.2), one named check per contract: E15-SPEC-LEN
    (max_spec_len over the limit: any ``ValueError``, e.g. arctic_ref's ``SpecLengthError``, never
    our own class; under the vLLM 0.9.2 and 0.32 profiles also vLLM's ``AssertionError``), and the
    strict input contract: E15-SHAPES (shapes and counts), E15-FLAGS (greedy flags), E15-NAN (NaN
    rows). A strict check in ``c.unsafe_inputs`` is skipped: its inputs are never fed."""
    base = _e15_base(c, rng)
    spec_len_errors: tuple[type[BaseException], ...] = (ValueError,)
    if c.profile.name in (VLLM_0_9_2.name, VLLM_0_32.name):
        spec_len_errors = (ValueError, AssertionError)  # vLLM's forward asserts max_spec_len (X5)
    limit = c.profile.max_spec_len_limit
    problem = _raises(c, replace(base, max_spec_len=limit + 1), spec_len_errors)
    expected = " or ".join(e.__name__ for e in spec_len_errors)
    t.record(
        E15_SPEC_LEN,
        problem
        and f"max_spec_len {limit + 1} (over the limit {limit}): {problem}; the contract is an error "
        f"({expected}, any subclass), never a truncation",
    )
    strict: dict[str, dict[str, RejectionCase]] = {
        E15_SHAPES: {
            "draft id = V": replace(base, draft_token_ids=torch.full_like(base.draft_token_ids, base.vocab)),
            "draft id = -1": replace(base, draft_token_ids=torch.full_like(base.draft_token_ids, -1)),
            "cu_num_draft_tokens != cumsum(num_draft_tokens)": replace(
                base, cu_num_draft_tokens=base.cu_num_draft_tokens + 1
            ),
            "max_spec_len < max(num_draft_tokens)": replace(base, max_spec_len=max(base.num_draft_tokens) - 1),
        },
        E15_FLAGS: {
            "all_greedy=True with random rows": replace(
                base, sampling_metadata=replace(base.sampling_metadata, all_greedy=True, all_random=False)
            ),
        },
        E15_NAN: {"NaN in a random row's logits": replace(base, target_logits=_with_nan_in_a_random_row(base))},
    }
    for check, cases in strict.items():
        if check in c.unsafe_inputs:
            t.skip(check, c.unsafe_inputs[check])
            continue
        for label, bad in cases.items():
            problem = _raises(c, bad, (ValueError,))
            t.record(check, problem and f"{label}: {problem}; {STRICT_CONTRACT[check]}")


STRICT_CONTRACT: Final[dict[str, str]] = {
    E15_SHAPES: "the strict contract (docs/verification.md §1.2) raises ValueError for malformed shapes and counts",
    E15_FLAGS: "the strict contract (docs/verification.md §1.2 item 2) raises ValueError for greedy flags that "
    "contradict the temperatures",
    E15_NAN: "the strict contract (docs/verification.md §1.2 item 5, field bug F-4) raises ValueError for a NaN "
    "row instead of emitting from it",
}


def e16_greedy_threshold(c: Candidate, t: Tally, rng: random.Random, n: int) -> None:
    """τ ∈ {−1, 0, 1e-6, 9.9e-6} is greedy; τ = 1e-5 is random."""
    logits = [0.0, 0.1, 0.2, 5.0]
    for tau in (-1.0, 0.0, 1e-6, 9.9e-6):
        case = _single(logits, 0, temperature=None, greedy_temperature=tau)
        out, _ = c.call(case)
        t.record(E16, "" if out[0, 0].item() == 3 else f"τ={tau}: {out.tolist()} is not greedy")
    case = _single(logits, 3, temperature=1e-5)
    noise = RejectionNoise(uniforms=torch.full((1,), 0.5, dtype=c.profile.uniform_dtype), exponentials=torch.ones(1, 4))
    out, _ = c.call(case, noise if c.injector else None)
    t.record(E16, "" if out[0, 0].item() == 3 else f"τ=1e-5: {out.tolist()}")


@dataclass(frozen=True, slots=True)
class _MaskProbe:
    """A hand-built row, its sampling parameters and the tokens docs/verification.md §1.4 keeps."""

    logits: tuple[float, ...]
    temperature: float
    top_k: int | None
    top_p: float | None
    kept: frozenset[int]
    shows: str


MASK_PROBES: Final[tuple[_MaskProbe, ...]] = (
    _MaskProbe(
        (1.0, 2.0, 2.0, 3.0), 1.0, 2, None, frozenset({1, 2, 3}), "top-k keeps both values tied at its threshold"
    ),
    _MaskProbe((0.0, 1.0, 2.0, 3.0), 1.0, None, 0.01, frozenset({3}), "top-p keeps the maximum"),
    # τ = 0.5 gives [0, 2, 4]: p = [0.016, 0.117, 0.867], top-p 0.7 keeps {2}; on the raw logits it keeps {1, 2}.
    _MaskProbe((0.0, 1.0, 2.0), 0.5, None, 0.7, frozenset({2}), "temperature comes before top-p"),
    # top-k 2 leaves [1.5, 2]: cumulative 0.378 <= 0.4 drops 2; top-p first (over all four) keeps {2, 3}.
    _MaskProbe((0.0, 1.0, 1.5, 2.0), 1.0, 2, 0.6, frozenset({3}), "top-k comes before top-p"),
    # τ = 0.5 gives [0, 1, 2, 2.4]; top-k 3 drops 0; cumulative 0.129, 0.479, 1: top-p 0.6 drops 1.
    _MaskProbe((0.0, 0.5, 1.0, 1.2), 0.5, 3, 0.6, frozenset({2, 3}), "temperature, then top-k, then top-p"),
)
"""E17's rows (docs/verification.md §1.4); no ties at a top-p boundary."""

PROBE_DRAFT_PROB: Final = 1 / 64
"""q(d) of a probed draft: below every kept token's p (at least 0.21 in ``MASK_PROBES``), so p(d)/q(d) > 1."""


_PROBE_BATCH: Final = "one request per token v, drafting v with q(v) = 1/64 (the rest of q on the other tokens)"


def _mask_probe_case(probe: _MaskProbe, seeded: bool) -> RejectionCase:
    """One request per token v of the row: a single draft v with q(v) = 1/64 and the rest of q spread
    over the other tokens. A correct sampler accepts v exactly when §1.4 keeps it (p(v)/q(v) > 1 > u;
    p(v) = 0 is never accepted, §1.5), and otherwise recovers a kept token ((p − q)⁺ > 0 needs p > 0).
    ``seeded`` gives every request a generator with a fixed seed (route B), so the run is repeatable."""
    vocab = len(probe.logits)
    q = torch.full((vocab, vocab), (1 - PROBE_DRAFT_PROB) / (vocab - 1), dtype=torch.float32)
    q.fill_diagonal_(PROBE_DRAFT_PROB)
    generators = {v: torch.Generator().manual_seed(1017 + v) for v in range(vocab)} if seeded else {}
    return RejectionCase(
        draft_token_ids=torch.arange(vocab),
        num_draft_tokens=[1] * vocab,
        max_spec_len=1,
        cu_num_draft_tokens=torch.arange(1, vocab + 1),
        draft_probs=q,
        target_logits=torch.tensor([probe.logits] * vocab, dtype=torch.float32),
        bonus_token_ids=torch.zeros(vocab, 1, dtype=torch.int64),
        sampling_metadata=make_metadata(
            [probe.temperature] * vocab,
            top_k=None if probe.top_k is None else [probe.top_k] * vocab,
            top_p=None if probe.top_p is None else [probe.top_p] * vocab,
            generators=generators,
        ),
    )


def _mask_probe_problem(probe: _MaskProbe, out: Tensor) -> str:
    """ "" when every request's row is what the kept set forces, else the first one that is not."""
    where = (
        f"{probe.shows}: logits {list(probe.logits)} at τ={probe.temperature}, top_k={probe.top_k}, "
        f"top_p={probe.top_p} keep {sorted(probe.kept)}"
    )
    for v, row in enumerate(out.tolist()):
        if v in probe.kept and row[:2] != [v, 0]:
            return f"{where}, yet the draft {v} (p/q > 1) was not accepted: row {row}, expected [{v}, bonus 0]"
        if v not in probe.kept and (row[1] != PLACEHOLDER_TOKEN_ID or row[0] not in probe.kept):
            if row[0] == v:
                return f"{where}, yet the draft {v} (p = 0) was accepted, so your masks kept it: row {row}"
            return f"{where}: the draft {v} (p = 0) gave row {row}, expected one kept token and then -1"
    return ""


def e17_masks(c: Candidate, t: Tally, rng: random.Random, n: int) -> None:
    """Top-k keeps threshold ties; top-p keeps the maximum; order temperature → top-k → top-p.
    First on our ``compute_target_probs``, then read off the candidate's output on ``MASK_PROBES``,
    where the masks force every token (``_mask_probe_case``): a wrong mask shows with certainty (u
    injected as 0.5; by route B from fixed seeds, any u < 1 gives the same rows, bar u = 0 exactly
    for a sampler without the p > 0 guard, X1)."""
    meta = make_metadata([1.0], top_k=[2])
    p = compute_target_probs(torch.tensor([[1.0, 2.0, 2.0, 3.0]]), torch.tensor([1]), meta, profile=c.profile)
    t.record(E17, "" if (p[0] > 0).tolist() == [False, True, True, True] else f"top-k ties: {p.tolist()}")
    meta = make_metadata([1.0], top_p=[0.01])
    p = compute_target_probs(torch.tensor([[0.0, 1.0, 2.0, 3.0]]), torch.tensor([1]), meta, profile=c.profile)
    t.record(E17, "" if (p[0] > 0).tolist() == [False, False, False, True] else f"top-p max: {p.tolist()}")
    meta = make_metadata([0.5], top_k=[3], top_p=[0.6])
    p = compute_target_probs(torch.tensor([[0.0, 0.5, 1.0, 1.2]]), torch.tensor([1]), meta, profile=c.profile)
    # τ = 0.5 gives [0, 1, 2, 2.4]; top-k 3 drops 0; the sorted cumulative probabilities of the rest
    # are 0.129, 0.479, 1, so top-p 0.6 (mask ≤ 0.4) drops 1 and keeps 2 and 2.4.
    t.record(E17, "" if (p[0] > 0).tolist() == [False, False, True, True] else f"order: {p.tolist()}")
    for probe in MASK_PROBES:
        case = _mask_probe_case(probe, seeded=c.injector is None)
        vocab = len(probe.logits)
        noise = RejectionNoise(
            uniforms=torch.full((vocab,), 0.5, dtype=c.profile.uniform_dtype), exponentials=torch.ones(vocab, vocab)
        )
        out, _ = c.call(case, noise)
        if not isinstance(out, Tensor) or tuple(out.shape) != (vocab, 2):
            shape = f"output shape {tuple(getattr(out, 'shape', ()))}, expected ({vocab}, 2)"
            t.record(E17, malformed_output(out, case.num_draft_tokens, vocab) or shape)
            continue
        t.record(E17, _mask_probe_problem(probe, out), lambda: _PROBE_BATCH)


def e18_parse(c: Candidate, t: Tally, rng: random.Random, n: int) -> None:
    raw = torch.tensor([[3, 5, -1, -1], [7, 99, 2, -1]], dtype=torch.int32)
    t.record(E18, "" if parse_output(raw, 10) == [[3, 5], [7, 2]] else f"{parse_output(raw, 10)}")
    for _ in range(n):
        case = c.case(rng)
        out, _ = c.call(case, random_noise(case, c.profile, rng))
        lists = parse_output(out, case.vocab)
        lengths = [sum(1 for x in row if x != PLACEHOLDER_TOKEN_ID) for row in out.tolist()]
        t.record(E18, "" if [len(x) for x in lists] == lengths else f"{lists} from {out.tolist()}")


def e20_generation(c: Candidate, t: Tally, rng: random.Random, n: int) -> None:
    """Greedy generation with any drafter equals plain greedy decoding."""
    for drafter in GREEDY_DRAFTERS:
        problem = greedy_generation_matches(
            c.fn, drafter, seed=rng.randrange(2**31), greedy_temperature=c.greedy_temperature
        )
        t.record(E20, problem)
