"""Faults of the sampler kit found by a trial with independent implementations (issue 37, item 7):
each test fails on the kit as it was and passes on the fixed kit. The planted samplers are our
reference with one step swapped."""

import ast
import inspect
import random
from dataclasses import fields, replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import torch

import arctic_ref
from arctic_ref.spec import INTENDED, MAX_SPEC_LEN, VLLM_0_9_2, rejection_sample, rejection_sample_with_noise
from arctic_ref.spec.loop import INTENDED_LOOP, LoopRules, sample_with_rules
from arctic_ref.spec.metadata import SamplingMetadata
from arctic_ref.spec.noise import RejectionNoise
from arctic_ref.spec.profile import SamplerProfile
from arctic_ref.spec.sampling import (
    apply_temperature,
    apply_top_k,
    apply_top_k_top_p,
    request_of_rows,
    row_temperatures,
)
from arctic_ref.testing.check import Outcome, Verdict
from arctic_ref.testing.sampler import check_ids
from arctic_ref.testing.sampler.corpus import RejectionCase, random_case
from arctic_ref.testing.sampler.exact import (
    Candidate,
    Tally,
    corpus_cases,
    e15_errors,
    e17_masks,
    expected_output,
    predict_seeded_noise,
    seeded_rows,
)
from arctic_ref.testing.sampler.kit import Injectable, check_rejection_sampler
from arctic_ref.testing.sampler.mutants import MUTANT_RULES, MUTATIONS, MutantLoop
from arctic_ref.testing.sampler.report import ConformanceReport
from arctic_ref.testing.sampler.table import (
    CATEGORIES,
    KNOWN_DIFFERENCE_OF_CHECK,
    MEANINGS,
    SAMPLER_CHECKS,
    VLLM_0_32_DIFFERENCES,
    SamplerCheck,
    TableError,
    require_consistent,
)

PACKAGE = Path(arctic_ref.__file__).parent


def _top_level_definitions(name: str) -> list[str]:
    """Modules of ``arctic_ref`` that define ``name`` at top level (class, function or assignment)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == name:
                found.append(str(path.relative_to(PACKAGE)))
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    found.append(str(path.relative_to(PACKAGE)))
    return found


def test_kit_names_collide_with_no_other_public_name() -> None:
    """``Status`` (report.py and bug_catalogue.py) and ``Drafter`` (toy_generation.py and
    runner/drafters.py) were each defined twice; the kit's drafter is now ``ToyDrafter``, and its
    checks report the kit's one ``Verdict`` (no ``CheckStatus`` of its own)."""
    for name in ("Status", "Drafter", "ToyDrafter"):
        assert len(_top_level_definitions(name)) <= 1, f"{name} is defined in {_top_level_definitions(name)}"
    assert _top_level_definitions("CheckStatus") == []
    assert _top_level_definitions("ToyDrafter") == ["testing/sampler/toy_generation.py"]


def test_every_mutant_is_the_loop_with_one_stage_swapped() -> None:
    """The broken variants are values: the intended ``LoopRules`` with exactly one stage replaced,
    run by the one loop of ``spec/loop.py`` (it was a second copy of the loop, switched by nine ``if``s)."""
    for mutation, rules in MUTANT_RULES.items():
        swapped = [f.name for f in fields(LoopRules) if getattr(rules, f.name) is not getattr(INTENDED_LOOP, f.name)]
        assert len(swapped) == 1, f"{mutation} swaps {swapped}"
    assert set(MUTATIONS) == set(MUTANT_RULES) and len(MUTATIONS) == 9
    assert "if " not in inspect.getsource(MutantLoop.__call__)


class SpecLengthError(ValueError):
    """A user's own error class (not arctic_ref's)."""


def _own_spec_length_error(*args: Any) -> torch.Tensor:
    """Our sampler with the spec-length validation swapped for one raising the user's own class."""
    if args[2] > MAX_SPEC_LEN:
        raise SpecLengthError(f"max_spec_len {args[2]} > {MAX_SPEC_LEN}")
    return rejection_sample(*args)


def _asserts_spec_length(*args: Any) -> torch.Tensor:
    """vLLM 0.9.2's behaviour: ``forward`` asserts ``max_spec_len <= 32``."""
    assert args[2] <= MAX_SPEC_LEN, "max_spec_len"
    return rejection_sample(*args, profile=VLLM_0_9_2)


