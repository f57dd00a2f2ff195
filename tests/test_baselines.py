"""The stored GPU baselines a CI gate compares against: each file holds every benchmark the gate
command collects, with the ratios stored beside the absolute times they come from, and every gate
command in docs/performance.md names a stored file; ``benchmarks.gate`` picks the card's own
baseline, and its per-suite thresholds hold the stored runs and fail a real regression (end to end
on CPU, with a stand-in suite)."""

import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch

from benchmarks.gate import BASELINES as BASELINES_DIR
from benchmarks.gate import (
    NO_TESTS,
    SUITES,
    TIMED_OUT,
    Suite,
    baseline_for,
    card_of,
    gate_args,
    main,
    merge_runs,
    run_gate,
    run_suites,
    split_json_target,
    stored_cards,
)

ROOT = Path(__file__).resolve().parents[1]
BASELINES = sorted(BASELINES_DIR.glob("*.json"))
THRESHOLDS = {suite.path.relative_to(ROOT).as_posix(): suite.threshold_percent for suite in SUITES}
"""Each gated suite's file, relative to the repository, and its median threshold in percent."""
GATE = re.compile(r"pytest (\S+) --benchmark-only --benchmark-compare=(\S+) --benchmark-compare-fail=median:(\d+)%")

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


def test_every_readme_gate_names_a_stored_baseline_and_its_suites_threshold() -> None:
    gates = GATE.findall((ROOT / "docs" / "performance.md").read_text())
    assert {(suite, Path(target).name) for suite, target, _ in gates} == {
        (suite, f"{card}-run1.json") for suite in THRESHOLDS for card in ("h200", "h100")
    }
    for suite, target, percent in gates:
        assert (ROOT / target).is_file(), target
        assert int(percent) == THRESHOLDS[suite], suite


def _medians(path: Path) -> dict[str, tuple[str, float]]:
    """Each benchmark's suite file (from its full name) and median."""
    return {
        bench["name"]: (bench["fullname"].split("::")[0], bench["stats"]["median"])
        for bench in _load(path)["benchmarks"]
    }


@pytest.mark.parametrize("card", stored_cards())
def test_each_suites_threshold_holds_the_stored_run_2(card: str) -> None:
    """The stored runs are the same code twice: run 2 passes the gate against run 1."""
    run1, run2 = (_medians(BASELINES_DIR / f"{card}-run{run}.json") for run in (1, 2))
    assert {file for file, _ in run2.values()} == set(THRESHOLDS)
    for name, (file, median) in run2.items():
        assert median <= run1[name][1] * (1 + THRESHOLDS[file] / 100), (card, name)


@pytest.mark.parametrize(
    ("device_name", "card"),
    [
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA A100-SXM4-80GB", "a100"),
        ("NVIDIA L40S", "l40s"),
    ],
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


def test_each_suite_is_compared_on_medians_at_its_own_threshold(tmp_path: Path) -> None:
    assert list(THRESHOLDS.items()) == [
        ("benchmarks/test_rejection_gpu.py", 100),
        ("benchmarks/gpu/test_decode.py", 10),
    ]
    baseline = BASELINES_DIR / "h200-run1.json"
    args = gate_args(SUITES[1], baseline, tmp_path / "part.json", ["-s"])
    assert args == [
        str(SUITES[1].path),
        "--benchmark-only",
        f"--benchmark-compare={baseline}",
        "--benchmark-compare-fail=median:10%",
        f"--benchmark-json={tmp_path / 'part.json'}",
        "-s",
    ]


def test_the_json_target_is_taken_out_of_the_arguments() -> None:
    assert split_json_target(["-s", "--benchmark-json=a.json", "-k", "x"]) == (Path("a.json"), ["-s", "-k", "x"])
    assert split_json_target(["--benchmark-json", "b.json", "-s"]) == (Path("b.json"), ["-s"])
    assert split_json_target(["-s"]) == (None, ["-s"])
    with pytest.raises(ValueError, match="needs a file name"):
        split_json_target(["-s", "--benchmark-json"])


def test_the_gate_exits_2_for_a_json_flag_without_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_gate("NVIDIA H200", ["--benchmark-json"]) == 2
    assert "needs a file name" in capsys.readouterr().err


def test_merged_runs_keep_the_first_runs_machine_and_every_benchmark(tmp_path: Path) -> None:
    parts = []
    for index, names in enumerate((["a", "b"], ["c"])):
        part = tmp_path / f"part{index}.json"
        part.write_text(json.dumps({"machine_info": {"node": index}, "benchmarks": [{"name": n} for n in names]}))
        parts.append(part)
    merge_runs(parts, tmp_path / "merged.json")
    merged = _load(tmp_path / "merged.json")
    assert merged["machine_info"] == {"node": 0}
    assert [bench["name"] for bench in merged["benchmarks"]] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="no pytest-benchmark files"):
        merge_runs([], tmp_path / "none.json")


