"""The stored GPU baselines a CI gate compares against: each file holds every benchmark the gate
command collects, with the ratios stored beside the absolute times they come from, and every gate
command in the README names a stored file; ``benchmarks.gate`` picks the card's own baseline."""

import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch

from benchmarks.gate import BASELINES as BASELINES_DIR
from benchmarks.gate import baseline_for, card_of, gate_args, main, run_gate, stored_cards

ROOT = Path(__file__).resolve().parents[1]
BASELINES = sorted(BASELINES_DIR.glob("*.json"))
GATE = re.compile(r"--benchmark-compare=(\S+) --benchmark-compare-fail=median:(\d+)%")

SAMPLER_IDS = ["1x4", "8x4", "32x4", "256x4", "256x16", "64x8-probs", "256x4-probs"]
EXPECTED = {
    *(f"test_rejection_sample_against_floor[{shape}]" for shape in SAMPLER_IDS),
    "test_realistic_mix_breakdown",
    "test_suffix_regime_one_request_64_drafts",
    *(f"test_decode_step[{b}-{k}]" for b in (1, 8, 32, 128) for k in ("reference", "triton")),
    *(f"test_verify_step_against_decode[{d}-{k}]" for d in (1, 3, 7, 15) for k in ("reference", "triton")),
}
# Each ratio and the two stored times it is the quotient of.
RATIOS = {
    "graph_over_floor": ("graph_ms", "floor_ms"),
    "graph_over_plain_torch": ("graph_ms", "plain_torch_ms"),
    "G3_verify_over_decode": ("verify_ms", "decode_ms"),
}


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_each_card_has_two_runs() -> None:
    cards = stored_cards()
    assert set(cards) >= {"h200", "h100"}
    assert {path.name for path in BASELINES} == {f"{card}-run{run}.json" for card in cards for run in (1, 2)}


@pytest.mark.parametrize("path", BASELINES, ids=[path.stem for path in BASELINES])
def test_a_baseline_holds_every_gated_benchmark(path: Path) -> None:
    benchmarks = _load(path)["benchmarks"]
    names = [bench["name"] for bench in benchmarks]
    assert sorted(names) == sorted(EXPECTED)
    for bench in benchmarks:
        assert bench["stats"]["median"] > 0, bench["name"]


@pytest.mark.parametrize("path", BASELINES, ids=[path.stem for path in BASELINES])
def test_stored_ratios_are_the_quotients_of_stored_times(path: Path) -> None:
    checked = 0
    for bench in _load(path)["benchmarks"]:
        extra = bench["extra_info"]
        for ratio, (numerator, denominator) in RATIOS.items():
            if ratio in extra:
                assert extra[ratio] == pytest.approx(extra[numerator] / extra[denominator], rel=1e-9), bench["name"]
                checked += 1
        if bench["name"].startswith(("test_decode_step", "test_rejection_sample_against_floor")):
            assert "graph_over_floor" in extra, bench["name"]
        if bench["name"].startswith("test_verify_step_against_decode"):
            assert "G3_verify_over_decode" in extra, bench["name"]
    assert checked == 7 * 2 + 8 + 8


def test_every_readme_gate_names_a_stored_baseline() -> None:
    gates = GATE.findall((ROOT / "README.md").read_text())
    assert {Path(target).name for target, _ in gates} == {"h200-run1.json", "h100-run1.json"}
    for target, percent in gates:
        assert (ROOT / target).is_file(), target
        assert int(percent) == 30


@pytest.mark.parametrize(
    ("device_name", "card"),
    [("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H200", "h200"), ("NVIDIA A100-SXM4-80GB", "a100"), ("NVIDIA L40S", "l40s")],
)
def test_the_gate_names_the_card(device_name: str, card: str) -> None:
    assert card_of(device_name) == card


def test_the_gate_takes_the_cards_run_1() -> None:
    assert baseline_for("NVIDIA H100 80GB HBM3") == BASELINES_DIR / "h100-run1.json"
    assert baseline_for("NVIDIA H200") == BASELINES_DIR / "h200-run1.json"
    assert stored_cards() == ["h100", "h200"]


def test_the_gate_refuses_a_card_without_baselines() -> None:
    with pytest.raises(ValueError, match=r"no stored baseline for a100 .*stored: h100, h200"):
        baseline_for("NVIDIA A100-SXM4-80GB")
    with pytest.raises(ValueError, match="no card model"):
        card_of("Some GPU")


def test_the_gate_exits_2_for_a_card_without_baselines(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_gate("NVIDIA A100-SXM4-80GB", ["-s"]) == 2
    err = capsys.readouterr().err
    assert "no stored baseline for a100" in err and "--benchmark-json=" in err


def test_the_gate_compares_medians_at_30_percent() -> None:
    args = gate_args(BASELINES_DIR / "h200-run1.json", ["-s"])
    assert args[-1] == "-s" and "--benchmark-only" in args
    assert f"--benchmark-compare={BASELINES_DIR / 'h200-run1.json'}" in args
    assert "--benchmark-compare-fail=median:30%" in args
    assert [Path(arg).relative_to(ROOT).as_posix() for arg in args[:2]] == [
        "benchmarks/test_rejection_gpu.py",
        "benchmarks/gpu/test_decode.py",
    ]


@pytest.mark.skipif(torch.cuda.is_available(), reason="with CUDA main() runs the gate itself")
def test_the_gate_without_cuda_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "no CUDA device" in capsys.readouterr().err
