"""The sampler kit's adapter for a class with vLLM 0.32's ``RejectionSampler`` interface
(``arctic_ref/testing/sampler/vllm_class.py``), in any environment: a class without that
interface, or one that needs vLLM where vLLM does not import, is a one-line usage error; the
``BonusSampler`` keeps the bonus draws off the caller's generators; E15-SPEC-LEN takes vLLM 0.32's
``AssertionError`` at 129; the inputs vLLM's kernels would write out of bounds with are never fed;
a known difference passes unless strict. The runs on vLLM itself: tests/vllm_sampler/."""

import importlib.util
import random
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import Tensor

from arctic_ref.check_options import CheckOptions
from arctic_ref.spec import INTENDED, VLLM_0_32, rejection_sample
from arctic_ref.testing.check import Outcome, SharedRun, Verdict, settle
from arctic_ref.testing.front_door import component_checks
from arctic_ref.testing.loading import TargetError
from arctic_ref.testing.sampler.checks import _verdict_of
from arctic_ref.testing.sampler.exact import Candidate, Tally, e15_errors
from arctic_ref.testing.sampler.report import ConformanceReport
from arctic_ref.testing.sampler.stats import STATISTICS_STOPPED
from arctic_ref.testing.sampler.vllm_class import VLLM_UNSAFE_INPUTS, BonusSampler, interface_problem

VLLM_IMPORTS = importlib.util.find_spec("vllm") is not None and importlib.util.find_spec("vllm.config") is not None

CLASSES = """
class NoForward:
    def __init__(self, sampler, spec_config=None, device=None):
        self.sampler = sampler


class OneArgument:
    def __init__(self, sampler):
        self.sampler = sampler

    def __call__(self, *args):
        return self.forward(*args)

    def forward(self, metadata, draft_probs, logits, sampling_metadata):
        raise AssertionError("never called")


class NotCallable:
    def __init__(self, sampler, spec_config=None, device=None):
        self.sampler = sampler

    def forward(self, metadata, draft_probs, logits, sampling_metadata):
        raise AssertionError("never called")


class ForwardTakesThree:
    def __init__(self, sampler, spec_config=None, device=None):
        self.sampler = sampler

    def __call__(self, *args):
        return self.forward(*args)

    def forward(self, metadata, logits, sampling_metadata):
        raise AssertionError("never called")


class LikeVllms:
    def __init__(self, sampler, spec_config=None, device=None):
        self.sampler = sampler

    def __call__(self, *args):
        return self.forward(*args)

    def forward(self, metadata, draft_probs, logits, sampling_metadata):
        raise AssertionError("never called")
"""


@pytest.fixture
def classes(tmp_path: Path) -> Path:
    (tmp_path / "user_classes.py").write_text(textwrap.dedent(CLASSES))
    return tmp_path


def _load_error(base: Path, attr: str) -> str:
    with pytest.raises(TargetError) as caught:
        component_checks("sampler", f"user_classes:{attr}", CheckOptions(), base_dir=base)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"--arctic-ref-sampler=user_classes:{attr}: "), message
    return message


@pytest.mark.parametrize(
    ("attr", "says"),
    [
        ("NoForward", "it has no forward(metadata, draft_probs, logits, sampling_metadata)"),
        ("OneArgument", "its constructor does not take vLLM 0.32's (sampler, spec_config=None, device=None)"),
        ("NotCallable", "its instances are not callable"),
        (
            "ForwardTakesThree",
            "its forward does not take vLLM 0.32's (metadata, draft_probs, logits, sampling_metadata)",
        ),
    ],
)
def test_a_class_without_vllms_interface_is_a_one_line_target_error(classes: Path, attr: str, says: str) -> None:
    message = _load_error(classes, attr)
    assert f"the class {attr} is not a rejection sampler: {says}" in message, message


