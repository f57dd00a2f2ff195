"""The reference runner as an engine with vLLM's offline ``LLM`` interface (arctic_ref.runner.llm,
docs/runner.md §8): greedy output is the same with and without speculation and equals ``run_requests``
of the runner underneath, the metrics add up as vLLM's do, top-k and top-p never emit a masked token,
and bad arguments fail as vLLM's do (TypeError for unknown keywords, ValueError for bad values)."""

import math
from collections.abc import Mapping
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest
import torch

from arctic_ref.model.config import ModelConfig
from arctic_ref.model.weights import load_weights, random_weights, save_pretrained
from arctic_ref.parallel.comm import build_groups
from arctic_ref.runner import requests
from arctic_ref.runner.engine import RequestResult, SampleRecord, build_runner, run_requests
from arctic_ref.runner.llm import (
    IGNORED_KEYWORDS,
    LLM,
    Counter,
    Metric,
    RequestOutput,
    SamplingParams,
    TokensPrompt,
    Vector,
)
from arctic_ref.runner.prompts import builtin_prompts
from arctic_ref.runner.scheduler import SchedulerConfig, SchedulerRule, SimpleScheduler, count_accepted_per_pos
from arctic_ref.runner.vllm_drafting import drafter_for
from arctic_ref.types import ReqId

