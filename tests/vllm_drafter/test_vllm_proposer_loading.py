"""The vLLM proposer adapter without vLLM's proposers (runs in both environments; the few tests that
need vLLM itself, or its absence, say so): which classes it takes and how it calls each, the
``speculative_config`` it builds them with, the ``InputBatch`` it hands them, and one-line
``TargetError`` messages, naming the values, for what the user must fix."""

import importlib.util
from typing import Any

import numpy as np
import pytest

from arctic_ref.check_options import CheckOptions
from arctic_ref.cli import main
from arctic_ref.spec.drafts import DraftRow
from arctic_ref.testing.drafter.checks import load as load_drafter
from arctic_ref.testing.drafter.vllm_input_batch import VllmInputBatch
from arctic_ref.testing.drafter.vllm_proposers import (
    VllmProposerDrafter,
    parse_drafter_config,
    proposer_speculative_config,
    runner_call,
)
from arctic_ref.testing.loading import TargetError


def _has_vllm() -> bool:
    """vLLM itself, not the namespace package ``tests/vllm`` that a plain ``vllm`` finds."""
    try:
        return importlib.util.find_spec("vllm.config") is not None
    except ModuleNotFoundError:
        return False


HAS_VLLM = _has_vllm()


Drafts = list[list[int]]


class NgramShaped:
    def __init__(self, vllm_config: Any) -> None: ...

    def propose(
        self,
        num_speculative_tokens: int,
        sampled_token_ids: Drafts,
        num_tokens_no_spec: np.ndarray,
        token_ids_cpu: np.ndarray,
        slot_mappings: object = None,
    ) -> Drafts:
        return [[] for _ in sampled_token_ids]


class SuffixShaped:
    def propose(
        self,
        num_speculative_tokens: int,
        input_batch: VllmInputBatch,
        sampled_token_ids: Drafts,
        slot_mappings: object = None,
    ) -> Drafts:
        return []


class CustomShaped:
    def propose(
        self,
        sampled_token_ids: Drafts,
        num_tokens_no_spec: np.ndarray,
        token_ids_cpu: np.ndarray,
        slot_mappings: object = None,
    ) -> Drafts:
        return []


class RowsDrafter:
    def propose(self, rows: list[DraftRow]) -> Drafts:
        return []


FakeNgramProposer: type = type(
    "NgramProposer", (), {"__module__": "vllm.v1.spec_decode.ngram_proposer", "propose": RowsDrafter.propose}
)


class RenamedSubclass(FakeNgramProposer):  # type: ignore[misc]
    """A subclass of (a stand-in for) vLLM's class whose propose names its parameters otherwise."""

    def propose(self, k: int, sampled: Drafts, lengths: np.ndarray, tokens: np.ndarray) -> Drafts:
        return []


@pytest.mark.parametrize(
    ("target", "call"),
    [
        (NgramShaped, "ngram"),
        (SuffixShaped, "suffix"),
        (CustomShaped, "custom_class"),
        (RenamedSubclass, "ngram"),
        (RowsDrafter, None),
        (NgramShaped(None), None),  # an instance: vLLM builds the class itself
        (lambda max_model_len: RowsDrafter(), None),
        (int, None),
    ],
    ids=["ngram", "suffix", "custom", "vllm-subclass", "rows", "instance", "factory", "builtin"],
)
def test_which_classes_are_vllm_proposers_and_how_they_are_called(target: object, call: str | None) -> None:
    assert runner_call(target) == call


def test_the_default_speculative_configs() -> None:
    assert proposer_speculative_config("suffix", SuffixShaped, {}) == {"method": "suffix"}
    assert proposer_speculative_config("ngram", NgramShaped, {}) == {"method": "ngram", "num_speculative_tokens": 4}
    assert proposer_speculative_config("custom_class", CustomShaped, {"num-speculative-tokens": 2}) == {
        "method": "custom_class",
        "model": f"{__name__}.CustomShaped",
        "num_speculative_tokens": 2,
    }
    assert proposer_speculative_config("ngram", NgramShaped, {"method": "[ngram]", "prompt_lookup_min": 2}) == {
        "method": "[ngram]",
        "num_speculative_tokens": 4,
        "prompt_lookup_min": 2,
    }


