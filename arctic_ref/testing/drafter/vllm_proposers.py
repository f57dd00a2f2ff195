"""vLLM 0.32's CPU proposers as drafters of the kit: ``--arctic-ref-drafter=
vllm.v1.spec_decode.suffix_decoding:SuffixDecodingProposer``, ``…ngram_proposer:NgramProposer``, or a
class of yours with one of the interfaces vLLM's V1 runner calls, runs the drafter checks on that
class itself, built and called the way vLLM 0.32 builds and calls it (paths under ``vllm/``):

* built: ``cls(vllm_config)``, as ``GPUModelRunner.__init__`` (``v1/worker/gpu_model_runner.py``)
  builds its drafter. The ``VllmConfig`` is vLLM's own, from ``EngineArgs(model=…,
  speculative_config=…, max_model_len=M).create_engine_config()`` (``engine/arg_utils.py``, what
  ``LLM(...)`` does) over the ``config.json`` of the model the checks run (``tiny_config``; no
  weights: neither proposer loads any). The ``speculative_config`` dict is
  ``proposer_speculative_config``'s: vLLM's defaults, k = 4 where vLLM has none, then the user's
  ``--arctic-ref-drafter-config``.
* called: once per step, after the step's sampled tokens were appended, with what
  ``propose_draft_token_ids`` passes for the method (``RunnerCall``): this step's
  ``valid_sampled_token_ids`` (``[]`` for a partial prefill or a discarded row: ``_bookkeeping_sync``
  clears those), the ``InputBatch`` or its ``num_tokens_no_spec`` and ``token_ids_cpu``
  (``VllmInputBatch``), k = ``scheduler_output.num_spec_tokens_to_schedule`` (the config's
  ``num_speculative_tokens``: no dynamic draft length), and ``slot_mappings=None`` (the real
  value is the attention's slot mapping, which no CPU proposer reads).

The drafts come back as the proposer returned them, row for row, made ``list[int]``: vLLM's scheduler
cuts a draft to what it schedules (at most M − N − 1 tokens), the kit does not, so a draft past that
is the checks' to see (``bounds``, D8). vLLM's own ``NgramProposer`` drafts min(k, M − N) tokens,
one past M − N − 1 when a match reaches M (docs/runner.md §2.7)."""

import functools
import inspect
import json
import operator
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, Self

from arctic_ref.check_options import CheckOptions
from arctic_ref.model.config import tiny_config
from arctic_ref.runner.vllm_drafting import SPECULATIVE_CONFIG_KEYS
from arctic_ref.spec.drafts import DraftRow
from arctic_ref.testing.drafter.vllm_input_batch import VllmInputBatch
from arctic_ref.testing.engine.known_bugs import VLLM_0_32_IDENTITY, engine_identity
from arctic_ref.testing.loading import TargetError

RunnerCall = Literal["ngram", "suffix", "custom_class"]
"""How ``GPUModelRunner.propose_draft_token_ids`` calls a CPU proposer, named by the speculative
method that selects the call (and that the adapter's ``VllmConfig`` gets):

* ``ngram``: ``propose(num_speculative_tokens, sampled_token_ids, num_tokens_no_spec, token_ids_cpu,
  slot_mappings=)``
* ``suffix``: ``propose(num_speculative_tokens, input_batch, sampled_token_ids, slot_mappings=)``
* ``custom_class``: ``propose(sampled_token_ids, num_tokens_no_spec, token_ids_cpu, slot_mappings=)``,
  a class vLLM loads from ``speculative_config["model"]`` (``v1/spec_decode/custom_class_proposer.py``)."""

RUNNER_CALL_PARAMETERS: Final[Mapping[RunnerCall, tuple[str, ...]]] = {
    "ngram": ("num_speculative_tokens", "sampled_token_ids", "num_tokens_no_spec", "token_ids_cpu"),
    "suffix": ("num_speculative_tokens", "input_batch", "sampled_token_ids"),
    "custom_class": ("sampled_token_ids", "num_tokens_no_spec", "token_ids_cpu"),
}
"""The leading parameter names of ``propose`` (after ``self``) that tell a class's ``RunnerCall``."""
VLLM_PROPOSERS: Final[Mapping[str, RunnerCall]] = {
    "vllm.v1.spec_decode.ngram_proposer.NgramProposer": "ngram",
    "vllm.v1.spec_decode.suffix_decoding.SuffixDecodingProposer": "suffix",
}
"""vLLM's own classes, by import path: a subclass is called as its base is, whatever it names its
parameters."""
DEFAULT_NUM_SPECULATIVE_TOKENS: Final = 4
"""k for "ngram" and "custom_class", which vLLM requires and gives no default for: 4, the n-gram k of
the engine checks' first group. "suffix" keeps vLLM's default (the tree depth, 24)."""
SETTING: Final = "drafter-config"
"""The setting that overrides the adapter's ``speculative_config`` (``--arctic-ref-drafter-config``)."""
_SCRATCH: list[tempfile.TemporaryDirectory[str]] = []
"""The model directory of every ``VllmConfig``, removed when the process ends."""


