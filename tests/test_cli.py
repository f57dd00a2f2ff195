"""``arctic-ref simulate`` and ``check`` end to end, and the upstream simulator bugs not copied
(docs/suffix-decoding.md §8)."""

import argparse
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from arctic_ref import cli
from arctic_ref.check_options import SETTINGS, CheckOptions, check_options
from arctic_ref.cli import main
from arctic_ref.model.config import tiny_config
from arctic_ref.parallel.launch import RankInfo
from arctic_ref.runner.drafters import HiddenStateDrafter
from arctic_ref.runner.generate import GenerateJob, NumSpecDefaults, SpecMethod, generate_on_rank
from arctic_ref.spec.drafts import DraftRow
from arctic_ref.suffix.trace_file import read_trace, write_trace
from arctic_ref.suffix.upstream import UPSTREAM_AVAILABLE
from arctic_ref.suffix.workload import code_edit_trace
from arctic_ref.testing.check import Check, Verdict
from arctic_ref.testing.front_door import our_checks, run_checks

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "user-guide.md"


def simulate(capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, object]:
    assert main(["simulate", *flags]) == 0
    summary: dict[str, object] = json.loads(capsys.readouterr().out)
    return summary


def test_jsonl_trace_with_lists_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Bug 4 of upstream's simulator: pre-tokenized JSON lists must work."""
    path = tmp_path / "trace.jsonl"
    write_trace(path, code_edit_trace(requests=4))
    assert [r.req_id for r in read_trace(path)] == [0, 1, 2, 3]
    summary = simulate(capsys, "--trace", str(path))
    assert summary["requests"] == 4 and isinstance(summary["steps"], int) and summary["steps"] > 4


def test_max_spec_tokens_and_offset_take_effect(capsys: pytest.CaptureFixture[str]) -> None:
    """Bugs 1 and 2: --max-spec-tokens and --max-spec-offset reach speculate."""
    wide = simulate(capsys, "--requests", "5", "--max-spec-tokens", "32")
    narrow = simulate(capsys, "--requests", "5", "--max-spec-tokens", "4")
    offset = simulate(
        capsys, "--requests", "5", "--max-spec-tokens", "32", "--max-spec-factor", "0", "--max-spec-offset", "2"
    )
    assert isinstance(narrow["drafted_per_step"], float) and narrow["drafted_per_step"] <= 4
    assert isinstance(wide["drafted_per_step"], float) and wide["drafted_per_step"] > 8
    assert isinstance(offset["drafted_per_step"], float) and 0 < offset["drafted_per_step"] <= 2


def test_summary_fields_and_steps_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Bug 5: time per call, never per drafted token (which divides by zero when nothing is drafted)."""
    steps = tmp_path / "steps.jsonl"
    summary = simulate(capsys, "--requests", "3", "--max-spec-tokens", "0", "--steps-out", str(steps), "--memory")
    assert summary["acceptance_rate"] is None and summary["drafted_per_step"] == 0
    assert isinstance(summary["spec_us_per_call"], float) and summary["spec_us_per_call"] > 0
    assert isinstance(summary["peak_mem_bytes"], int) and summary["peak_mem_bytes"] > 0
    records = [json.loads(line) for line in steps.read_text().splitlines()]
    assert len(records) == summary["steps"]
    assert set(records[0]) == {
        "req_id",
        "step",
        "context_len",
        "match_len",
        "score",
        "num_draft",
        "num_accepted",
        "num_out",
        "spec_us",
        "update_us",
    }


def test_path_drafts_are_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    """Bug 7: the runner's mode (path) by default; --tree switches."""
    assert simulate(capsys, "--requests", "2")["config"]["use_tree_spec"] is False  # type: ignore[index]
    assert simulate(capsys, "--requests", "2", "--tree")["config"]["use_tree_spec"] is True  # type: ignore[index]


def test_warm_and_no_prompt(capsys: pytest.CaptureFixture[str]) -> None:
    warm = simulate(capsys, "--requests", "6", "--warm", "3")
    assert warm["requests"] == 3
    cold = simulate(capsys, "--requests", "3", "--no-prompt")
    assert cold["requests"] == 3