def _nan_rows_accepted(*args: Any) -> torch.Tensor:
    """Our sampler without the NaN-row rule: NaN logits are read as −inf (validates everything else)."""
    patched = list(args)
    patched[5] = args[5].nan_to_num(nan=float("-inf"))
    return rejection_sample(*patched)


def _failed(report: ConformanceReport) -> set[str]:
    return set(report.failed())


def _status(report: ConformanceReport, check_id: str) -> Outcome:
    return report[check_id].outcome


def test_spec_length_check_accepts_the_users_own_value_error() -> None:
    """Before: E15 failed with "max_spec_len 33 raised ValueError, not SpecLengthError"."""
    report = check_rejection_sampler(_own_spec_length_error, level="quick", statistics=False)
    assert report.ok, report.to_markdown()
    assert _status(report, "E15-SPEC-LEN") is Outcome.PASS


def test_spec_length_check_accepts_vllms_assertion_under_the_vllm_profile() -> None:
    for profile, status in ((VLLM_0_9_2, Outcome.PASS), (INTENDED, Outcome.FAIL)):
        candidate = Candidate(
            fn=_asserts_spec_length, takes="logits", profile=profile, injector=None, greedy_temperature=-1.0
        )
        tally = Tally()
        e15_errors(candidate, tally, random.Random(0), 0)
        result = tally.verdict("E15-SPEC-LEN")
        assert result.outcome is status, (profile.name, result)
    assert "AssertionError" in result.detail and "never a truncation" in result.detail


def test_e15_is_split_by_contract_and_the_strict_one_can_be_left_out() -> None:
    """An independent sampler that validates shapes, counts and lengths but not NaN rows failed all of
    E15 on "NaN in a random row: accepted". Now only E15-NAN fails, saying which contract it holds,
    and leaving out the strict category passes it."""
    report = check_rejection_sampler(_nan_rows_accepted, level="quick", statistics=False)
    assert _failed(report) == {"E15-NAN"}, report.to_markdown()
    nan = report["E15-NAN"]
    assert "NaN" in nan.detail and "strict contract" in nan.detail and "F-4" in nan.detail
    lenient = check_rejection_sampler(_nan_rows_accepted, level="quick", statistics=False, categories=("semantics",))
    assert lenient.ok, lenient.to_markdown()
    assert {i for i, v in lenient.items() if v.outcome is Outcome.SKIP} >= {"E15-SHAPES", "E15-FLAGS", "E15-NAN"}


def test_every_sampler_check_has_a_category() -> None:
    assert {i for i, c in CATEGORIES.items() if c == "strict"} == {"E15-SHAPES", "E15-FLAGS", "E15-NAN"}
    assert "E15" not in MEANINGS
    assert list(MEANINGS) == list(check_ids.declared_ids())


def _scratch_row(check_id: str) -> SamplerCheck:
    return SamplerCheck(id=check_id, meaning="a scratch check", exact=corpus_cases)


def test_the_table_refuses_a_row_without_a_check_and_a_check_without_a_row() -> None:
    """The table module runs ``require_consistent`` at import; here on scratch tables: a row whose id
    no code records, an id the code records without a row, a repeated row, a route restriction
    without its reason, a strict check whose meaning does not say so."""
    ids = check_ids.declared_ids()
    require_consistent(SAMPLER_CHECKS, ids)
    broken = {
        "is no check": ([*SAMPLER_CHECKS, _scratch_row("E99")], ids),
        "has no row": (SAMPLER_CHECKS, (*ids, "E99")),
        "is repeated": ([*SAMPLER_CHECKS, SAMPLER_CHECKS[0]], ids),
        "off_route": ([replace(row, off_route="") if row.id == "E6" else row for row in SAMPLER_CHECKS], ids),
        "disagree": (
            [replace(row, category="semantics") if row.id == "E15-NAN" else row for row in SAMPLER_CHECKS],
            ids,
        ),
        "exactly one of": ([replace(row, statistical=None) if row.id == "S1" else row for row in SAMPLER_CHECKS], ids),
    }
    for problem, (rows, declared) in broken.items():
        with pytest.raises(TableError, match=problem):
            require_consistent(rows, declared)