def runner_call(target: object) -> RunnerCall | None:
    """How vLLM's runner calls the proposer class ``target``: as its vLLM base class is called, else as
    the leading parameter names of its ``propose`` say (``RUNNER_CALL_PARAMETERS``); None for anything
    else (a factory function, a ``propose(rows)`` drafter)."""
    if not isinstance(target, type):
        return None
    for base in target.__mro__:
        call = VLLM_PROPOSERS.get(f"{base.__module__}.{base.__qualname__}")
        if call is not None:
            return call
    propose = getattr(target, "propose", None)
    try:
        parameters = list(inspect.signature(propose).parameters) if callable(propose) else []
    except (TypeError, ValueError):  # a builtin without a signature: not one of vLLM's interfaces
        return None
    if parameters[:1] == ["self"]:
        parameters = parameters[1:]
    for call, names in RUNNER_CALL_PARAMETERS.items():
        if tuple(parameters[: len(names)]) == names:
            return call
    return None


def proposer_speculative_config(
    call: RunnerCall, target: type, overrides: Mapping[str, object], *, setting: str = f"--arctic-ref-{SETTING}"
) -> dict[str, object]:
    """The ``speculative_config`` dict the proposer's ``VllmConfig`` is built from: the method of
    ``call`` ("custom_class" with ``model`` = the class's import path, as vLLM names one), k =
    ``DEFAULT_NUM_SPECULATIVE_TOKENS`` except for "suffix", then ``overrides`` (dashes in keys made
    underscores, as ``create_speculative_config`` does). A ``TargetError`` names an override that
    is not a vLLM key, that contradicts the method or the class, or that the adapter cannot honour
    (``num_speculative_tokens_per_batch_size``: k is the same every step here); ``setting`` is how
    the message names the overrides' option."""
    given = {key.replace("-", "_"): value for key, value in overrides.items()}
    shown = f"{setting}={json.dumps(dict(overrides))}"
    unknown = sorted(set(given) - SPECULATIVE_CONFIG_KEYS)
    if unknown:
        raise TargetError(f"{shown}: {unknown} are not fields of vLLM 0.32's SpeculativeConfig")
    base: dict[str, object] = {"method": call}
    if call == "custom_class":
        base["model"] = f"{target.__module__}.{target.__qualname__}"
    if call != "suffix":
        base["num_speculative_tokens"] = DEFAULT_NUM_SPECULATIVE_TOKENS
    method = given.get("method")
    if method is not None and ("ngram" if method == "[ngram]" else method) != call:
        raise TargetError(
            f"{shown}: method {method!r}, but vLLM's runner calls {target.__name__} as a {call!r} proposer"
        )
    if call == "custom_class" and given.get("model", base["model"]) != base["model"]:
        raise TargetError(f"{shown}: model {given['model']!r}, but the class checked is {base['model']!r}")
    if given.get("num_speculative_tokens_per_batch_size") is not None:
        raise TargetError(
            f"{shown}: num_speculative_tokens_per_batch_size is not modelled (the kit passes k = "
            "num_speculative_tokens every step)"
        )
    return base | given


def parse_drafter_config(setting: str, text: str) -> dict[str, object]:
    """The JSON object ``text`` (``--arctic-ref-drafter-config``); a ``TargetError`` naming it otherwise."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise TargetError(f"{setting}={text}: not JSON ({error})") from None
    if not isinstance(value, dict):
        raise TargetError(
            f"{setting}={text}: expected a JSON object of speculative_config keys, got {type(value).__name__}"
        )
    return value


@functools.cache
def _model_dir() -> Path:
    """A directory holding the ``config.json`` of the checks' model (``tiny_config``)."""
    scratch = tempfile.TemporaryDirectory(prefix="arctic-ref-vllm-model-")
    _SCRATCH.append(scratch)
    path = Path(scratch.name)
    (path / "config.json").write_text(json.dumps(tiny_config().to_hf(), indent=2))
    return path


def vllm_config(speculative: Mapping[str, object], max_model_len: int) -> Any:
    """vLLM's ``VllmConfig`` of an ``LLM(model, speculative_config=speculative, max_model_len=M)``
    serving the checks' model (module docstring). Imports vLLM."""
    from vllm.engine.arg_utils import EngineArgs

    args = EngineArgs(
        model=str(_model_dir()),
        skip_tokenizer_init=True,
        dtype="float32",
        max_model_len=max_model_len,
        speculative_config=dict(speculative),
    )
    return args.create_engine_config()