def test_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "replay.png"
    simulate(capsys, "--requests", "3", "--plot", str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_trace_is_rejected_before_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"prompt_token_ids": [1, 2], "response_token_ids": [3]}\n{"prompt_token_ids": [1, -2147483648], "response_token_ids": [3]}\n'
    )
    assert main(["simulate", "--trace", str(path)]) == 2
    assert "prompt_token_ids[1] = -2147483648 is reserved" in capsys.readouterr().err


@pytest.mark.upstream
@pytest.mark.skipif(not UPSTREAM_AVAILABLE, reason="arctic-inference 0.3.0 is not installed")
def test_impl_both_reports_identical_drafts_and_ratios(capsys: pytest.CaptureFixture[str]) -> None:
    summary = simulate(capsys, "--requests", "6", "--impl", "both", "--repeat", "2")
    assert summary["drafts_identical"] is True
    assert isinstance(summary["spec_ratio"], float) and isinstance(summary["update_ratio"], float)


def test_check_single_process_checks_pass(capsys: pytest.CaptureFixture[str]) -> None:
    """Every check but the multi-process ``layouts`` group, which conformance/ runs in the same CI
    job (the same workers and comparisons), and the engine checks, which scripts/test-vllm.sh runs on
    the reference engine in the same CI job; the full command is the slow test below."""
    single = [
        check.qualified_id
        for check in our_checks(CheckOptions())
        if check.group != "layouts" and check.component != "engine"
    ]
    assert main(["check", "--only", ",".join(single)]) == 0
    report = capsys.readouterr().out
    assert "FAIL" not in report.split("passed or skipped")[0] and "suffix tree vs naive oracle" in report


@pytest.mark.slow
@pytest.mark.timeout(2400)  # with the engine checks on the reference engine, about 15 min on 2 loaded cores
def test_check_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check"]) == 0
    report = capsys.readouterr().out
    assert "FAIL" not in report.split("passed or skipped")[0] and "spec-lossless" in report


def test_generate_json_matches_the_python_api(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "--max-tokens", "6", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = generate_on_rank(RankInfo(0, 1, "gloo"), GenerateJob(max_tokens=6))
    assert expected is not None
    assert [line["output_token_ids"] for line in lines] == [list(r.output_token_ids) for r in expected]
    assert list(lines[0]) == [
        "prompt_index",
        "output_token_ids",
        "num_steps",
        "num_draft_tokens",
        "num_accepted_tokens",
        "finish_reason",
    ]
    assert [line["prompt_index"] for line in lines] == [0, 1, 2, 3]


def test_generate_stop_token_ids(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "--max-tokens", "12", "--json"]) == 0
    full = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    stop = full[0]["output_token_ids"][3]
    assert main(["generate", "--max-tokens", "12", "--json", "--stop-token-ids", f"{stop},{stop}"]) == 0
    stopped = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    for before, after in zip(full, stopped, strict=True):
        tokens = before["output_token_ids"]
        cut = tokens.index(stop) + 1 if stop in tokens else len(tokens)
        assert after["output_token_ids"] == tokens[:cut]
        assert after["finish_reason"] == ("stop" if stop in tokens else "length")


def test_generate_sampled_is_reproducible(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["generate", "--max-tokens", "5", "--json", "--temperature", "0.9", "--sampling-seed", "3"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert main(args) == 0
    assert capsys.readouterr().out == first
    assert main([*args[:-1], "4"]) == 0
    assert capsys.readouterr().out != first


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tp", "2", "--sp", "3"], "num_attention_heads(8) is not divisible by tp(2) * sp(3) = 6"),
        (["--tp", "0"], "--tp(0) and --sp(1) must be >= 1"),
        (["--shift-threshold", "4"], "--shift-threshold(4) must be >= 0 and needs --sp > 1 (got --sp 1)"),
        (
            ["--sp", "2", "--shift-threshold", "-1"],
            "--shift-threshold(-1) must be >= 0 and needs --sp > 1 (got --sp 2)",
        ),
        (["--spec", "arctic", "--num-spec-tokens", "4"], "--num-spec-tokens(4) > the speculator's n_predict(3)"),
        (["--spec", "suffix", "--num-spec-tokens", "33"], "--num-spec-tokens(33) must be in [1, 32]"),
        (["--kernels", "triton"], "kernels('triton') needs a CUDA device and Triton: device('cpu')"),
        (["--cuda-graphs"], "--cuda-graphs needs --device cuda (got 'cpu')"),
        (["--stop-token-ids", "3,512"], "--stop-token-ids [512] must be in [0, 512)"),
    ],
)
def test_generate_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(["generate", *argv]) == 2
    assert message in capsys.readouterr().err


