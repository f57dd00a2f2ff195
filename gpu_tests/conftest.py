"""GPU tests: skipped, with the reason, where CUDA is absent. No runtime shape-check hook here (the
GPU image has no beartype and the kernels' launch overhead is what is measured)."""

from pathlib import Path

import pytest
import torch

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA: no GPU visible to torch on this machine")
    for item in items:
        if _HERE in Path(str(item.path)).parents:  # only this folder's tests, never the others collected with it
            item.add_marker(skip)