@dataclass(slots=True, kw_only=True)
class VllmProposerDrafter:
    """A vLLM proposer behind the runner's ``propose(rows)``: each step's rows become the inputs vLLM's
    runner hands the proposer for ``call`` (module docstring), its drafts come back row for row."""

    proposer: Any
    call: RunnerCall
    num_speculative_tokens: int
    """k, passed every step as ``num_spec_tokens_to_schedule``."""
    max_num_reqs: int
    """The rows of the runner's buffers: ``scheduler_config.max_num_seqs``."""
    max_model_len: int
    vocab_size: int

    @classmethod
    def build(cls, proposer_class: type, call: RunnerCall, config: Any) -> Self:
        """``proposer_class(config)`` and the figures of ``config`` its calls need."""
        return cls(
            proposer=proposer_class(config),
            call=call,
            num_speculative_tokens=config.speculative_config.num_speculative_tokens,
            max_num_reqs=config.scheduler_config.max_num_seqs,
            max_model_len=config.model_config.max_model_len,
            vocab_size=config.model_config.get_vocab_size(),
        )

    def propose(self, rows: Sequence[DraftRow]) -> list[list[int]]:
        batch = VllmInputBatch.from_rows(
            rows, max_num_reqs=self.max_num_reqs, max_model_len=self.max_model_len, vocab_size=self.vocab_size
        )
        sampled = [list(row.sampled) for row in rows]
        k, propose = self.num_speculative_tokens, self.proposer.propose
        if self.call == "ngram":
            drafts = propose(k, sampled, batch.num_tokens_no_spec, batch.token_ids_cpu, slot_mappings=None)
        elif self.call == "suffix":
            drafts = propose(k, batch, sampled, slot_mappings=None)
        else:
            drafts = propose(sampled, batch.num_tokens_no_spec, batch.token_ids_cpu, slot_mappings=None)
        if callable(getattr(drafts, "tolist", None)):  # a tensor or an array of drafts
            drafts = drafts.tolist()
        return [[operator.index(token) for token in draft] for draft in drafts]


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmProposerFactory:
    """``make(max_model_len)``: a fresh proposer, with its own ``VllmConfig``, behind ``propose(rows)``."""

    proposer_class: type
    call: RunnerCall
    speculative_config: Mapping[str, object]
    summary: str = ""
    """The configuration in vLLM's words, for the checks' reports."""

    @property
    def known_one_past(self) -> str:
        """V-23 for vLLM 0.32's own ``NgramProposer`` (the class itself, from the installed vLLM 0.32
        distribution), which drafts min(k, M − N) ids; "" for any other class, a subclass included."""
        cls = self.proposer_class
        if (cls.__module__, cls.__qualname__) != ("vllm.v1.spec_decode.ngram_proposer", "NgramProposer"):
            return ""
        return "V-23" if VLLM_0_32_IDENTITY.search(engine_identity(cls)) else ""

    def __call__(self, max_model_len: int) -> VllmProposerDrafter:
        config = vllm_config(self.speculative_config, max_model_len)
        return VllmProposerDrafter.build(self.proposer_class, self.call, config)


def _one_line(error: BaseException) -> str:
    return " ".join(f"{type(error).__name__}: {error}".split())


def _describe(call: RunnerCall, config: Any) -> str:
    """The speculative settings the proposer read, by vLLM's field names."""
    spec = config.speculative_config
    names = {
        "ngram": ("num_speculative_tokens", "prompt_lookup_min", "prompt_lookup_max"),
        "suffix": (
            "num_speculative_tokens",
            "suffix_decoding_max_tree_depth",
            "suffix_decoding_max_cached_requests",
            "suffix_decoding_max_spec_factor",
            "suffix_decoding_min_token_prob",
        ),
        "custom_class": ("model", "num_speculative_tokens"),
    }[call]
    settings = ", ".join(f"{name}={getattr(spec, name)!r}" for name in names)
    return f"called as vLLM 0.32's runner calls a {call!r} proposer; {settings}"


def load_vllm_proposer(
    option: str, value: str, target: type, call: RunnerCall, options: CheckOptions
) -> VllmProposerFactory:
    """The factory of the proposer class ``target`` (``runner_call(target) == call``), after one probe
    built it: a bad ``drafter_config``, a missing vLLM, a config vLLM refuses or a constructor that
    raises is a one-line ``TargetError``."""
    setting = options.setting(SETTING)
    overrides = {} if options.drafter_config is None else parse_drafter_config(setting, options.drafter_config)
    speculative = proposer_speculative_config(call, target, overrides, setting=setting)
    try:
        import vllm.engine.arg_utils  # noqa: F401  (vllm_config's, imported here to say what is missing)
    except Exception as error:  # no vLLM, or one that does not import: the user's to fix, in one line
        raise TargetError(
            f"{option}={value}: {target.__name__} is a vLLM proposer, built from vLLM's VllmConfig, and "
            f"vllm.engine.arg_utils does not import ({_one_line(error)})"
        ) from None
    try:
        config = vllm_config(speculative, 256)
    except Exception as error:  # vLLM refuses the configuration: name it and vLLM's reason
        raise TargetError(
            f"{option}={value}: vLLM refuses speculative_config {speculative} ({_one_line(error)})"
        ) from None
    try:
        VllmProposerDrafter.build(target, call, config)
    except Exception as error:  # a constructor that raises is the user's to fix
        raise TargetError(f"{option}={value}: {target.__name__}(vllm_config) raised {_one_line(error)}") from None
    return VllmProposerFactory(
        proposer_class=target, call=call, speculative_config=speculative, summary=_describe(call, config)
    )