def test_no_sampler_module_spells_a_check_id() -> None:
    """Every id is spelled once, in check_ids.py: code that records a verdict uses its constant, so a
    new check cannot run without an id the table must have a row for."""
    declared = set(check_ids.declared_ids())
    for path in sorted((PACKAGE / "testing" / "sampler").glob("*.py")):
        if path.name == "check_ids.py":
            continue
        spelled = [
            node.value
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Constant) and node.value in declared
        ]
        assert not spelled, f"{path.name} spells {spelled}"


def test_the_derived_tables_are_todays() -> None:
    """``KNOWN_DIFFERENCE_OF_CHECK`` and ``VLLM_0_32_DIFFERENCES``, derived from the rows."""
    assert KNOWN_DIFFERENCE_OF_CHECK == {
        "E6": "X1",
        "E11": "X4",
        "E14": "X6",
        "E15-SPEC-LEN": "X5",
        "E15-SHAPES": "X5",
        "E15-FLAGS": "X4",
        "E15-NAN": "X3",
        "E16": "X4",
    }
    assert VLLM_0_32_DIFFERENCES == ("X3", "X4", "X5")


def _top_k_then_resort(logits: torch.Tensor, cu: torch.Tensor, meta: SamplingMetadata, profile: Any) -> torch.Tensor:
    """A correct target distribution that applies top-k, then sorts again for top-p (descending,
    stable, then flipped: equal values come out in the opposite order to ours)."""
    rows = request_of_rows(cu, logits.shape[0])
    x = apply_temperature(logits.to(torch.float32), row_temperatures(meta, rows, cu.shape[0]))
    if meta.top_k is not None:
        x = apply_top_k(x, meta.top_k[rows])
    if meta.top_p is not None:
        descending, index = x.sort(dim=-1, descending=True, stable=True)
        ordered, index = descending.flip(-1), index.flip(-1)
        mask = ordered.softmax(dim=-1).cumsum(dim=-1) <= (1 - meta.top_p[rows]).unsqueeze(1)
        mask[:, -1] = False
        ordered = ordered.masked_fill(mask, float("-inf"))
        x = ordered.scatter(-1, index, ordered)
    return x.softmax(dim=-1, dtype=torch.float32)


def _resorting_loop(*args: Any, profile: SamplerProfile = INTENDED) -> torch.Tensor:
    return sample_with_rules(replace(INTENDED_LOOP, target_probs=_top_k_then_resort), *args, profile=profile)


def test_top_k_then_resort_for_top_p_is_no_false_alarm() -> None:
    """Before: E7 ("recovered 6, which has zero target probability") and E8 failed, every difference
    from values tied at the top-p boundary, whose order docs/verification.md §1.4 leaves to the sort."""
    candidate = Injectable(_resorting_loop)
    report = check_rejection_sampler(candidate, with_noise=candidate.inject, level="quick", statistics=False)
    assert report.ok, report.to_markdown()


def _ties_at_top_p_boundary(case: RejectionCase) -> list[str]:
    """Rows whose top-p cut splits equal values, found independently of the corpus: keep the
    largest values (descending) while the mass above them is below top-p."""
    meta = case.sampling_metadata
    if meta.top_p is None:
        return []
    found = []
    start = 0
    for i, n in enumerate(case.num_draft_tokens):
        tau = 1.0 if case.greedy[i] or meta.temperature is None else float(meta.temperature[i])
        for r in range(start, start + n):
            x = (case.target_logits[r].to(torch.float32) / tau).to(torch.float32)
            if meta.top_k is not None and int(meta.top_k[i]) < case.vocab:
                x = x.masked_fill(x < x.topk(int(meta.top_k[i])).values[-1], float("-inf"))
            ordered = x.sort().values  # ascending
            cut = ordered.softmax(-1).cumsum(-1) <= 1 - float(meta.top_p[i])
            cut[-1] = False
            kept = ordered[~cut]
            dropped = ordered[cut]
            if len(dropped) and torch.isfinite(kept[0]) and bool((dropped == kept[0]).any()):
                found.append(f"request {i} row {r}: {float(kept[0])} both cut and kept at top_p {float(meta.top_p[i])}")
        start += n
    return found


