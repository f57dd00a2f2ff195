"""Faults of the sampler kit found by a trial with independent implementations (issue 37, item 7):
each test fails on the kit as it was and passes on the fixed kit. The planted samplers are our
reference with one step swapped."""

import ast
import inspect
import random
from dataclasses import fields
from pathlib import Path
from typing import Any

import torch

import arctic_ref
from arctic_ref.spec import INTENDED, MAX_SPEC_LEN, VLLM_0_9_2, rejection_sample
from arctic_ref.spec.loop import INTENDED_LOOP, LoopRules
from arctic_ref.testing.rejection.check_ids import CATEGORIES, MEANINGS
from arctic_ref.testing.rejection.exact import Candidate, _e15_errors, _Tally
from arctic_ref.testing.rejection.kit import check_rejection_sampler
from arctic_ref.testing.rejection.mutants import MUTANT_RULES, MUTATIONS, MutantLoop
from arctic_ref.testing.rejection.report import CheckStatus, ConformanceReport

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
    runner/drafters.py) were each defined twice; the kit's are now ``CheckStatus`` and ``ToyDrafter``."""
    for name in ("Status", "Drafter", "CheckStatus", "ToyDrafter"):
        assert len(_top_level_definitions(name)) <= 1, f"{name} is defined in {_top_level_definitions(name)}"
    assert _top_level_definitions("CheckStatus") == ["testing/rejection/report.py"]
    assert _top_level_definitions("ToyDrafter") == ["testing/rejection/toy_generation.py"]


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


def _status(report: ConformanceReport, check_id: str) -> CheckStatus:
    return next(c.status for c in report.checks if c.id == check_id)


def test_spec_length_check_accepts_the_users_own_value_error() -> None:
    """Before: E15 failed with "max_spec_len 33 raised ValueError, not SpecLengthError"."""
    report = check_rejection_sampler(_own_spec_length_error, level="quick", statistics=False)
    assert report.ok, report.to_markdown()
    assert _status(report, "E15-SPEC-LEN") is CheckStatus.PASS


def test_spec_length_check_accepts_vllms_assertion_under_the_vllm_profile() -> None:
    for profile, status in ((VLLM_0_9_2, CheckStatus.PASS), (INTENDED, CheckStatus.FAIL)):
        candidate = Candidate(
            fn=_asserts_spec_length, takes="logits", profile=profile, injector=None, greedy_temperature=-1.0
        )
        tally = _Tally()
        _e15_errors(candidate, tally, random.Random(0), 0)
        result = next(r for r in tally.results(["E15-SPEC-LEN"]))
        assert result.status is status, (profile.name, result)
    assert "AssertionError" in result.counterexample and "never a truncation" in result.counterexample


def test_e15_is_split_by_contract_and_the_strict_one_can_be_left_out() -> None:
    """An independent sampler that validates shapes, counts and lengths but not NaN rows failed all of
    E15 on "NaN in a random row: accepted". Now only E15-NAN fails, saying which contract it holds,
    and leaving out the strict category passes it."""
    report = check_rejection_sampler(_nan_rows_accepted, level="quick", statistics=False)
    assert _failed(report) == {"E15-NAN"}, report.to_markdown()
    nan = next(c for c in report.checks if c.id == "E15-NAN")
    assert "NaN" in nan.counterexample and "strict contract" in nan.counterexample and "F-4" in nan.counterexample
    lenient = check_rejection_sampler(_nan_rows_accepted, level="quick", statistics=False, categories=("semantics",))
    assert lenient.ok, lenient.to_markdown()
    assert {c.id for c in lenient.checks if c.status is CheckStatus.SKIP} >= {"E15-SHAPES", "E15-FLAGS", "E15-NAN"}


def test_every_sampler_check_has_a_category() -> None:
    assert set(CATEGORIES) == set(MEANINGS)
    assert {i for i, c in CATEGORIES.items() if c == "strict"} == {"E15-SHAPES", "E15-FLAGS", "E15-NAN"}
    assert "E15" not in MEANINGS
    assert all(MEANINGS[i].startswith("strict:") for i, c in CATEGORIES.items() if c == "strict")