def test_a_lookalike_of_vllms_class_has_the_interface(classes: Path) -> None:
    spec = importlib.util.spec_from_file_location("user_classes", classes / "user_classes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert interface_problem(module.LikeVllms) == ""


@pytest.mark.skipif(VLLM_IMPORTS, reason="vLLM imports here: tests/vllm_sampler runs the adapter on it")
def test_a_class_where_vllm_does_not_import_is_a_one_line_target_error(classes: Path) -> None:
    message = _load_error(classes, "LikeVllms")
    assert "a sampler class is built and called as vLLM 0.32's V1 runner does, which needs vLLM 0.32" in message


def test_the_plugin_reports_a_wrong_class_as_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(user_classes=textwrap.dedent(CLASSES))  # in the directory the run starts from
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--arctic-ref-sampler=user_classes:NoForward")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if "user_classes:NoForward" in line]
    assert len(errors) == 1 and "is not a rejection sampler" in errors[0], result.stderr.str()


@dataclass
class RecordingSampler:
    """Stands in for vLLM's ``Sampler``: draws from each generator it is given, records the call."""

    logprobs_mode: str = "raw_logprobs"
    calls: list[tuple[Tensor, Any, dict[str, Any]]] = field(default_factory=list)

    def __call__(self, logits: Tensor, sampling_metadata: Any, **kwargs: Any) -> str:
        for generator in sampling_metadata.generators.values():
            torch.randint(0, 2**31, (1,), generator=generator)
        self.calls.append((logits, sampling_metadata, kwargs))
        return "sampled"


@dataclass(frozen=True)
class Metadata:
    generators: dict[int, torch.Generator]
    temperature: Tensor


def test_the_bonus_sampler_draws_on_clones_and_is_the_sampler_otherwise() -> None:
    """vLLM's ``forward`` samples the bonus token with its ``Sampler`` before verifying; the kit's
    contract covers the verification draws only, so that sampler must leave the kit's generators be."""
    inner = RecordingSampler()
    generators = {0: torch.Generator().manual_seed(1), 3: torch.Generator().manual_seed(2)}
    before = {i: g.get_state() for i, g in generators.items()}
    meta = Metadata(generators=generators, temperature=torch.ones(4))
    logits = torch.zeros(4, 5)
    assert BonusSampler(inner)(logits=logits, sampling_metadata=meta, predict_bonus_token=True) == "sampled"
    assert all(torch.equal(g.get_state(), before[i]) for i, g in generators.items())
    ((got_logits, got_meta, kwargs),) = inner.calls
    assert got_logits is logits and got_meta.temperature is meta.temperature and kwargs == {"predict_bonus_token": True}
    assert got_meta.generators.keys() == generators.keys()
    assert all(not torch.equal(got_meta.generators[i].get_state(), before[i]) for i in generators)  # the clones drew
    assert BonusSampler(inner).logprobs_mode == "raw_logprobs"


def _asserts_at_128(*args: Any) -> Tensor:
    """vLLM 0.32's ``forward``: ``assert metadata.max_spec_len <= 128`` (MAX_SPEC_LEN)."""
    assert args[2] <= 128, "max_spec_len"
    return rejection_sample(*args, profile=VLLM_0_32)


def test_spec_length_check_takes_vllm_0_32s_assertion_at_129_under_its_profile() -> None:
    for profile, status in ((VLLM_0_32, Outcome.PASS), (INTENDED, Outcome.FAIL)):
        candidate = Candidate(
            fn=_asserts_at_128, takes="logits", profile=profile, injector=None, greedy_temperature=0.0
        )
        tally = Tally()
        e15_errors(candidate, tally, random.Random(0), 0)
        result = tally.verdict("E15-SPEC-LEN")
        assert result.outcome is status, (profile.name, result)
    assert "max_spec_len 33 (over the limit 32): accepted" in result.detail, result


@dataclass
class StrictInputsRecorder:
    """Our sampler, remembering every input that vLLM's kernels would index out of bounds with."""

    unsafe: list[str] = field(default_factory=list)
    fed: int = 0

    def __call__(self, *args: Any) -> Tensor:
        drafts, counts, max_spec_len, cu, _, logits = args[:6]
        self.fed += 1
        if bool(((drafts < 0) | (drafts >= logits.shape[1])).any()) or max_spec_len < max(counts):
            self.unsafe.append("drafts or max_spec_len")
        if not torch.equal(cu, torch.tensor(counts).cumsum(0)):
            self.unsafe.append("cu_num_draft_tokens")
        return rejection_sample(*args)


def test_unsafe_strict_inputs_are_skipped_with_the_reason_and_never_fed() -> None:
    recorder = StrictInputsRecorder()
    candidate = Candidate(
        fn=recorder,
        takes="logits",
        profile=INTENDED,
        injector=None,
        greedy_temperature=0.0,
        unsafe_inputs=dict(VLLM_UNSAFE_INPUTS),
    )
    tally = Tally()
    e15_errors(candidate, tally, random.Random(0), 0)
    results = tally.verdicts(["E15-SPEC-LEN", "E15-SHAPES", "E15-FLAGS", "E15-NAN"])
    assert results["E15-SHAPES"].outcome is Outcome.SKIP
    assert results["E15-SHAPES"].skipped == VLLM_UNSAFE_INPUTS["E15-SHAPES"]
    assert all(results[c].outcome is Outcome.PASS for c in ("E15-SPEC-LEN", "E15-FLAGS", "E15-NAN")), results
    assert recorder.unsafe == [] and recorder.fed == 3  # max_spec_len 33, the flags, the NaN row


def _report(**verdicts: Verdict) -> SharedRun[None, ConformanceReport]:
    report = ConformanceReport(
        candidate="yours", torch_version="", device="cpu", profile="vllm-0.32", level="quick", verdicts=verdicts
    )
    return SharedRun(lambda _: report)


def test_a_known_difference_passes_and_says_so_unless_strict() -> None:
    known = Verdict(passed=False, known_difference="X4", detail="X4 (docs/verification.md §2.4): …")
    shared = _report(E11=known)
    found = _verdict_of(shared, "E11", CheckOptions())
    assert not found.passed and found.known_difference == "X4"  # as found: the front door settles it
    lenient = settle(found, strict=False)
    assert lenient.passed and lenient.known_difference == "X4" and "X4" in lenient.detail
    strict = settle(found, strict=True)
    assert not strict.passed and strict.known_difference == "X4"


def test_when_the_statistical_checks_stop_the_two_they_did_not_report_are_not_run() -> None:
    """Before: S-DESIGN passed ("enough samples everywhere") and S5-SPEED said "statistics off"."""
    stopped = f"{STATISTICS_STOPPED}: RuntimeError: selected index k out of range"
    shared = _report(S1=Verdict(passed=False, count=1, detail=stopped))
    for check_id in ("S-DESIGN", "S5-SPEED"):
        verdict = _verdict_of(shared, check_id, CheckOptions())
        assert verdict.skipped == f"not run: {stopped}", verdict
    assert _verdict_of(_report(), "S-DESIGN", CheckOptions()).passed  # statistics ran and it was not added
    unrun = _verdict_of(_report(), "S-DESIGN", CheckOptions(statistics=False))
    assert unrun.skipped == "statistics off (--arctic-ref-no-statistics)"  # before: passed, as if it had run


def test_the_unsafe_inputs_are_only_strict_ones() -> None:
    from arctic_ref.testing.sampler.table import CATEGORIES

    assert all(CATEGORIES[check] == "strict" for check in VLLM_UNSAFE_INPUTS)
