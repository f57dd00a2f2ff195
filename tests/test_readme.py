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
