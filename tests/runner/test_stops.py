"""Stop conditions beyond max_tokens and max_model_len (vLLM's check_stop): the model's EOS ids
(config.json ``eos_token_id``) unless ``ignore_eos``, and ``stop_token_ids``. Tokens are appended one
at a time and the stop token is kept; tokens a verify step accepted past it are dropped, so
speculation stays lossless with stops."""

from dataclasses import replace

import pytest

from arctic_ref.model.config import ModelConfig, tiny_config
from arctic_ref.model.weights import random_weights
from arctic_ref.parallel import ParallelLayout, RankGroups, SoloComm
from arctic_ref.runner import EngineConfig, SampleRecord, SamplingParams, SchedulerConfig, build_runner, run_requests
from arctic_ref.runner.drafters import Drafter, NoDrafter, SuffixDrafter
from arctic_ref.runner.engine import RequestResult
from arctic_ref.runner.prompts import builtin_prompts
from arctic_ref.testing.drafter_doubles import OracleDrafter

SOLO = SoloComm(0)
GROUPS = RankGroups(rank=0, tp=SOLO, sp=SOLO, shift=SOLO)
MAX_TOKENS = 24


def _run(
    config: ModelConfig,
    params: SamplingParams,
    drafter: Drafter | None = None,
    records: list[SampleRecord] | None = None,
) -> list[RequestResult]:
    engine = EngineConfig(
        model=config,
        layout=ParallelLayout(1, 1, 1),
        scheduler=SchedulerConfig(max_num_batched_tokens=64, max_model_len=256),
    )
    runner = build_runner(engine, random_weights(config, 0), GROUPS, drafter)
    prompts = builtin_prompts(config.vocab_size)
    return run_requests(runner, engine.scheduler, prompts, [params] * len(prompts), records=records)


@pytest.fixture(scope="module")
def reference() -> tuple[tuple[int, ...], ...]:
    return tuple(r.output_token_ids for r in _run(tiny_config(), SamplingParams(max_tokens=MAX_TOKENS)))


def _truncated(outputs: tuple[tuple[int, ...], ...], stops: set[int]) -> list[tuple[int, ...]]:
    out = []
    for tokens in outputs:
        cut = next((i for i, t in enumerate(tokens) if t in stops), None)
        out.append(tokens if cut is None else tokens[: cut + 1])
    return out


def _stop_token(reference: tuple[tuple[int, ...], ...]) -> int:
    """A token prompt 0 first emits at output index 5 or later, so several requests stop early."""
    tokens = reference[0]
    return next(t for i, t in enumerate(tokens) if i >= 5 and t not in tokens[:i])


@pytest.mark.parametrize("drafter", ["none", "suffix", "oracle"])
def test_stop_token_ids_stop_and_keep_the_token(reference: tuple[tuple[int, ...], ...], drafter: str) -> None:
    stop = _stop_token(reference)
    made: Drafter = {
        "none": NoDrafter(),
        "suffix": SuffixDrafter.build(256),
        "oracle": OracleDrafter(
            dict(zip((tuple(p) for p in builtin_prompts(512)), reference, strict=True)), 7, 512, 256
        ),  # 7 right tokens: a stop lands inside accepted runs
    }[drafter]
    records: list[SampleRecord] = []
    results = _run(tiny_config(), SamplingParams(max_tokens=MAX_TOKENS, stop_token_ids=(stop,)), made, records)
    expected = _truncated(reference, {stop})
    assert [r.output_token_ids for r in results] == expected
    assert [r.finish_reason for r in results] == ["stop" if stop in e else "length" for e in expected]
    assert results[0].finish_reason == "stop" and len(results[0].output_token_ids) < MAX_TOKENS
    assert len(records) == sum(len(e) for e in expected)  # no record for a token past the stop
    if drafter == "oracle":
        assert sum(r.num_accepted_tokens for r in results) > 0


def test_model_eos_stops_unless_ignored(reference: tuple[tuple[int, ...], ...]) -> None:
    stop = _stop_token(reference)
    config = replace(tiny_config(), eos_token_ids=(stop,))
    stopped = _run(config, SamplingParams(max_tokens=MAX_TOKENS))
    assert [r.output_token_ids for r in stopped] == _truncated(reference, {stop})
    ignored = _run(config, SamplingParams(max_tokens=MAX_TOKENS, ignore_eos=True))
    assert tuple(r.output_token_ids for r in ignored) == reference
    assert {r.finish_reason for r in ignored} == {"length"}


def test_eos_ids_come_from_config_json() -> None:
    raw = tiny_config().to_hf()
    assert ModelConfig.from_hf(raw).eos_token_ids == ()
    assert ModelConfig.from_hf(raw | {"eos_token_id": 7}).eos_token_ids == (7,)
    assert ModelConfig.from_hf(raw | {"eos_token_id": [7, 9]}).eos_token_ids == (7, 9)  # Llama 3.1 style
    both = replace(tiny_config(), eos_token_ids=(7, 9))
    assert ModelConfig.from_hf(both.to_hf()) == both
    with pytest.raises(ValueError, match=r"eos_token_ids \[600\] must be ints in \[0, vocab_size\(512\)\)"):
        replace(tiny_config(), eos_token_ids=(600,))
    with pytest.raises(ValueError, match=r"stop_token_ids \(-1,\) must be ints >= 0"):
        SamplingParams(stop_token_ids=(-1,))