QUIET = ["-q", "-p", "no:cacheprovider"]
"""pytest arguments for the stand-in suites' runs: no output to speak of, no cache written."""

STAND_IN = """
import time


def test_sleep(benchmark):
    benchmark.pedantic(time.sleep, args=(0.004,), rounds=5, warmup_rounds=1)
"""


def _stand_in(tmp_path: Path, file: str = "test_stand_in.py", test: str = "test_sleep") -> Suite:
    """The stand-in suite written to ``tmp_path / file``, its one benchmark named ``test``; gated at 100%."""
    path = tmp_path / file
    path.write_text(STAND_IN.replace("test_sleep", test))
    return Suite(path, 100)


def _scaled(run: Path, factor: float, target: Path) -> Path:
    data = _load(run)
    for bench in data["benchmarks"]:
        bench["stats"] = {
            key: value * factor if isinstance(value, float) else value for key, value in bench["stats"].items()
        }
    target.write_text(json.dumps(data))
    return target


def test_a_suite_fails_past_its_threshold_and_passes_within_it(tmp_path: Path) -> None:
    """End to end on CPU with a stand-in suite (a 4 ms sleep): against a baseline of its own run it
    passes; against one 10× faster it fails (pytest-benchmark's regression exit), and the merged
    ``--benchmark-json`` holds the run either way."""
    suite = _stand_in(tmp_path)
    first = tmp_path / "first.json"
    assert run_suites([suite], _four_ms_baseline(tmp_path), QUIET, first) == 0
    assert [bench["name"] for bench in _load(first)["benchmarks"]] == ["test_sleep"]
    again = tmp_path / "again.json"
    assert run_suites([suite], first, QUIET, again) == 0
    faster = _scaled(first, 0.1, tmp_path / "faster.json")
    assert run_suites([suite], faster, QUIET, tmp_path / "third.json") == 1
    assert (tmp_path / "third.json").is_file()


def _four_ms_baseline(tmp_path: Path) -> Path:
    """A baseline for the stand-in's first run: 4 ms medians, as a sleep of 4 ms gives."""
    seed = {
        "machine_info": {},
        "commit_info": {},
        "version": "5.2.3",
        "benchmarks": [
            {
                "group": None,
                "name": "test_sleep",
                "fullname": "test_stand_in.py::test_sleep",
                "params": None,
                "param": None,
                "extra_info": {},
                "options": {},
                "stats": {
                    "min": 0.004,
                    "max": 0.004,
                    "mean": 0.004,
                    "stddev": 0.0,
                    "rounds": 5,
                    "median": 0.004,
                    "iqr": 0.0,
                    "q1": 0.004,
                    "q3": 0.004,
                    "iqr_outliers": 0,
                    "stddev_outliers": 0,
                    "outliers": "0;0",
                    "ld15iqr": 0.004,
                    "hd15iqr": 0.004,
                    "ops": 250.0,
                    "total": 0.02,
                    "iterations": 1,
                },
            }
        ],
    }
    path = tmp_path / "seed.json"
    path.write_text(json.dumps(seed))
    return path


def test_a_suite_filtered_away_passes_unless_every_suite_is(tmp_path: Path) -> None:
    """``-k`` may select one suite's tests only: the other suite has nothing to compare and passes;
    a filter that selects nothing at all fails the gate (pytest's exit 5)."""
    suites = [_stand_in(tmp_path), _stand_in(tmp_path, "test_other.py", "test_nap")]
    baseline = _four_ms_baseline(tmp_path)
    target = tmp_path / "merged.json"
    assert run_suites(suites, baseline, [*QUIET, "-k", "test_sleep"], target) == 0
    assert [bench["name"] for bench in _load(target)["benchmarks"]] == ["test_sleep"]
    assert run_suites(suites, baseline, [*QUIET, "-k", "nothing_matches"], None) == NO_TESTS
    faster = _scaled(target, 0.1, tmp_path / "faster.json")
    assert run_suites(suites, faster, [*QUIET, "-k", "test_sleep"], None) == 1


def test_a_suite_past_its_time_limit_fails_the_gate(tmp_path: Path) -> None:
    seed = _four_ms_baseline(tmp_path)
    assert run_suites([_stand_in(tmp_path)], seed, ["-q"], None, timeout_s=0.01) == TIMED_OUT


@pytest.mark.skipif(torch.cuda.is_available(), reason="with CUDA main() runs the gate itself")
def test_the_gate_without_cuda_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "no CUDA device" in capsys.readouterr().err
