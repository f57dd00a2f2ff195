"""The dense forward (the engine checks' float64 reference) against the runner's paged forward."""

import torch

from arctic_ref.model.config import tiny_config
from arctic_ref.model.dense import dense_logits
from arctic_ref.model.weights import random_weights
from arctic_ref.parallel.comm import RankGroups, SoloComm
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.runner.engine import EngineConfig, SampleRecord, build_runner, run_requests
from arctic_ref.runner.requests import SamplingParams
from arctic_ref.runner.scheduler import SchedulerConfig


def test_dense_logits_equal_the_runners_sampled_rows() -> None:
    config = tiny_config(vocab_size=97)
    weights = random_weights(config, 5)
    solo = SoloComm(0)
    engine = EngineConfig(
        model=config, layout=ParallelLayout(1, 1, 1), scheduler=SchedulerConfig(max_num_batched_tokens=5)
    )
    records: list[SampleRecord] = []
    prompts = [[3, 14, 15, 92, 65, 35, 89, 79], [2, 7, 1, 8]]
    results = run_requests(
        build_runner(engine, weights, RankGroups(rank=0, tp=solo, sp=solo, shift=solo)),
        engine.scheduler,
        prompts,
        [SamplingParams(max_tokens=6)] * 2,
        records=records,
    )
    assert len(records) == 12
    for result in results:
        tokens = prompts[result.prompt_index] + list(result.output_token_ids)
        logits = dense_logits(weights, config, torch.tensor(tokens))
        for record in (r for r in records if r.prompt_index == result.prompt_index):
            torch.testing.assert_close(
                logits[record.num_tokens - 1], record.logits.to(torch.float64), rtol=0, atol=1e-10
            )
        greedy = logits[len(prompts[result.prompt_index]) - 1 : -1].argmax(-1).tolist()
        assert greedy == list(result.output_token_ids)


def test_dense_logits_reject_an_empty_sequence() -> None:
    config = tiny_config(vocab_size=97)
    try:
        dense_logits(random_weights(config, 0), config, torch.tensor([], dtype=torch.int64))
    except ValueError as error:
        assert "non-empty" in str(error)
    else:
        raise AssertionError("no ValueError")
