"""Every Python code block of the README and of the user guide runs as written, each in a fresh
namespace."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = (ROOT / "README.md", ROOT / "docs" / "user-guide.md")
BLOCKS = [
    (path, block)
    for path in DOCUMENTS
    for block in re.findall(r"^```python\n(.*?)^```$", path.read_text(), flags=re.DOTALL | re.MULTILINE)
]


def test_the_readme_has_python_blocks() -> None:
    assert len(BLOCKS) >= 4
    assert {path for path, _ in BLOCKS} == set(DOCUMENTS), "the README and the user guide each have a block"


@pytest.mark.parametrize(("path", "block"), BLOCKS, ids=[f"{path.stem}-block{i}" for i, (path, _) in enumerate(BLOCKS)])
def test_readme_block_runs(path: Path, block: str) -> None:
    exec(compile(block, f"{path}:python-block", "exec"), {"__name__": "readme"})


def _layout_paths() -> list[str]:
    """The paths the README's layout tree names, each with its parent folders joined."""
    text = (ROOT / "README.md").read_text()
    tree = text.split("## Layout", 1)[1].split("```", 2)[1]
    paths, stack = [], []
    for line in tree.splitlines():
        if not line.strip():
            continue
        depth = (len(line) - len(line.lstrip())) // 2
        name = line.split()[0]
        stack[depth:] = [name]
        paths.append("".join(stack[: depth + 1]) if all(p.endswith("/") for p in stack[:depth]) else name)
    return paths


def test_the_readme_layout_matches_the_tree() -> None:
    """Every path the layout names exists, and every sub-package and top-level module of arctic_ref
    (and of arctic_ref.testing) is named."""
    named = _layout_paths()
    missing = [p for p in named if not (ROOT / p).exists()]
    assert not missing, missing
    package = ROOT / "arctic_ref"
    wanted = [f"arctic_ref/{p.name}{'/' if p.is_dir() else ''}" for p in package.iterdir() if p.name != "__pycache__"]
    wanted += [
        f"arctic_ref/testing/{p.name}/"
        for p in (package / "testing").iterdir()
        if p.is_dir() and p.name != "__pycache__"
    ]
    unnamed = sorted(p for p in wanted if p not in named and not p.endswith(("__init__.py", "py.typed")))
    assert not unnamed, unnamed
