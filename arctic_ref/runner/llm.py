"""vLLM's offline ``LLM`` interface over the reference runner (docs/runner.md §8, issue 38): the
reference runner is itself an engine, a self-check for checks written against vLLM, and the
built-in default when vLLM is absent.

Copied from vLLM 0.32.0 (paths under ``vllm/``): the constructor keywords and ``generate``
(``entrypoints/llm.py``); ``SamplingParams``' names, defaults and checks (``sampling_params.py``);
``RequestOutput`` and ``CompletionOutput`` (``outputs.py``); request ids "0", "1", … counted over the
engine's life, outputs in prompt order (``entrypoints/common/offline.py``); the metric values
``Counter`` and ``Vector`` (``v1/metrics/reader.py``) and the spec-decode counters
(``v1/spec_decode/metrics.py``), counted as ``v1/core/sched/scheduler.py`` counts them. The vLLM
surface lives in one module because a caller that was handed ``LLM`` finds the matching
``SamplingParams`` beside it.
"""

import logging
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final, NotRequired, TypedDict

import torch

from arctic_ref.model.config import ModelConfig
from arctic_ref.model.weights import load_weights
from arctic_ref.parallel.comm import build_groups
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.runner import requests
from arctic_ref.runner.engine import EngineConfig, RequestDriver, RequestResult, build_runner
from arctic_ref.runner.runner import ReferenceRunner
from arctic_ref.runner.scheduler import SchedulerConfig, SimpleScheduler
from arctic_ref.runner.vllm_drafting import VllmDraftSemantics, drafter_for
from arctic_ref.spec.profile import MAX_SPEC_LEN

logger = logging.getLogger(__name__)

VLLM_DTYPES: Final = frozenset({"auto", "half", "float16", "bfloat16", "float", "float32"})
"""vLLM's ``ModelDType`` names (``config/model.py``); the matching ``torch.dtype``s are accepted too.
Whatever is asked, the reference computes in float64: it is the exact side of every comparison."""

TORCH_DTYPES: Final = frozenset({torch.float16, torch.bfloat16, torch.float32})

IGNORED_KEYWORDS: Final = frozenset(
    {
        # how fast: CUDA graphs, torch.compile, the scheduling loop, communication kernels
        "enforce_eager",
        "compilation_config",
        "async_scheduling",
        "disable_custom_all_reduce",
        "distributed_executor_backend",
        # how much memory: the reference sizes its KV pool so that every running request fits
        # (docs/runner.md §1.3 rule 5), and recomputes instead of caching prefixes
        "gpu_memory_utilization",
        "kv_cache_memory_bytes",
        "num_gpu_blocks_override",
        "swap_space",
        "cpu_offload_gb",
        "block_size",
        "enable_prefix_caching",
        # the reference always chunks prefills; a correct engine's tokens do not depend on the chunks
        "enable_chunked_prefill",
        # text: the reference takes token ids and returns token ids (``text`` is "")
        "skip_tokenizer_init",
        "tokenizer",
        "tokenizer_mode",
        "trust_remote_code",  # only LlamaForCausalLM is read (docs/runner.md §3.3): no code runs
        # logging: ``get_metrics`` counts whether or not stats are logged
        "disable_log_stats",
    }
)
"""vLLM ``LLM`` keywords accepted and ignored: each decides speed, memory, text handling or logging,
never the tokens of a correct engine. Any other keyword the reference does not take is a TypeError."""

DEFAULT_MAX_NUM_SEQS: Final = 8
"""The reference's batch (vLLM's CPU default is 256, ``engine/arg_utils.py``): its KV pool is allocated
up front, max_num_seqs · ⌈max_model_len/16⌉ + 1 blocks, so a large default would cost memory for no
token; a batch of any size gives the same tokens."""
DEFAULT_MAX_NUM_BATCHED_TOKENS: Final = 4096
"""vLLM 0.32's CPU default for the ``LLM`` class (``engine/arg_utils.py``)."""

SAMPLING_EPS: Final = 1e-5
"""vLLM's ``_SAMPLING_EPS``: a temperature below it is greedy."""
MIN_TEMPERATURE: Final = 1e-2
"""vLLM's ``_MAX_TEMP``: a temperature in (0, 0.01) is raised to 0.01."""
MAX_TEMPERATURE: Final = 2.0
"""vLLM 0.32 refuses temperatures above 2."""


