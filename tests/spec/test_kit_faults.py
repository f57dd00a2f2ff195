"""Faults of the sampler kit found by a trial with independent implementations (issue 37, item 7):
each test fails on the kit as it was and passes on the fixed kit. The planted samplers are our
reference with one step swapped."""

import ast
from pathlib import Path

import arctic_ref

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
