"""Faults of the sampler kit found by a trial with independent implementations (issue 37, item 7):
each test fails on the kit as it was and passes on the fixed kit. The planted samplers are our
reference with one step swapped."""

import ast
import inspect
from dataclasses import fields
from pathlib import Path

import arctic_ref
from arctic_ref.spec.loop import INTENDED_LOOP, LoopRules
from arctic_ref.testing.rejection.mutants import MUTANT_RULES, MUTATIONS, MutantLoop

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
