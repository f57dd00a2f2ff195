"""The engine component through the plugin and the CLI: bad input is one line and a usage exit
status, before any check runs."""

import textwrap
from pathlib import Path

import pytest

from arctic_ref.cli import main


def test_plugin_refuses_a_module_that_does_not_import(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--arctic-ref-engine=no_such_engine_module:LLM")
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        ["*--arctic-ref-engine=no_such_engine_module:LLM: module 'no_such_engine_module' does not import*"]
    )


def test_plugin_refuses_a_factory_that_raises_naming_the_exception(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        my_engine=textwrap.dedent(
            """
            from arctic_ref.runner.llm import SamplingParams

            def build(**kwargs):
                raise RuntimeError("no accelerator here")
            """
        )
    )
    result = pytester.runpytest_subprocess("--arctic-ref-engine=my_engine:build", "-p", "no:cacheprovider")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*my_engine:build: cannot serve*RuntimeError: no accelerator here*"])


def test_plugin_refuses_an_engine_package_without_sampling_params(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(bare_engine="def build(**kwargs):\n    return object()\n")
    result = pytester.runpytest_subprocess("--arctic-ref-engine=bare_engine:build")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*found no SamplingParams*"])


def test_cli_engine_bad_input_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--engine", "no_such_engine_module:LLM"]) == 2
    assert "does not import" in capsys.readouterr().err
    assert main(["check", "--engine", "arctic_ref.runner.llm:LLM", "--engine-model", str(tmp_path)]) == 2
    assert f"--engine-model={tmp_path}: no config.json" in capsys.readouterr().err  # the CLI's own spelling