def test_no_corpus_case_ties_at_its_top_p_boundary() -> None:
    """docs/verification.md §1.4: exact tests never place ties at the top-p boundary (the top-k boundary
    needs no such rule: ties there are kept, which E17 checks)."""
    for seeded in (False, True):
        rng = random.Random(0)
        for index in range(2000):
            case = random_case(rng, seeded=seeded)
            assert not _ties_at_top_p_boundary(case), (index, _ties_at_top_p_boundary(case))


def _bonus_after_rejected_last_draft(*args: Any) -> torch.Tensor:
    """Our sampler, but a row that rejects its last draft also emits the bonus after the recovered token."""
    out = rejection_sample(*args)
    drafts, counts, bonus = args[0].tolist(), args[1], args[6]
    start = 0
    for i, n in enumerate(counts):
        row = out[i].tolist()
        length = row.index(-1) if -1 in row else len(row)
        if n > 0 and length == n and row[: n - 1] == drafts[start : start + n - 1]:
            out[i, n] = int(bonus[i, 0])
        start += n
    return out


def test_e4_catches_a_bonus_after_a_rejected_last_draft_and_e3_says_so() -> None:
    """Before: E4 passed such a row, E3 said "prefix [21] is not the drafts [26]" and E8 printed
    whole matrices."""
    report = check_rejection_sampler(_bonus_after_rejected_last_draft, level="quick", statistics=False)
    failed = {i: report[i] for i in report.failed()}
    assert {"E3", "E4", "E8"} <= set(failed), report.to_markdown()
    assert "bonus after a rejected draft" in failed["E3"].detail
    assert "bonus after a rejected draft" in failed["E4"].detail
    assert "first case: row " in failed["E8"].detail and "differs" in failed["E8"].detail


def _top_p_before_temperature(
    logits: torch.Tensor, cu: torch.Tensor, meta: SamplingMetadata, profile: Any
) -> torch.Tensor:
    """Our target distribution with the order of docs/verification.md §1.4 broken: top-p on the raw
    logits, then temperature, then top-k."""
    rows = request_of_rows(cu, logits.shape[0])
    x = logits.to(torch.float32)
    if meta.top_p is not None:
        x = apply_top_k_top_p(x, None, meta.top_p[rows])
    x = apply_temperature(x, row_temperatures(meta, rows, cu.shape[0]))
    if meta.top_k is not None:
        x = apply_top_k(x, meta.top_k[rows])
    return x.softmax(dim=-1, dtype=torch.float32)


def _top_k_drops_the_first_tie(
    logits: torch.Tensor, cu: torch.Tensor, meta: SamplingMetadata, profile: Any
) -> torch.Tensor:
    """Exactly k tokens survive top-k, ties at the threshold broken towards the higher index (the
    mutant ``top_k_drops_ties`` breaks them towards the lower one)."""
    rows = request_of_rows(cu, logits.shape[0])
    x = apply_temperature(logits.to(torch.float32), row_temperatures(meta, rows, cu.shape[0]))
    if meta.top_k is not None:
        flipped = x.flip(-1)
        rank = flipped.argsort(dim=-1, descending=True, stable=True).argsort(dim=-1).flip(-1)
        x = x.masked_fill(rank >= meta.top_k[rows].unsqueeze(1), float("-inf"))
    if meta.top_p is not None:
        x = apply_top_k_top_p(x, None, meta.top_p[rows])
    return x.softmax(dim=-1, dtype=torch.float32)


def _e17(candidate: Candidate) -> Verdict:
    tally = Tally()
    e17_masks(candidate, tally, random.Random(0), 0)
    return tally.verdict("E17")


def _loop_candidates(rules: LoopRules) -> list[Candidate]:
    """The loop with ``rules`` by route A (injected noise) and by route B (its own draws from the
    per-request generators the kit hands it)."""

    def loop(*args: Any, profile: SamplerProfile = INTENDED) -> torch.Tensor:
        return sample_with_rules(rules, *args, profile=profile)

    injectable = Injectable(loop)
    common: dict[str, Any] = {"takes": "logits", "profile": INTENDED, "greedy_temperature": 0.0}
    return [
        Candidate(fn=injectable, injector=injectable.inject, **common),
        Candidate(fn=injectable, injector=None, **common),
    ]


