"""The GPU CI gate as one command, whatever the card: ``python -m benchmarks.gate [pytest args]``.

It names the visible GPU's card from its CUDA device name (``NVIDIA H100 80GB HBM3`` → ``h100``),
takes that card's stored run 1 (``benchmarks/baselines/<card>-run1.json``) and runs the gated suites
with ``--benchmark-compare-fail`` on medians at ``THRESHOLD``: the exit status is pytest's, so a
median more than 30% over the baseline fails the job. Extra arguments go to pytest after ours
(``-s`` to print every target, ``--benchmark-json=F`` to store the run).

A card without stored baselines is an error that names the card and the cards that have them,
never a comparison against another card's figures (an H100's decode medians are 24–33% over the
H200's, so across cards the gate measures the card, not the code). Without CUDA it exits with 2.
"""

import re
import sys
from pathlib import Path

import pytest
import torch

BENCHMARKS = Path(__file__).resolve().parent
BASELINES = BENCHMARKS / "baselines"
GATED = (str(BENCHMARKS / "test_rejection_gpu.py"), str(BENCHMARKS / "gpu" / "test_decode.py"))
THRESHOLD = "median:30%"
CARD = re.compile(r"\b([A-Z]{1,2}\d{2,4}[A-Z]?)\b")


def card_of(device_name: str) -> str:
    """The card's key in baseline file names: the first model token of a CUDA device name, lower
    case (``NVIDIA H200`` → ``h200``, ``NVIDIA A100-SXM4-80GB`` → ``a100``)."""
    found = CARD.search(device_name)
    if found is None:
        raise ValueError(f"no card model (like H100) in the device name {device_name!r}")
    return found.group(1).lower()


def stored_cards(baselines: Path = BASELINES) -> list[str]:
    """The cards with a stored run 1, sorted."""
    return sorted(path.name.removesuffix("-run1.json") for path in baselines.glob("*-run1.json"))


def baseline_for(device_name: str, baselines: Path = BASELINES) -> Path:
    """The stored run 1 of the card named by ``device_name``; a ``ValueError`` naming the card and
    the stored cards when there is none."""
    card = card_of(device_name)
    path = baselines / f"{card}-run1.json"
    if not path.is_file():
        raise ValueError(
            f"no stored baseline for {card} ({device_name!r}); stored: {', '.join(stored_cards(baselines)) or 'none'}. "
            f"Store one: pytest {' '.join(GATED)} --benchmark-only --benchmark-json={path}"
        )
    return path


def gate_args(baseline: Path, extra: list[str]) -> list[str]:
    """pytest's arguments for the gate against ``baseline``, then ``extra``."""
    return [
        *GATED, "--benchmark-only", f"--benchmark-compare={baseline}", f"--benchmark-compare-fail={THRESHOLD}", *extra
    ]  # fmt: skip


def run_gate(device_name: str, argv: list[str]) -> int:
    """The gate for the card named ``device_name``: pytest's exit status, or 2 (with the reason on
    stderr) when the card has no stored baseline."""
    try:
        baseline = baseline_for(device_name)
    except ValueError as error:
        print(f"benchmarks.gate: {error}", file=sys.stderr)
        return 2
    args = gate_args(baseline, argv)
    print(f"benchmarks.gate: {device_name} against {baseline.name}: pytest {' '.join(args)}", flush=True)
    return int(pytest.main(args))


def main(argv: list[str]) -> int:
    if not torch.cuda.is_available():
        print("benchmarks.gate: no CUDA device; the gate runs on a GPU", file=sys.stderr)
        return 2
    return run_gate(torch.cuda.get_device_name(0), argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