@pytest.mark.parametrize(
    ("call", "target", "overrides", "message"),
    [
        (
            "suffix",
            SuffixShaped,
            {"bogus": 1},
            "{\"bogus\": 1}: ['bogus'] are not fields of vLLM 0.32's SpeculativeConfig",
        ),
        (
            "suffix",
            SuffixShaped,
            {"method": "ngram"},
            "method 'ngram', but vLLM's runner calls SuffixShaped as a 'suffix'",
        ),
        (
            "custom_class",
            CustomShaped,
            {"model": "x.Y"},
            f"model 'x.Y', but the class checked is '{__name__}.CustomShaped'",
        ),
        (
            "ngram",
            NgramShaped,
            {"num_speculative_tokens_per_batch_size": [[1, 2]]},
            "num_speculative_tokens_per_batch_size is not modelled",
        ),
    ],
    ids=["unknown-key", "other-method", "other-model", "per-batch-size"],
)
def test_overrides_the_adapter_cannot_honour_are_named(
    call: Any, target: type, overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(TargetError) as raised:
        proposer_speculative_config(call, target, overrides)
    text = str(raised.value)
    assert "\n" not in text and text.startswith("--arctic-ref-drafter-config=") and message in text, text


@pytest.mark.parametrize(
    ("text", "message"),
    [("{k: 1}", "--arctic-ref-drafter-config={k: 1}: not JSON"), ("[4]", "got list")],
)
def test_the_setting_must_be_a_json_object(text: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        parse_drafter_config("--arctic-ref-drafter-config", text)


def test_the_setting_is_refused_for_a_rows_drafter_in_the_plugins_words_and_the_clis(
    capsys: pytest.CaptureFixture[str],
) -> None:
    value = "arctic_ref.runner.drafters:NoDrafter"
    with pytest.raises(TargetError) as raised:
        load_drafter(value, CheckOptions(drafter_config="{}"), None)
    assert str(raised.value) == (
        "--arctic-ref-drafter-config={}: applies to a vLLM proposer class, and "
        f"--arctic-ref-drafter={value} is not one (its propose has none of the signatures vLLM's runner calls)"
    )
    assert main(["check", "--impl", f"drafter={value}", "--drafter-config", "{}"]) == 2
    assert "--drafter-config={}: applies to a vLLM proposer class, and --impl drafter=" in capsys.readouterr().err


@pytest.mark.skipif(HAS_VLLM, reason="the message for an environment without vLLM")
def test_a_vllm_proposer_without_vllm_says_what_is_missing() -> None:
    value = f"{__name__}:NgramShaped"
    with pytest.raises(TargetError) as raised:
        load_drafter(value, CheckOptions(), None)
    text = str(raised.value)
    assert "\n" not in text and text.startswith(f"--arctic-ref-drafter={value}: NgramShaped is a vLLM proposer"), text
    assert "vllm.engine.arg_utils does not import" in text, text


@pytest.mark.skipif(not HAS_VLLM, reason="needs vLLM")
@pytest.mark.parametrize(
    ("value", "config", "message"),
    [
        (
            "vllm.v1.spec_decode.suffix_decoding:SuffixDecodingProposer",
            '{"suffix_decoding_max_tree_depth": 0}',
            "vLLM refuses speculative_config {'method': 'suffix', 'suffix_decoding_max_tree_depth': 0} (",
        ),
        (f"{__name__}:NgramShaped", '{"num_speculative_tokens": 0}', "vLLM refuses speculative_config {"),
        (f"{__name__}:SuffixShaped", None, "SuffixShaped(vllm_config) raised TypeError"),
    ],
    ids=["vllm-refuses", "k-0", "constructor-raises"],
)
def test_what_vllm_refuses_is_one_line(value: str, config: str | None, message: str) -> None:
    with pytest.raises(TargetError) as raised:
        load_drafter(value, CheckOptions(drafter_config=config), None)
    text = str(raised.value)
    assert "\n" not in text and text.startswith(f"--arctic-ref-drafter={value}: ") and message in text, text


class Recorder:
    """Records each call; returns what ``reply`` holds."""

    def __init__(self, reply: Any) -> None:
        self.reply = reply
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def propose(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((args, kwargs))
        return self.reply


ROWS = [
    DraftRow(req_id=7, token_ids=[3, 4, 5], num_prompt_tokens=2, sampled=[5]),
    DraftRow(req_id="b", token_ids=[9, 8], num_prompt_tokens=2, sampled=[], discarded=[1]),
]


def _drafter(call: Any, reply: Any) -> VllmProposerDrafter:
    return VllmProposerDrafter(
        proposer=Recorder(reply), call=call, num_speculative_tokens=3, max_num_reqs=4, max_model_len=6, vocab_size=512
    )


@pytest.mark.parametrize("call", ["ngram", "suffix", "custom_class"])
def test_each_call_gets_what_vllms_runner_passes(call: str) -> None:
    drafter = _drafter(call, np.array([[1, 2], [3, 4]], dtype=np.int64))
    assert drafter.propose(ROWS) == [[1, 2], [3, 4]]  # an array of drafts comes back as lists of ints
    ((args, kwargs),) = drafter.proposer.calls
    assert kwargs == {"slot_mappings": None}
    sampled = [[5], []]  # the partial prefill's discarded sample is not passed
    if call == "suffix":
        k, batch, passed = args
        assert (k, passed, batch.req_ids, batch.req_id_to_index, batch.num_reqs) == (
            3,
            sampled,
            ["7", "b"],
            {"7": 0, "b": 1},
            2,
        )
        assert batch.num_prompt_tokens.tolist() == [2, 2, 0, 0] and batch.vocab_size == 512
        lengths, tokens = batch.num_tokens_no_spec, batch.token_ids_cpu
    elif call == "ngram":
        k, passed, lengths, tokens = args
        assert (k, passed) == (3, sampled)
    else:
        passed, lengths, tokens = args
        assert passed == sampled
    assert lengths.dtype == np.int32 and lengths.tolist() == [3, 2, 0, 0]
    assert tokens.dtype == np.int32 and tokens.shape == (4, 6)
    assert tokens.tolist() == [[3, 4, 5, 0, 0, 0], [9, 8, 0, 0, 0, 0], [0] * 6, [0] * 6]


def test_drafts_that_are_not_integers_raise() -> None:
    with pytest.raises(TypeError):
        _drafter("ngram", [[1.5], []]).propose(ROWS)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (ROWS * 3, "6 rows, more than max_num_reqs 4"),
        ([ROWS[0], DraftRow(req_id="7", token_ids=[1], num_prompt_tokens=1, sampled=[1])], r"\['7', '7'\] repeat"),
        (
            [DraftRow(req_id="x", token_ids=[1] * 7, num_prompt_tokens=1, sampled=[1])],
            "x has 7 tokens, more than max_model_len 6",
        ),
    ],
    ids=["too-many-rows", "same-id", "too-long"],
)
def test_a_batch_vllms_runner_could_not_hold_is_named(rows: list[DraftRow], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        VllmInputBatch.from_rows(rows, max_num_reqs=4, max_model_len=6, vocab_size=512)