def test_generate_rejects_out_of_vocab_prompts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt_token_ids": [1, 2, 600]}\n')
    assert main(["generate", "--prompts", str(prompts)]) == 2
    assert "[0, 512)" in capsys.readouterr().err


@pytest.mark.parametrize("spec", ["suffix", "ngram", "arctic"])
def test_generate_with_drafts_is_lossless_and_reports_acceptance(capsys: pytest.CaptureFixture[str], spec: str) -> None:
    assert main(["generate", "--max-tokens", "12", "--json"]) == 0
    plain = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert main(["generate", "--max-tokens", "12", "--json", "--spec", spec, "--num-spec-tokens", "3"]) == 0
    speculative = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["output_token_ids"] for r in speculative] == [r["output_token_ids"] for r in plain]
    assert sum(r["num_draft_tokens"] for r in speculative) > 0
    assert all(0 <= r["num_accepted_tokens"] <= r["num_draft_tokens"] for r in speculative)


def test_check_only_selects_checks(capsys: pytest.CaptureFixture[str]) -> None:

    checks = our_checks(CheckOptions())
    assert len({check.qualified_id for check in checks}) == len(checks)  # one definition per id
    assert next(check.id for check in checks if check.group == "layouts") == "layouts"
    assert main(["check", "--only", "layout,cudagraph"]) == 0
    out = capsys.readouterr().out
    assert "layout: group tables" in out and "cudagraph:" in out and "suffix tree" not in out
    assert main(["check", "--only", "nope"]) == 2
    assert "unknown checks ['nope']" in capsys.readouterr().err


def test_generate_packed_kernels_give_the_reference_json(capsys: pytest.CaptureFixture[str]) -> None:
    """``--kernels packed`` (the fused forward's structure with torch ops) on the CPU: the same tokens."""
    assert main(["generate", "--max-tokens", "6", "--json", "--spec", "suffix"]) == 0
    reference = capsys.readouterr().out
    assert main(["generate", "--max-tokens", "6", "--json", "--spec", "suffix", "--kernels", "packed"]) == 0
    assert capsys.readouterr().out == reference


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "bring-your-own"


@pytest.mark.parametrize("suffix", [".md", ".json", ".xml"])
def test_check_impl_reports_and_exits_by_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    """``check --impl``: the plugin's checks in the report table; 1 when one fails, 0 when all pass;
    ``--report`` writes the rows in the suffix's format."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    report = tmp_path / f"report{suffix}"
    assert main(["check", "--impl", "drafter=byo.drafter:make_drafter", "--report", str(report)]) == 0
    assert "drafter lossless-64" in capsys.readouterr().out
    text = report.read_text()
    assert "drafter bounds" in text
    if suffix == ".json":
        assert json.loads(text)["failed"] == 0
    assert main(["check", "--impl", "drafter=byo.broken:make_drafter_too_long", "--report", str(report)]) == 1
    out = capsys.readouterr().out
    assert "drafter bounds" in out and "FAIL" in out and "(D8)" in out
    if suffix == ".xml":
        assert "<failure" in report.read_text()


def test_check_only_selects_among_the_checks_of_impl(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--only`` with ``--impl``: the implementation's checks it names, by id or qualified id; an
    unknown name is the same usage error as without ``--impl``."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    impl = ["check", "--impl", "drafter=byo.drafter:make_drafter"]
    assert main([*impl, "--only", "bounds,drafter/lossless-64"]) == 0
    captured = capsys.readouterr()
    assert "[2/2] lossless-64: PASS" in captured.err and "[3/" not in captured.err
    assert "1 implementations, 2 rows: 2 passed or skipped, 0 failed" in captured.out
    assert main([*impl, "--only", "bounds,nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown checks ['nope']; known: " in err and "drafter/bounds" in err


def test_plain_check_honours_the_settings_and_names_them_as_typed(capsys: pytest.CaptureFixture[str]) -> None:
    """Without ``--impl`` the settings go into our checks' options too: our engine is built on
    ``--engine-model``, and a directory without config.json is a usage error naming the CLI's option."""
    assert main(["check", "--only", "layout", "--engine-model", "/nonexistent-model"]) == 2
    assert "--engine-model=/nonexistent-model: no config.json there" in capsys.readouterr().err