class TokensPrompt(TypedDict):
    """vLLM's ``TokensPrompt`` (``inputs/llm.py``), the one prompt form an engine without a tokenizer
    takes."""

    prompt_token_ids: list[int]
    prompt: NotRequired[str]


PROMPT_KEYS: Final = frozenset(TokensPrompt.__annotations__)


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplingParams:
    """vLLM 0.32's ``SamplingParams`` keywords that decide tokens without a tokenizer, with vLLM's
    defaults (temperature 1.0, max_tokens 16) and checks (ValueError naming the value); any other
    keyword is a TypeError. ``to_request`` gives the runner's ``SamplingParams``."""

    temperature: float = 1.0
    """0 is greedy; (0, 0.01) is raised to 0.01 and above 2 is refused, as vLLM."""
    top_p: float = 1.0
    top_k: int = 0
    """0 or -1: off."""
    seed: int | None = None
    """The request's own generator (-1 is None, as vLLM); None draws from the engine's ``seed``."""
    max_tokens: int | None = 16
    """None: up to max_model_len."""
    ignore_eos: bool = False
    stop_token_ids: Sequence[int] | None = None
    detokenize: bool = True
    """Accepted; the reference has no tokenizer, so ``text`` is always ""."""

    def __post_init__(self) -> None:
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or not 0 <= t <= 2:
            raise ValueError(f"temperature must be a finite number in [0, {MAX_TEMPERATURE}], got {t!r}")
        if isinstance(self.top_p, bool) or not isinstance(self.top_p, int | float) or not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < -1:
            raise ValueError(f"top_k must be 0 (disable), -1, or at least 1, got {self.top_k!r}")
        if self.max_tokens is not None and (
            isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 1
        ):
            raise ValueError(f"max_tokens must be None or an int >= 1, got {self.max_tokens!r}")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise ValueError(f"seed must be None or an int, got {self.seed!r}")
        stops = list(self.stop_token_ids or [])
        if any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in stops):
            raise ValueError(f"stop_token_ids must be ints >= 0, got {self.stop_token_ids!r}")

    def to_request(self, *, max_model_len: int) -> requests.SamplingParams:
        """The runner's params, as vLLM normalises them: temperature (0, 0.01) → 0.01, greedy
        drops top-k and top-p, seed −1 → None, max_tokens None → max_model_len, stop ids deduplicated."""
        greedy = self.temperature < SAMPLING_EPS
        return requests.SamplingParams(
            temperature=0.0 if greedy else max(float(self.temperature), MIN_TEMPERATURE),
            seed=None if self.seed in (None, -1) else self.seed,
            max_tokens=max_model_len if self.max_tokens is None else self.max_tokens,
            ignore_eos=self.ignore_eos,
            stop_token_ids=tuple(dict.fromkeys(self.stop_token_ids or ())),
            top_k=0 if greedy else self.top_k,
            top_p=1.0 if greedy else float(self.top_p),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletionOutput:
    """vLLM's ``CompletionOutput``: lists where vLLM has lists, so outputs of the two compare equal."""

    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None = None
    logprobs: None = None
    finish_reason: requests.FinishReason | None = None
    stop_reason: int | None = None
    """The stop token id when one of ``stop_token_ids`` ended it; None for EOS or length."""

    def finished(self) -> bool:
        return self.finish_reason is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestOutput:
    """vLLM's ``RequestOutput`` of a finished request (``generate`` returns only those)."""

    request_id: str
    prompt: str | None
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]
    finished: bool = True
    prompt_logprobs: None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Metric:
    """vLLM's ``v1/metrics/reader.Metric``: a name and its labels (``model_name``, ``engine``)."""

    name: str
    labels: dict[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class Counter(Metric):
    """A monotonically increasing counter (vLLM's reader drops Prometheus' ``_total``)."""

    value: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Vector(Metric):
    """An ordered array of counters: only ``vllm:spec_decode_num_accepted_tokens_per_pos``."""

    values: list[int]


@dataclass(slots=True, kw_only=True)
class EngineCounts:
    """Owned by ``LLM``: counts over the engine's life, as vLLM's Prometheus counters.

    A *draft* is one request in one step that verified at least one scheduled draft token; its
    accepted tokens are the verified tokens less the one sampled (``make_spec_decoding_stats``, counted
    before a stop token trims the output); ``num_accepted_tokens_per_pos[j]`` counts the drafts whose
    token j was accepted, so it sums to ``num_accepted_tokens``."""

    num_speculative_tokens: int
    prompt_tokens: int = 0
    generation_tokens: int = 0
    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    num_accepted_tokens_per_pos: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.num_accepted_tokens_per_pos = [0] * self.num_speculative_tokens

    def add(self, result: RequestResult, num_prompt_tokens: int) -> None:
        if len(result.num_accepted_tokens_per_pos) > self.num_speculative_tokens:
            raise RuntimeError(
                f"request {result.prompt_index} accepted {len(result.num_accepted_tokens_per_pos)} drafts in a row,"
                f" more than num_speculative_tokens({self.num_speculative_tokens})"
            )
        self.prompt_tokens += num_prompt_tokens
        self.generation_tokens += len(result.output_token_ids)
        self.num_drafts += result.num_verify_steps
        self.num_draft_tokens += result.num_draft_tokens
        self.num_accepted_tokens += result.num_accepted_tokens
        for j, count in enumerate(result.num_accepted_tokens_per_pos):
            self.num_accepted_tokens_per_pos[j] += count


def _check_dtype(dtype: object) -> None:
    if dtype not in VLLM_DTYPES and dtype not in TORCH_DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of vLLM's: {sorted(VLLM_DTYPES)} or a torch float dtype")


def _token_prompts(prompts: object) -> list[TokensPrompt]:
    """One ``TokensPrompt`` or a sequence of them; anything else (text above all) is a TypeError."""
    items = [prompts] if isinstance(prompts, Mapping) else prompts
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        raise TypeError(
            f"prompts must be {{'prompt_token_ids': [...]}} or a list of them (the reference has no tokenizer),"
            f" got {type(prompts).__name__}"
        )
    out: list[TokensPrompt] = []
    for i, item in enumerate(items):
        ids = item.get("prompt_token_ids") if isinstance(item, Mapping) else None
        if not isinstance(ids, Sequence) or any(isinstance(t, bool) or not isinstance(t, int) for t in ids):
            raise TypeError(f"prompt {i} must be a dict with 'prompt_token_ids': a list of ints (got {item!r})")
        extra = sorted(set(item) - PROMPT_KEYS)
        if extra:
            raise ValueError(
                f"prompt {i} has keys {extra} the reference does not take (it takes {sorted(PROMPT_KEYS)})"
            )
        text = item.get("prompt")
        if text is not None and not isinstance(text, str):
            raise TypeError(f"prompt {i}: 'prompt' must be a string, got {type(text).__name__}")
        out.append(
            TokensPrompt(prompt_token_ids=list(ids))
            if text is None
            else TokensPrompt(prompt_token_ids=list(ids), prompt=text)
        )
    return out


def _params_per_prompt(params: SamplingParams | Sequence[SamplingParams] | None, count: int) -> list[SamplingParams]:
    """None: vLLM's defaults; one: for every prompt; a sequence: one per prompt."""
    listed: list[object]
    if params is None:
        listed = [SamplingParams()] * count
    elif isinstance(params, Sequence):
        listed = list(params)
    else:
        listed = [params] * count
    if len(listed) != count:
        raise ValueError(f"The lengths of prompts ({count}) and sampling_params ({len(listed)}) must be the same.")
    checked = [p for p in listed if isinstance(p, SamplingParams)]
    if len(checked) != count:
        wrong = sorted({type(p).__name__ for p in listed if not isinstance(p, SamplingParams)})
        raise TypeError(f"sampling_params must be arctic_ref.runner.llm.SamplingParams, got {wrong}")
    return checked


def _stop_reason(result: RequestResult, params: requests.SamplingParams, eos: tuple[int, ...]) -> int | None:
    """vLLM's ``check_stop``: EOS (unless ignored) first, with no stop reason; then a stop token id."""
    if result.finish_reason != "stop" or not result.output_token_ids:
        return None
    last = result.output_token_ids[-1]
    if last in eos and not params.ignore_eos:
        return None
    return last if last in params.stop_token_ids else None


class LLM:
    """vLLM's offline ``LLM`` on the reference runner, one rank on the CPU, float64.

    ``model`` is a checkpoint directory (config.json and safetensors, docs/runner.md §3.3).
    ``speculative_config`` is vLLM's dict ("ngram" or "suffix", read by ``vllm_drafting.drafter_for``);
    its drafter, and so the suffix cache, lives as long as the engine. ``seed`` seeds the engine's
    generator, from which each unseeded random request draws its own generator's seed in prompt order
    (vLLM draws such requests from one shared stream; here a request's tokens do not depend on its
    batch). A seeded request gets ``torch.Generator().manual_seed(seed)``, as vLLM's model runner.
    ``max_model_len`` defaults to the model's max_position_embeddings. ``dtype`` takes vLLM's names and
    is ignored: the reference computes in float64. Keywords in ``IGNORED_KEYWORDS`` are accepted and
    ignored, any other unknown keyword is a TypeError naming it."""

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        speculative_config: Mapping[str, object] | None = None,
        seed: int = 0,
        max_num_seqs: int = DEFAULT_MAX_NUM_SEQS,
        max_model_len: int | None = None,
        max_num_batched_tokens: int | None = None,
        dtype: str | torch.dtype = "auto",
        tensor_parallel_size: int = 1,
        **ignored: object,
    ) -> None:
        unknown = sorted(set(ignored) - IGNORED_KEYWORDS)
        if unknown:
            raise TypeError(
                f"LLM() got keyword arguments the reference engine does not take: {unknown}"
                f" (accepted and ignored: {sorted(IGNORED_KEYWORDS)})"
            )
        if ignored:
            logger.debug("ignoring %s: they change no token of a correct engine", sorted(ignored))
        _check_dtype(dtype)
        if tensor_parallel_size != 1:
            raise ValueError(f"tensor_parallel_size({tensor_parallel_size}) must be 1: the engine runs one rank")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an int, got {seed!r}")
        path = Path(model)
        config = ModelConfig.load(path)
        max_len = config.max_position_embeddings if max_model_len is None else max_model_len
        if not 2 <= max_len <= config.max_position_embeddings:
            raise ValueError(
                f"max_model_len({max_len}) must be in [2, max_position_embeddings({config.max_position_embeddings})]"
            )
        semantics = None
        if speculative_config is not None:
            semantics = VllmDraftSemantics.parse(speculative_config, max_model_len=max_len)
            if semantics.num_speculative_tokens > MAX_SPEC_LEN:
                raise ValueError(
                    f"num_speculative_tokens({semantics.num_speculative_tokens}) > the rejection sampler's"
                    f" MAX_SPEC_LEN({MAX_SPEC_LEN})"
                )
        scheduler = SchedulerConfig(
            max_num_seqs=max_num_seqs,
            max_num_batched_tokens=max_num_batched_tokens or DEFAULT_MAX_NUM_BATCHED_TOKENS,
            max_model_len=max_len,
            rule="vllm-0.32",
        )
        self.engine_config: Final = EngineConfig(
            model=config, layout=ParallelLayout(1, 1, 1), dtype=torch.float64, scheduler=scheduler
        )
        self.speculative: Final = semantics
        """vLLM's reading of ``speculative_config`` (None: no speculation)."""
        self.runner: Final[ReferenceRunner] = build_runner(
            self.engine_config,
            load_weights(path, config, torch.float64),
            build_groups(self.engine_config.layout, 0),
            drafter_for(speculative_config, max_model_len=max_len),
        )
        self._driver = RequestDriver(self.runner, SimpleScheduler(scheduler), {})
        self._seeds = torch.Generator().manual_seed(seed)
        self._labels: Final = {"model_name": str(model), "engine": "0"}
        self.counts: Final = EngineCounts(
            num_speculative_tokens=0 if semantics is None else semantics.num_speculative_tokens
        )

    def get_default_sampling_params(self) -> SamplingParams:
        """vLLM's defaults (a checkpoint's generation_config.json is not read)."""
        return SamplingParams()

    def generate(
        self,
        prompts: TokensPrompt | Sequence[TokensPrompt],
        sampling_params: SamplingParams | Sequence[SamplingParams] | None = None,
        *,
        use_tqdm: bool | Callable[..., object] = False,
    ) -> list[RequestOutput]:
        """Every prompt to completion, outputs in prompt order. Every prompt and parameter is checked
        before any request is added (a bad one raises and leaves the engine as it was). ``use_tqdm``
        is accepted; no progress bar is drawn."""
        del use_tqdm
        items = _token_prompts(prompts)
        params = _params_per_prompt(sampling_params, len(items))
        max_len = self.engine_config.scheduler.max_model_len
        runner_params = [p.to_request(max_model_len=max_len) for p in params]
        self._check(items, runner_params)
        runner_params = [self._seeded(p) for p in runner_params]
        indices = [self._driver.add(item["prompt_token_ids"], p) for item, p in zip(items, runner_params, strict=True)]
        while self._driver.step():
            pass
        results = {r.prompt_index: r for r in self._driver.take_results()}
        eos = self.engine_config.model.eos_token_ids
        outputs = []
        for index, item, p in zip(indices, items, runner_params, strict=True):
            result = results[index]
            self.counts.add(result, len(item["prompt_token_ids"]))
            completion = CompletionOutput(
                index=0,
                text="",
                token_ids=list(result.output_token_ids),
                finish_reason=result.finish_reason,
                stop_reason=_stop_reason(result, p, eos),
            )
            outputs.append(
                RequestOutput(
                    request_id=str(index),
                    prompt=item.get("prompt"),
                    prompt_token_ids=list(item["prompt_token_ids"]),
                    outputs=[completion],
                )
            )
        return outputs

    def get_metrics(self) -> list[Metric]:
        """vLLM's snapshot shapes: ``vllm:prompt_tokens``, ``vllm:generation_tokens`` and
        ``vllm:num_preemptions`` (always 0: the reference never preempts); with
        speculation also ``vllm:spec_decode_num_drafts``, ``…_num_draft_tokens``,
        ``…_num_accepted_tokens`` (Counters) and ``…_num_accepted_tokens_per_pos`` (a Vector of
        num_speculative_tokens values). Cumulative over the engine's life (``EngineCounts``)."""
        c = self.counts
        out: list[Metric] = [
            Counter(name="vllm:prompt_tokens", labels=dict(self._labels), value=c.prompt_tokens),
            Counter(name="vllm:generation_tokens", labels=dict(self._labels), value=c.generation_tokens),
            Counter(name="vllm:num_preemptions", labels=dict(self._labels), value=0),  # the scheduler never preempts
        ]
        if self.speculative is None:
            return out
        return [
            *out,
            Counter(name="vllm:spec_decode_num_drafts", labels=dict(self._labels), value=c.num_drafts),
            Counter(name="vllm:spec_decode_num_draft_tokens", labels=dict(self._labels), value=c.num_draft_tokens),
            Counter(
                name="vllm:spec_decode_num_accepted_tokens", labels=dict(self._labels), value=c.num_accepted_tokens
            ),
            Vector(
                name="vllm:spec_decode_num_accepted_tokens_per_pos",
                labels=dict(self._labels),
                values=list(c.num_accepted_tokens_per_pos),
            ),
        ]

    def _check(self, items: Sequence[TokensPrompt], params: Sequence[requests.SamplingParams]) -> None:
        """Prompts non-empty, shorter than max_model_len, ids in the vocabulary; stop ids too."""
        vocab = self.engine_config.model.vocab_size
        max_len = self.engine_config.scheduler.max_model_len
        for i, (item, p) in enumerate(zip(items, params, strict=True)):
            ids = item["prompt_token_ids"]
            bad = [t for t in [*ids, *p.stop_token_ids] if not 0 <= t < vocab]
            if bad or not 0 < len(ids) < max_len:
                raise ValueError(
                    f"prompt {i}: {len(ids)} tokens (must be in [1, max_model_len({max_len}))),"
                    f" ids or stop_token_ids outside [0, {vocab}): {bad[:5]}"
                )

    def _seeded(self, params: requests.SamplingParams) -> requests.SamplingParams:
        """An unseeded random request's own seed, drawn from the engine's generator."""
        if params.is_greedy or params.seed is not None:
            return params
        return replace(params, seed=int(torch.randint(0, 2**62, (1,), generator=self._seeds).item()))
