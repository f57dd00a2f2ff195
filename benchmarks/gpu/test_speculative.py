"""Speculative speedup on a replayed trace (docs/runner.md §7 S1) and the Arctic draft cost (S3), on one
H200 in bfloat16 with Llama-3-8B shapes, random weights, CUDA graphs on, batch 1; with both
forwards (``--kernels triton`` and ``reference``).

    pytest benchmarks/gpu/test_speculative.py --benchmark-only -s

The target's choice at every position is forced to the trace (``TraceForcing``), so acceptance
follows the trace while every forward is real. Ā = tokens emitted per step of the speculative
run (it bounds the speedup of a free drafter with free verification); η = (t_none / t_spec) / Ā.
Each run uses a fresh suffix cache (only the prompt and the request's own history help), after a
warm-up run on another trace that captures the graph sizes.
"""

import statistics
import time
from typing import Any

import pytest
import torch

from arctic_ref.model.config import llama3_8b_config
from arctic_ref.model.weights import random_weights_on
from arctic_ref.parallel import ParallelLayout, RankGroups, SoloComm, StepMode, plan_step
from arctic_ref.runner import EngineConfig, SamplingParams, SchedulerConfig, build_runner, run_requests
from arctic_ref.runner.drafters import NoDrafter, SuffixDrafter
from arctic_ref.runner.engine import request_id
from arctic_ref.runner.speculator import speculator_for
from arctic_ref.runner.trace_forcing import TraceForcing, repeated_span_trace
from benchmarks.cuda_timing import median_ms

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
SOLO = SoloComm(0)
GROUPS = RankGroups(rank=0, tp=SOLO, sp=SOLO, shift=SOLO)
PROMPT, OUTPUT = 192, 192


@pytest.mark.parametrize("kernels", ["triton", "reference"])
def test_replayed_trace_speedup(benchmark: Any, kernels: str) -> None:
    config = llama3_8b_config()
    engine = EngineConfig(
        model=config,
        layout=ParallelLayout(1, 1, 1),
        dtype=torch.bfloat16,
        device="cuda",
        cuda_graphs=True,
        kernels=kernels,
        scheduler=SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=256, max_model_len=1024),
    )
    runner = build_runner(engine, random_weights_on(config, 0, torch.bfloat16, torch.device("cuda")), GROUPS)
    for size in (s for s in runner.graphs.base if s <= 64 or s == 256):  # capture before timing
        runner.graph_for(plan_step(size, policy=runner.policy, graphs=runner.graphs, groups=GROUPS))
    traces = tuple(repeated_span_trace(PROMPT, OUTPUT, config.vocab_size, seed) for seed in range(4))
    params = [SamplingParams(max_tokens=OUTPUT)]

    def run(drafter: object, trace: int) -> tuple[float, int, int]:
        runner.drafter = drafter  # type: ignore[assignment]
        runner.logits_processor = TraceForcing({request_id(0): traces[trace]})
        torch.cuda.synchronize()
        began = time.perf_counter()
        results = run_requests(runner, engine.scheduler, [traces[trace][:PROMPT]], params)
        torch.cuda.synchronize()
        assert results[0].output_token_ids == traces[trace][PROMPT:]
        return time.perf_counter() - began, results[0].num_steps, len(results[0].output_token_ids)

    run(SuffixDrafter.build(1024), 0)  # warm-up: any sizes not captured above
    none = [run(NoDrafter(), t)[0] for t in (1, 2, 3)]
    spec_runs = [run(SuffixDrafter.build(1024), t) for t in (1, 2, 3)]
    t_none, t_spec = statistics.median(none), statistics.median(r[0] for r in spec_runs)
    mean_emitted = statistics.median(r[2] / r[1] for r in spec_runs)
    eta = (t_none / t_spec) / mean_emitted
    decode = runner.captured[(StepMode.BASE, 1)]
    decode_ms = median_ms(decode.graph.replay, runs=30, warmup=3)
    speculator = speculator_for(config.hidden_size, config.vocab_size, "mlp", 1, torch.bfloat16, "cuda")
    hidden, token = (
        torch.randn(1, config.hidden_size, device="cuda", dtype=torch.bfloat16),
        torch.tensor([5], device="cuda"),
    )
    draft_ms = median_ms(lambda: speculator.propose(hidden, token, 3), runs=30, warmup=3)
    benchmark.pedantic(lambda: (decode.graph.replay(), torch.cuda.synchronize()), rounds=20, warmup_rounds=3)
    figures = {
        "t_none_s": t_none,
        "t_spec_s": t_spec,
        "speedup": t_none / t_spec,
        "A_bar_tokens_per_step": mean_emitted,
        "S1_eta": eta,
        "decode_graph_ms": decode_ms,
        "none_ms_per_token": t_none / OUTPUT * 1e3,
        "S3_arctic_draft_ms": draft_ms,
        "S3_draft_over_decode": draft_ms / decode_ms,
    }
    benchmark.extra_info.update(figures)
    print(f"\n{kernels}: " + ", ".join(f"{k} {v:.3f}" for k, v in figures.items()))