def test_check_takes_every_setting_of_the_plugin_with_its_defaults() -> None:
    """``arctic-ref check``'s options are the plugin's settings (``--<name>`` for ``--arctic-ref-<name>``)
    plus its own; parsed with none given, they are ``CheckOptions()``."""
    commands = next(a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction))
    check = commands.choices["check"]
    flags = {flag for action in check._actions for flag in action.option_strings}
    assert flags == {"-h", "--help", *OWN_CHECK_FLAGS, *(setting.flag("--") for setting in SETTINGS)}
    args = cli._parser().parse_args(["check"])
    assert check_options(args, "--", option_prefix="--arctic-ref-", setting_prefix="--arctic-ref-") == CheckOptions()


OWN_CHECK_FLAGS = ("--only", "--impl", "--engine", "--report")
"""``arctic-ref check``'s options that are not settings of ``CheckOptions``."""


def test_the_user_guides_check_flags_are_the_clis() -> None:
    """docs/user-guide.md's ``arctic-ref check`` table lists the command's own flags, and the sentence
    under it every setting, none missing and none extra."""
    section = GUIDE.read_text(encoding="utf-8").split("\n### `arctic-ref check`\n", 1)[1].split("\n### ", 1)[0]
    table, after = section.split("\n|---|---|\n", 1)[1].split("\n\n", 1)
    assert [line.split("`")[1].split(" ")[0] for line in table.splitlines()] == list(OWN_CHECK_FLAGS)
    sentence = after.split("\n\n", 1)[0]
    assert re.findall(r"`(--[a-z-]+)`", sentence) == [setting.flag("--") for setting in SETTINGS]