def test_e17_probes_the_candidates_own_masks() -> None:
    """Before: E17 computed our own ``compute_target_probs`` and never called the candidate, so it
    passed top-p before temperature (only E8 caught it) and top-k dropping tied values. Now it reads
    the masks off the candidate's output on rows whose outcome the masks force."""
    broken = {
        "top-p before temperature": replace(INTENDED_LOOP, target_probs=_top_p_before_temperature),
        "top-k drops ties (lower index kept)": MUTANT_RULES["top_k_drops_ties"],
        "top-k drops ties (higher index kept)": replace(INTENDED_LOOP, target_probs=_top_k_drops_the_first_tie),
        "temperature after top-k and top-p": MUTANT_RULES["temperature_after_top_p"],
    }
    for name, rules in broken.items():
        for candidate in _loop_candidates(rules):
            result = _e17(candidate)
            route = "A" if candidate.injector else "B"
            assert result.outcome is Outcome.FAIL, (name, route, result)
            assert "draft" in result.detail, result.detail
    ours = [
        *_loop_candidates(INTENDED_LOOP),
        Candidate(fn=rejection_sample, takes="logits", profile=INTENDED, injector=None, greedy_temperature=0.0),
        Candidate(
            fn=partial(rejection_sample, profile=VLLM_0_9_2),
            takes="logits",
            profile=VLLM_0_9_2,
            injector=None,
            greedy_temperature=-1.0,
        ),
    ]
    for candidate in ours:
        result = _e17(candidate)
        assert result.outcome is Outcome.PASS, result


def _draw_noise_exponentials_first(args: tuple[Any, ...], profile: SamplerProfile) -> RejectionNoise | None:
    """``draw_noise`` with one step swapped: a seeded random row draws its V exponentials before its
    nᵢ uniforms (docs/verification.md §2.1 has N2 before N4). The same draws, so the same final states."""
    counts, logits, meta = args[1], args[5], args[7]
    if meta.all_greedy:
        return None
    greedy = meta.is_greedy(len(counts), logits.device).tolist()
    uniforms = torch.rand(sum(counts), dtype=profile.uniform_dtype)
    exponentials = torch.empty(len(counts), logits.shape[1], dtype=torch.float32).exponential_()
    start = 0
    for i, n in enumerate(counts):
        generator = meta.generators.get(i)
        if generator is not None and not greedy[i] and n > 0:
            exponentials[i].exponential_(generator=generator)
            uniforms[start : start + n].uniform_(generator=generator)
        start += n
    return RejectionNoise(uniforms=uniforms, exponentials=exponentials)


def _exponentials_first(*args: Any) -> torch.Tensor:
    """Our sampler whose seeded rows draw their exponentials before their uniforms."""
    return rejection_sample_with_noise(*args, _draw_noise_exponentials_first(args, INTENDED))


def test_rng_order_and_e12_catch_exponentials_drawn_before_uniforms() -> None:
    """Before: RNG-ORDER and E12 compared only final generator states, which the swapped order leaves
    unchanged, so they passed; only E8 caught it. Now both also check the seeded rows' output against
    the draws predicted on clones in vLLM's order (docs/verification.md §2.3)."""
    report = check_rejection_sampler(_exponentials_first, level="quick", statistics=False)
    failed = {i: report[i] for i in report.failed()}
    assert {"RNG-ORDER", "E12", "E8"} <= set(failed), report.to_markdown()
    for check_id in ("RNG-ORDER", "E12"):
        assert "exponentials before" in failed[check_id].detail, failed[check_id].detail


def test_the_draw_order_checks_are_not_vacuous() -> None:
    """On the corpus cases RNG-ORDER and E12 use, the two draw orders predict different rows often."""
    rng = random.Random(0)
    distinguished = 0
    for _ in range(200):
        case = random_case(rng, seeded=True)
        vllm_order, swapped = (
            expected_output(case, predict_seeded_noise(case, INTENDED, exponentials_first=first), INTENDED)
            for first in (False, True)
        )
        distinguished += sum(1 for i in seeded_rows(case) if not torch.equal(vllm_order[i], swapped[i]))
    assert distinguished >= 100, distinguished
