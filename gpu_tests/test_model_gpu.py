"""The model on one GPU in bfloat16 against the float64 CPU baseline (docs/parallel.md §5.2 table), and
the layout conformance over NCCL when enough GPUs exist (skipped otherwise, saying why)."""

from dataclasses import replace

import pytest
import torch

from arctic_ref.model.config import tiny_config
from arctic_ref.model.weights import random_weights
from arctic_ref.parallel import ParallelLayout, RankGroups, SoloComm
from arctic_ref.parallel.launch import RankInfo, spawn_ranks
from arctic_ref.runner import EngineConfig, SampleRecord, SamplingParams, SchedulerConfig, build_runner, run_requests
from arctic_ref.runner.prompts import builtin_prompts
from arctic_ref.testing.layout_matrix import L9, LAYOUTS, TOLERANCE, compare, run_cases

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]
SOLO = SoloComm(0)
# Against float64 on the CPU (not the same-dtype layout table of docs/parallel.md §5.2): float64 and
# float32 on the GPU are held to the table's float32 row (the float32 islands use CUDA's float32
# rsqrt/cos/sin). bfloat16 against float64 is outside the table, which compares layouts in one
# dtype: measured on an H200 max|Δ| 0.48, mean 1.2e-2, flips at margins up to 0.14, so it is held to
# (1.0, 2.5e-2) — loose bounds that still fail on a broken kernel (wrong head map or RoPE: |Δ| > 1).
VS_FLOAT64 = {"float64": TOLERANCE["float32"], "float32": TOLERANCE["float32"], "bfloat16": (1.0, 2.5e-2)}


def _run(
    dtype: torch.dtype, device: str, weight_dtype: torch.dtype
) -> tuple[list[tuple[int, ...]], list[SampleRecord]]:
    """Weights rounded to ``weight_dtype`` first, so a float64 reference runs the same model."""
    config = tiny_config()
    engine = EngineConfig(
        model=config,
        layout=ParallelLayout(1, 1, 1),
        dtype=dtype,
        device=device,
        scheduler=SchedulerConfig(max_num_batched_tokens=64),
    )
    records: list[SampleRecord] = []
    prompts = builtin_prompts(config.vocab_size)
    runner = build_runner(
        engine, random_weights(config, 0, weight_dtype), RankGroups(rank=0, tp=SOLO, sp=SOLO, shift=SOLO)
    )
    results = run_requests(runner, engine.scheduler, prompts, [SamplingParams(max_tokens=32)] * 4, records=records)
    return [r.output_token_ids for r in results], records


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16], ids=str)
def test_model_on_gpu_against_float64_cpu(dtype: torch.dtype) -> None:
    """Per-step logits while histories agree, against float64 on the CPU with the same
    (dtype-rounded) weights, so only the arithmetic differs; bounds in ``VS_FLOAT64``. Argmax flips
    are allowed only where the reference's top-1/top-2 margin is at most 0.2 (bfloat16) or twice the
    max tolerance (docs/parallel.md §5.2 rule 2)."""
    cpu_out, cpu_rows = _run(torch.float64, "cpu", dtype)
    gpu_out, gpu_rows = _run(dtype, "cuda", dtype)
    name = str(dtype).removeprefix("torch.")
    max_tol, mean_tol = VS_FLOAT64[name]
    by_key = {(r.prompt_index, r.num_tokens): r for r in cpu_rows}
    deltas, flip_margins = [], []
    for row in gpu_rows:
        ref = by_key.get((row.prompt_index, row.num_tokens))
        if ref is None:
            continue
        deltas.append((row.logits.double() - ref.logits).abs())
        if int(row.logits.double().argmax()) != int(ref.logits.argmax()):
            top2 = ref.logits.topk(2).values
            flip_margins.append(float(top2[0] - top2[1]))
    everything = torch.cat([d.flatten() for d in deltas])
    identical = sum(a == b for a, b in zip(cpu_out, gpu_out, strict=True))
    print(
        f"\n{name} on GPU vs float64 CPU: max|Δ| {float(everything.max()):.2e}, mean {float(everything.mean()):.2e}, "
        f"{len(deltas)} rows, argmax flips at margins {[f'{m:.3f}' for m in flip_margins]}, identical requests {identical}/4"
    )
    assert float(everything.max()) <= max_tol
    assert mean_tol is None or float(everything.mean()) <= mean_tol
    assert all(m <= max(2 * max_tol, 0.2 if name == "bfloat16" else 0.0) for m in flip_margins)


@pytest.mark.parametrize("world", [2, 4, 8])
def test_layouts_over_nccl(world: int) -> None:
    """L1–L9 over NCCL, float64, against L0 on the CPU (docs/parallel.md §5.1, docs/runner.md §6 item 6)."""
    if torch.cuda.device_count() < world:
        pytest.skip(f"needs {world} GPUs, {torch.cuda.device_count()} visible")
    cases = tuple(replace(c, device="cuda") for c in (*LAYOUTS, L9) if c.world_size == world)
    baseline = run_cases(RankInfo(0, 1, "gloo"), (LAYOUTS[0],))
    assert baseline is not None
    outcomes = spawn_ranks(run_cases, cases, world_size=world, backend="nccl", timeout_s=600)[0]
    for outcome in outcomes:
        result = compare(baseline[0], outcome)
        print(f"\n{outcome.case.name} NCCL: max|Δ| {result.max_abs:.2e}, first divergence {result.first_divergence}")
        assert not result.failed
