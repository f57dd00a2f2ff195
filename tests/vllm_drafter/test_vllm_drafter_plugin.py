"""``pytest --arctic-ref-drafter=…`` on vLLM 0.32's own proposer classes and on broken subclasses of
one, run as a user runs it: ``python -m pytest`` in a directory of its own, the broken classes in a
module there (``broken_proposers.py``, copied beside). The verdicts, per check:

* ``SuffixDecodingProposer`` (vLLM's defaults: k = depth = 24): ``bounds``, ``lossless-8`` and
  ``lossless-64`` pass.
* ``NgramProposer`` (k = 4, vLLM's window 5..5): both ``lossless`` checks pass; ``bounds`` passes as
  the known upstream difference V-23 (a failure under ``--arctic-ref-strict``): vLLM drafts
  min(k, M − N) tokens, one past the M − N − 1 that can be verified (its scheduler cuts the extra
  one; docs/runner.md §2.7), as arctic_ref's own ``VllmNgramDrafter`` does.
* ``DraftsPastMaxModelLen`` and ``DraftsOutsideTheVocabulary`` fail ``bounds`` (D8), each with its own
  reason.

Runs in the vLLM environment only: one run of all four, about a minute, a third of it importing vLLM."""

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("vllm.config")  # plain "vllm" also finds tests/vllm as a namespace package

SUFFIX = "vllm.v1.spec_decode.suffix_decoding:SuffixDecodingProposer"
NGRAM = "vllm.v1.spec_decode.ngram_proposer:NgramProposer"
BROKEN = Path(__file__).with_name("broken_proposers.py")


PAST = "broken_proposers:DraftsPastMaxModelLen"
OUTSIDE = "broken_proposers:DraftsOutsideTheVocabulary"

Results = dict[str, tuple[str, str]]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Results, str]:
    """One ``python -m pytest --arctic-ref-drafter=…`` over all four classes (vLLM's import, most of
    a run's time, is paid once): every check's (outcome, failure text) by its junit id, and the
    run's output."""
    directory = tmp_path_factory.mktemp("user-project")
    shutil.copy(BROKEN, directory / BROKEN.name)
    options = [f"--arctic-ref-drafter={drafter}" for drafter in (SUFFIX, NGRAM, PAST, OUTSIDE)]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--junitxml=report.xml", *options],
        cwd=directory,
        env={**os.environ, "VLLM_ENABLE_V1_MULTIPROCESSING": "0"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    results = {}
    for case in ET.parse(directory / "report.xml").iter("testcase"):
        check = f"{case.get('classname', '')}.{case.get('name', '')}"
        failure = case.find("failure")
        known = {p.get("value") for p in case.iter("property") if p.get("name") == "known_difference"}
        outcome = "passed" if not known else f"passed as {', '.join(sorted(str(k) for k in known))}"
        results[check] = (outcome, "") if failure is None else ("failed", failure.text or "")
    return results, done.stdout + done.stderr


def _id(drafter: str, check: str) -> str:
    """The junit name of a check: pytest's ``arctic-ref/drafter/<value>::<check>``, dotted."""
    return f"arctic-ref.drafter.{drafter}.{check}"


def test_vllms_proposers_as_a_user_runs_them(run: tuple[Results, str]) -> None:
    results, output = run
    assert len(results) == 12, output[-3000:]
    for check in ("bounds", "lossless-8", "lossless-64"):
        assert results[_id(SUFFIX, check)] == ("passed", ""), output[-3000:]
    for check in ("lossless-8", "lossless-64"):
        assert results[_id(NGRAM, check)] == ("passed", ""), output[-3000:]
    assert results[_id(NGRAM, "bounds")] == ("passed as V-23", ""), output[-3000:]


def test_vllms_ngram_overrun_is_v23_and_fails_under_strict() -> None:
    """V-23 in process: vLLM's own ``NgramProposer`` drafts M − N ids near ``max_model_len``; the
    ``bounds`` verdict names the catalogue id and fails under ``--arctic-ref-strict``."""
    from dataclasses import replace

    from arctic_ref.check_options import CheckOptions
    from arctic_ref.testing.check import run_and_settle
    from arctic_ref.testing.front_door import component_checks, select

    for strict in (False, True):
        (check,) = select(component_checks("drafter", NGRAM, replace(CheckOptions(), strict=strict)), ["bounds"])
        verdict = run_and_settle(check, strict=strict)
        assert verdict.known_difference == "V-23" and verdict.passed is not strict, verdict
        assert "drafts of M - N ids, one past min(32, M - N - 1)" in verdict.detail, verdict.detail
        assert "N = 36" in verdict.detail and "prompt_lookup_min=5" in verdict.compared, verdict


def test_broken_subclasses_fail_bounds(run: tuple[Results, str]) -> None:
    results, output = run
    outcome, message = results[_id(PAST, "bounds")]
    assert outcome == "failed" and "more than min(32, M - N - 1)" in message and "(D8)" in message, message
    outcome, message = results[_id(OUTSIDE, "bounds")]
    assert outcome == "failed" and "outside the vocabulary [0, 512) (D8)" in message, message
    assert results[_id(PAST, "lossless-8")] == ("passed", ""), output[-3000:]  # the runner's scheduler cuts it