CONFIG = ModelConfig(
    vocab_size=512,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=2,
    head_dim=32,
    max_position_embeddings=256,
)
MAX_TOKENS = 24
PROMPTS = builtin_prompts(CONFIG.vocab_size)
SPEC_CONFIGS: dict[str, Mapping[str, object]] = {
    "ngram-k2": {"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 1, "prompt_lookup_max": 3},
    "ngram-k5": {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_min": 2, "prompt_lookup_max": 4},
    "suffix-k3": {"method": "suffix", "num_speculative_tokens": 3},
    "suffix-default": {"method": "suffix"},  # k = suffix_decoding_max_tree_depth = 24
}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny-llama")
    save_pretrained(path, CONFIG, random_weights(CONFIG, 7))
    return path


@pytest.fixture(scope="module")
def greedy_off(checkpoint: Path) -> list[tuple[int, ...]]:
    llm = LLM(str(checkpoint))
    return [tuple(o.outputs[0].token_ids) for o in llm.generate(_prompts(), _greedy())]


def _prompts(prompts: list[list[int]] = PROMPTS) -> list[TokensPrompt]:
    return [TokensPrompt(prompt_token_ids=list(p)) for p in prompts]


def _greedy(max_tokens: int = MAX_TOKENS) -> SamplingParams:
    return SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True)


def _metrics(llm: LLM) -> dict[str, Metric]:
    return {m.name: m for m in llm.get_metrics()}


def _counter(metrics: dict[str, Metric], name: str) -> int:
    metric = metrics[name]
    assert isinstance(metric, Counter)
    return metric.value


def _per_pos(metrics: dict[str, Metric]) -> list[int]:
    metric = metrics["vllm:spec_decode_num_accepted_tokens_per_pos"]
    assert isinstance(metric, Vector)
    return metric.values


def _run_underneath(
    llm: LLM,
    checkpoint: Path,
    spec: Mapping[str, object] | None,
    params: list[requests.SamplingParams],
    records: list[SampleRecord] | None = None,
) -> list[RequestResult]:
    """The same prompts through ``run_requests`` on a runner built independently of ``llm``."""
    config = llm.engine_config
    max_len = config.scheduler.max_model_len
    runner = build_runner(
        config,
        load_weights(checkpoint, config.model, torch.float64),
        build_groups(config.layout, 0),
        drafter_for(spec, max_model_len=max_len),
    )
    return run_requests(runner, config.scheduler, PROMPTS, params, records=records)


@pytest.mark.parametrize("name", list(SPEC_CONFIGS), ids=list(SPEC_CONFIGS))
def test_greedy_is_the_same_with_speculation(checkpoint: Path, greedy_off: list[tuple[int, ...]], name: str) -> None:
    llm = LLM(str(checkpoint), speculative_config=SPEC_CONFIGS[name])
    outputs = llm.generate(_prompts(), _greedy())
    assert [tuple(o.outputs[0].token_ids) for o in outputs] == greedy_off
    metrics = _metrics(llm)
    assert _counter(metrics, "vllm:spec_decode_num_draft_tokens") > 0, "no draft: the comparison is vacuous"
    assert _counter(metrics, "vllm:spec_decode_num_accepted_tokens") > 0


@pytest.mark.parametrize("name", [None, *SPEC_CONFIGS], ids=["spec-off", *SPEC_CONFIGS])
def test_outputs_and_metrics_equal_run_requests_underneath(checkpoint: Path, name: str | None) -> None:
    spec = None if name is None else SPEC_CONFIGS[name]
    llm = LLM(str(checkpoint), speculative_config=spec)
    outputs = llm.generate(_prompts(), _greedy())
    max_len = llm.engine_config.scheduler.max_model_len
    results = _run_underneath(llm, checkpoint, spec, [_greedy().to_request(max_model_len=max_len)] * len(PROMPTS))
    assert [o.request_id for o in outputs] == [str(i) for i in range(len(PROMPTS))]
    assert [o.prompt_token_ids for o in outputs] == PROMPTS
    assert [(tuple(o.outputs[0].token_ids), o.outputs[0].finish_reason) for o in outputs] == [
        (r.output_token_ids, r.finish_reason) for r in results
    ]
    assert all(o.finished and o.outputs[0].text == "" and o.outputs[0].index == 0 for o in outputs)
    metrics = _metrics(llm)
    assert _counter(metrics, "vllm:prompt_tokens") == sum(len(p) for p in PROMPTS)
    assert _counter(metrics, "vllm:generation_tokens") == sum(len(r.output_token_ids) for r in results)
    if llm.speculative is None:
        assert not any(n.startswith("vllm:spec_decode") for n in metrics)
        return
    per_pos = _per_pos(metrics)
    assert len(per_pos) == llm.speculative.num_speculative_tokens
    assert _counter(metrics, "vllm:spec_decode_num_drafts") == sum(r.num_verify_steps for r in results)
    assert _counter(metrics, "vllm:spec_decode_num_draft_tokens") == sum(r.num_draft_tokens for r in results)
    accepted = _counter(metrics, "vllm:spec_decode_num_accepted_tokens")
    assert accepted == sum(r.num_accepted_tokens for r in results) == sum(per_pos)
    assert all(a >= b for a, b in pairwise(per_pos)), "accepted runs are prefixes"
    assert per_pos[0] <= _counter(metrics, "vllm:spec_decode_num_drafts")
    labels = {m.labels["engine"] for m in metrics.values()}
    assert labels == {"0"}


def test_metrics_accumulate_and_ids_continue_across_calls(checkpoint: Path) -> None:
    llm = LLM(str(checkpoint), speculative_config=SPEC_CONFIGS["ngram-k2"])
    first = llm.generate(_prompts(), _greedy())
    after_first = _metrics(llm)
    second = llm.generate(_prompts(), _greedy())
    after_second = _metrics(llm)
    assert [o.request_id for o in second] == [str(i) for i in range(len(PROMPTS), 2 * len(PROMPTS))]
    assert [o.outputs[0].token_ids for o in second] == [o.outputs[0].token_ids for o in first]
    for name in ("vllm:spec_decode_num_drafts", "vllm:spec_decode_num_accepted_tokens", "vllm:prompt_tokens"):
        assert _counter(after_second, name) == 2 * _counter(after_first, name)
    assert _per_pos(after_second) == [2 * v for v in _per_pos(after_first)]


def test_the_suffix_cache_lives_as_long_as_the_engine(checkpoint: Path) -> None:
    """vLLM's suffix proposer keeps finished responses in its global tree: the same prompt a second
    time drafts from the first response and is accepted more often."""
    llm = LLM(str(checkpoint), speculative_config=SPEC_CONFIGS["suffix-k3"])
    prompt = _prompts([PROMPTS[2]])
    llm.generate(prompt, _greedy(48))
    first = _counter(_metrics(llm), "vllm:spec_decode_num_accepted_tokens")
    llm.generate(prompt, _greedy(48))
    second = _counter(_metrics(llm), "vllm:spec_decode_num_accepted_tokens") - first
    assert second > first


def test_top_k_one_is_greedy(checkpoint: Path, greedy_off: list[tuple[int, ...]]) -> None:
    for spec in (None, SPEC_CONFIGS["suffix-k3"]):
        llm = LLM(str(checkpoint), speculative_config=spec)
        params = SamplingParams(temperature=1.0, top_k=1, max_tokens=MAX_TOKENS, ignore_eos=True)
        assert [tuple(o.outputs[0].token_ids) for o in llm.generate(_prompts(), params)] == greedy_off


def _top_p_keeps(logits: torch.Tensor, temperature: float, top_p: float, token: int) -> bool:
    """The token's probability mass strictly above it is below p (vLLM keeps a token iff the mass up to
    and including it, in ascending order, exceeds 1 − p); 1e-5 of slack for float32 sums."""
    probs = torch.softmax(logits.to(torch.float64) / temperature, dim=-1)
    above = float(probs[probs > probs[token]].sum())
    return above < top_p + 1e-5


@pytest.mark.parametrize("spec", [None, "suffix-k3", "ngram-k5"], ids=["spec-off", "suffix-k3", "ngram-k5"])
@pytest.mark.parametrize(("top_k", "top_p"), [(3, 1.0), (0, 0.05), (8, 0.03)], ids=["k3", "p0.05", "k8-p0.03"])
def test_no_masked_token_is_ever_emitted(checkpoint: Path, spec: str | None, top_k: int, top_p: float) -> None:
    """Every emitted token (sampled, accepted draft, recovered or bonus) lies inside the top-k and
    top-p mask of the logits row that produced it."""
    config = None if spec is None else SPEC_CONFIGS[spec]
    llm = LLM(str(checkpoint), speculative_config=config)
    params = [
        SamplingParams(temperature=1.0, top_k=top_k, top_p=top_p, seed=100 + i, max_tokens=MAX_TOKENS, ignore_eos=True)
        for i in range(len(PROMPTS))
    ]
    max_len = llm.engine_config.scheduler.max_model_len
    records: list[SampleRecord] = []
    results = _run_underneath(llm, checkpoint, config, [p.to_request(max_model_len=max_len) for p in params], records)
    assert [tuple(o.outputs[0].token_ids) for o in llm.generate(_prompts(), params)] == [
        r.output_token_ids for r in results
    ]
    assert len(records) == sum(len(r.output_token_ids) for r in results)
    for record in records:
        prompt = PROMPTS[record.prompt_index]
        token = results[record.prompt_index].output_token_ids[record.num_tokens - len(prompt)]
        logits = record.logits.to(torch.float32)
        if top_k:
            assert logits[token] >= logits.topk(top_k).values[-1], (record.prompt_index, record.num_tokens)
        assert _top_p_keeps(logits, 1.0, top_p, token), (record.prompt_index, record.num_tokens)


def test_seeds(checkpoint: Path) -> None:
    """A seeded request's tokens depend on its seed alone (not on its batch or the engine's seed);
    unseeded ones follow the engine's seed."""
    params = SamplingParams(temperature=1.0, seed=5, max_tokens=MAX_TOKENS, ignore_eos=True)
    alone = LLM(str(checkpoint), seed=1).generate(_prompts([PROMPTS[1]]), params)
    batched = LLM(str(checkpoint), seed=2).generate(_prompts(), params)
    assert alone[0].outputs[0].token_ids == batched[1].outputs[0].token_ids
    unseeded = SamplingParams(max_tokens=MAX_TOKENS, ignore_eos=True)  # vLLM's default temperature 1.0

    def run(seed: int) -> list[list[int]]:
        return [o.outputs[0].token_ids for o in LLM(str(checkpoint), seed=seed).generate(_prompts(), unseeded)]

    assert run(0) == run(0)
    assert run(0) != run(1)


def test_stop_reasons(checkpoint: Path, greedy_off: list[tuple[int, ...]]) -> None:
    llm = LLM(str(checkpoint))
    stop = greedy_off[0][3]
    out = llm.generate(_prompts([PROMPTS[0]]), replace(_greedy(), stop_token_ids=[stop]))[0].outputs[0]
    assert (out.token_ids[-1], out.finish_reason, out.stop_reason) == (stop, "stop", stop)
    assert out.token_ids == list(greedy_off[0][: greedy_off[0].index(stop) + 1])
    assert out.finished()
    length = llm.generate(_prompts([PROMPTS[0]]), _greedy(4))[0].outputs[0]
    assert (len(length.token_ids), length.finish_reason, length.stop_reason) == (4, "length", None)


def test_sampling_params_follow_vllm() -> None:
    default = SamplingParams()
    assert (default.temperature, default.max_tokens, default.top_k, default.top_p) == (1.0, 16, 0, 1.0)
    request = SamplingParams(temperature=0.001, seed=-1, max_tokens=None, stop_token_ids=[3, 3, 4]).to_request(
        max_model_len=100
    )
    assert (request.temperature, request.seed, request.max_tokens, request.stop_token_ids) == (0.01, None, 100, (3, 4))
    greedy = SamplingParams(temperature=0.0, top_k=5, top_p=0.5).to_request(max_model_len=100)
    assert (greedy.top_k, greedy.top_p, greedy.is_greedy) == (0, 1.0, True)
    for bad, match in [
        ({"temperature": -0.5}, "temperature"),
        ({"temperature": 2.5}, "temperature"),
        ({"temperature": math.nan}, "temperature"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"top_k": -2}, "top_k"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"stop_token_ids": [-1]}, "stop_token_ids"),
    ]:
        with pytest.raises(ValueError, match=match):
            SamplingParams(**bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="presence_penalty"):
        SamplingParams(presence_penalty=0.5)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"top_k": -2}, r"top_k\(-2\)"),
        ({"top_k": True}, "top_k"),
        ({"top_p": 0.0}, r"top_p\(0.0\)"),
        ({"top_p": 1.01}, r"top_p\(1.01\)"),
    ],
    ids=["k-2", "k-bool", "p0", "p>1"],
)
def test_runner_sampling_params_refuse_bad_filters(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        requests.SamplingParams(temperature=1.0, **kwargs)  # type: ignore[arg-type]


def test_runner_filters_follow_vllms_input_batch() -> None:
    """k in [1, V] with V = off (0, −1, ≥ V, or greedy); p = 1 when greedy."""
    assert [requests.SamplingParams(temperature=1.0, top_k=k).top_k_for(50) for k in (0, -1, 1, 49, 50, 99)] == [
        50,
        50,
        1,
        49,
        50,
        50,
    ]
    assert requests.SamplingParams(temperature=0.0, top_k=3, top_p=0.5).top_k_for(50) == 50
    assert requests.SamplingParams(temperature=0.0, top_k=3, top_p=0.5).top_p_for() == 1.0
    assert requests.SamplingParams(temperature=1.0, top_p=0.5).top_p_for() == 0.5


def test_bad_engine_arguments(checkpoint: Path) -> None:
    with pytest.raises(TypeError, match=r"\['block_sizes', 'quantization'\]"):
        LLM(str(checkpoint), quantization="fp8", block_sizes=16)
    for kwargs, match in [
        ({"dtype": "float64x"}, "dtype"),
        ({"tensor_parallel_size": 2}, r"tensor_parallel_size\(2\)"),
        ({"max_model_len": 257}, r"max_model_len\(257\)"),
        ({"speculative_config": {"method": "eagle", "num_speculative_tokens": 2}}, "eagle"),
        ({"speculative_config": {"method": "ngram", "num_speculative_tokens": 40}}, r"MAX_SPEC_LEN\(32\)"),
        ({"max_num_seqs": 0}, r"max_num_seqs\(0\)"),
    ]:
        with pytest.raises(ValueError, match=match):
            LLM(str(checkpoint), **kwargs)  # type: ignore[arg-type]
    ignored: dict[str, object] = dict.fromkeys(IGNORED_KEYWORDS) | {"gpu_memory_utilization": 0.2}
    llm = LLM(str(checkpoint), dtype="bfloat16", tensor_parallel_size=1, **ignored)  # type: ignore[arg-type]
    assert llm.engine_config.dtype == torch.float64


def test_bad_generate_arguments_leave_the_engine_as_it_was(checkpoint: Path) -> None:
    llm = LLM(str(checkpoint), max_model_len=64)
    for prompts, params, error, match in [
        ("some text", None, TypeError, "no tokenizer"),
        ([{"prompt": "text"}], None, TypeError, "prompt 0"),
        ([{"prompt_token_ids": [1, True]}], None, TypeError, "prompt 0"),
        ([{"prompt_token_ids": [1, 2], "multi_modal_data": {}}], None, ValueError, "multi_modal_data"),
        (_prompts(), [_greedy()], ValueError, r"prompts \(4\) and sampling_params \(1\)"),
        (_prompts([[1, 2], [3, 512]]), None, ValueError, r"prompt 1.*\[512\]"),
        (_prompts([[]]), None, ValueError, "prompt 0: 0 tokens"),
        (_prompts([[1] * 64]), None, ValueError, r"max_model_len\(64\)"),
        (_prompts([[1, 2]]), replace(_greedy(), stop_token_ids=[600]), ValueError, r"\[600\]"),
        (_prompts([[1, 2]]), requests.SamplingParams(), TypeError, "arctic_ref.runner.llm.SamplingParams"),
    ]:
        with pytest.raises(error, match=match):
            llm.generate(prompts, params)  # type: ignore[arg-type]
    single = llm.generate({"prompt_token_ids": [1, 2, 3], "prompt": "abc"}, _greedy(3))
    assert len(single) == 1 and isinstance(single[0], RequestOutput)
    assert (single[0].request_id, single[0].prompt, len(single[0].outputs[0].token_ids)) == ("0", "abc", 3)


@pytest.mark.parametrize(
    ("runs", "expected"),
    [([], []), ([0], []), ([2], [1, 1]), ([2, 1, 3], [3, 2, 1]), ([1, 0, 1], [2])],
    ids=["none", "zero", "one-run", "three-runs", "with-zero"],
)
def test_count_accepted_per_pos(runs: list[int], expected: list[int]) -> None:
    per_pos: list[int] = []
    for accepted in runs:
        count_accepted_per_pos(per_pos, accepted)
    assert per_pos == expected
    assert sum(per_pos) == sum(runs)


@pytest.mark.parametrize(("rule", "drafts"), [("vllm-0.9", 4), ("vllm-0.32", 3)], ids=["vllm-0.9", "vllm-0.32"])
def test_the_max_model_len_cap_of_each_scheduler_rule(rule: SchedulerRule, drafts: int) -> None:
    """M = 10, a 5-token prompt, one sampled token, then 4 drafts reaching position 9 = M − 1: vLLM
    0.9.2 schedules all 4 (m ≤ M − c), vLLM 0.32 keeps the last position free (m ≤ M − c − 1). The
    engine uses vLLM 0.32's rule."""
    scheduler = SimpleScheduler(SchedulerConfig(max_model_len=10, rule=rule))
    scheduler.add(
        requests.RequestState(req_id=ReqId("r"), prompt_token_ids=(1, 2, 3, 4, 5), sampling=requests.SamplingParams())
    )
    first = scheduler.schedule()
    scheduler.update(first, {ReqId("r"): [6]}, {ReqId("r"): [7, 8, 9, 10]})
    (item,) = scheduler.schedule().scheduled
    assert (item.num_computed_tokens, len(item.spec_token_ids), item.num_scheduled_tokens) == (5, drafts, drafts + 1)
    with pytest.raises(ValueError, match="rule"):
        SchedulerConfig(rule="vllm-0.10")  # type: ignore[arg-type]


def test_the_engine_schedules_as_vllm_0_32(checkpoint: Path) -> None:
    assert LLM(str(checkpoint)).engine_config.scheduler.rule == "vllm-0.32"