def test_the_front_door_settles_every_verdict_by_strict(capsys: pytest.CaptureFixture[str]) -> None:
    """``strict`` is applied where the checks run: a failure a known upstream difference explains
    passes (and says so), and fails under ``strict``; any other failure fails either way."""
    known = Verdict(passed=False, compared="x", known_difference="X1", detail="d")
    checks = [
        Check(component="suffix-tree", id="known", meaning="m", run=lambda: known),
        Check(component="suffix-tree", id="plain", meaning="m", run=lambda: Verdict(passed=False, compared="x")),
    ]
    for strict, outcomes in ((False, ["PASS", "FAIL"]), (True, ["FAIL", "FAIL"])):
        runs = run_checks(checks, lambda _: None, strict=strict)
        assert [str(run.verdict.outcome) for run in runs] == outcomes
        assert runs[0].verdict.known_difference == "X1"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--impl", "drafter=byo.nope:x"], "--impl drafter=byo.nope:x: module 'byo.nope' does not import"),
        (
            ["--impl", "samplr=byo.sampler:rejection_sample"],
            "COMPONENT one of suffix-cache, suffix-tree, sampler, exchange, drafter",
        ),
        (
            ["--impl", "drafter=byo.drafter:make_drafter", "--report", "out.html"],
            "the suffix must be one of .md, .json, .xml",
        ),
    ],
    ids=["no-module", "no-component", "bad-report-suffix"],
)
def test_check_impl_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str], message: str
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    assert main(["check", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_prompts_and_config_errors_name_the_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"prompt_token_ids": [1, 2]}\n{"prompt_token_ids": [3,\n')
    assert main(["generate", "--prompts", str(prompts)]) == 2
    assert f"{prompts}:2: not JSON" in capsys.readouterr().err
    prompts.write_text("\n\n")
    assert main(["generate", "--prompts", str(prompts)]) == 2
    assert f"{prompts}: no prompts" in capsys.readouterr().err
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{\n  "hidden_size": 64,\n  "vocab_size": ,\n}\n')
    assert main(["generate", "--model", str(model)]) == 2
    assert f"{model / 'config.json'}:3: not JSON" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max-spec-tokens", "-5"], "--max-spec-tokens(-5) must be >= 0"),
        (["--min-token-prob", "2"], "--min-token-prob(2.0) must be in [0, 1]"),
        (["--requests", "0"], "--requests(0) must be >= 1"),
        (["--repeat", "0"], "--repeat(0) must be >= 1"),
    ],
)
def test_simulate_rejects_impossible_parameters_by_flag(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["simulate", *argv]) == 2
    assert message in capsys.readouterr().err


def test_check_progress_counts_the_ids_of_only_and_the_table_names_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--only", "layout,heads,cudagraph"]) == 0
    captured = capsys.readouterr()
    assert "[3/3] cudagraph: PASS" in captured.err and "[4/" not in captured.err
    assert "3 checks, 3 rows: 3 passed or skipped, 0 failed" in captured.out
    assert [line.split()[0] for line in captured.out.splitlines()[2:5]] == ["layout", "heads", "cudagraph"]


DOCUMENTED_NUM_SPEC_TOKENS: dict[SpecMethod, int] = {"suffix": 32, "ngram": 3, "arctic": 3}
"""docs/runner.md §2.2 (suffix: ``suffix_max_spec_tokens``, default 32), §2.3 (n-gram: 3) and §2.4 (the
Arctic speculator: its n_predict, 3)."""


def default_draft_length(job: GenerateJob) -> int:
    """The longest draft ``job``'s drafter makes with ``--num-spec-tokens`` left out, measured on a
    period-2 history of 200 tokens (every drafter drafts its full budget there)."""
    model = tiny_config()
    drafter = job.drafter(model, 1024, torch.device("cpu"))
    tokens = [1, 2] * 100
    row = DraftRow(req_id="r", token_ids=tokens, num_prompt_tokens=199, sampled=tokens[-1:])
    if isinstance(drafter, HiddenStateDrafter):
        return len(drafter.propose_with_hidden([row], torch.zeros(1, model.hidden_size, dtype=torch.float64), [0])[0])
    return len(drafter.propose([row])[0])


def undocumented_defaults(job_for: Callable[[SpecMethod], GenerateJob]) -> list[str]:
    """Each method whose measured default draft length is not the documented one (bugs.md V-16)."""
    return [
        f"--spec {method}: drafts {length} tokens by default, the documentation says {documented}"
        for method, documented in DOCUMENTED_NUM_SPEC_TOKENS.items()
        if (length := default_draft_length(job_for(method))) != documented
    ]


def test_num_spec_tokens_defaults_are_the_documented_ones_and_the_v16_replay_is_caught(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """bugs.md V-16: ``--num-spec-tokens``'s default per ``--spec`` is what docs/runner.md documents and
    ``--help`` prints, measured by the drafts it makes; a build whose suffix default disagrees (24,
    an injected ``NumSpecDefaults``) is named."""
    assert undocumented_defaults(lambda method: GenerateJob(spec=method)) == []
    replay = NumSpecDefaults(suffix=24)
    assert undocumented_defaults(lambda method: GenerateJob(spec=method, spec_defaults=replay)) == [
        "--spec suffix: drafts 24 tokens by default, the documentation says 32"
    ]
    with pytest.raises(SystemExit):
        main(["generate", "--help"])
    assert "default per --spec: suffix 32, ngram 3, arctic 3" in " ".join(capsys.readouterr().out.split())
