"""GPU rejection sampling: whole-call medians against the memory-bandwidth floor, side by side.

    pytest benchmarks/test_rejection_gpu.py --benchmark-only -s     (on one H200)

V = 128,256, fp32 logits, τ = 1 on every row (all random), noise drawn inside each call. Each shape
times, in one run on the same inputs: the floor (the bytes read once at the measured copy
bandwidth), the plain torch path (``fused=False``), vLLM 0.32's own kernels
(``benchmarks/gpu/vllm_0_32_rejection.py``, as ``benchmarks/gpu/compare_rejection_vllm.py`` calls
them), eager ``rejection_sample`` (fused kernels), and ``RejectionSampler`` (the same call replayed
as one CUDA graph), and prints the issue-13 target and issue 47's with their figures. The benchmark
row pytest-benchmark stores is ``RejectionSampler``; the other times and the ratios go in its
``extra_info``. A second row per shape stores the eager ``rejection_sample`` (what users import), so
the gate covers both. Two more tests cover a realistic mix (greedy and
random rows with top-k and top-p: the non-fused path, with where its time goes) and the
suffix-decoding regime (B = 1 with a 64-token draft).
"""

import dataclasses
from typing import Any

import pytest
import torch

from arctic_ref.spec import (
    INTENDED,
    RejectionSampler,
    SamplingMetadata,
    compute_target_probs,
    draw_noise,
    rejection_sample,
    rejection_sample_with_noise,
    validate_inputs,
)
from benchmarks.cuda_timing import median_ms

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
VOCAB = 128_256
TARGET_MS = {"1x4": 0.060, "8x4": 0.070, "32x4": 0.090, "256x4": 0.35, "256x16": 0.75, "256x4-probs": 0.45}
"""Issue 13's targets for the whole call on one H200."""
GRAPH_OVER_VLLM = 0.25
"""Issue 47: ``RejectionSampler`` at most this share of vLLM 0.32's time, every shape."""
GRAPH_OVER_FLOOR = {"256x16": 1.2, "64x8-probs": 1.2, "256x4-probs": 1.2, "256x4": 1.6}
"""Issue 47: ``RejectionSampler`` over the memory-read floor, where a bound is set."""
Args = tuple  # type: ignore[type-arg]


def _inputs(reqs: int, drafts: int, with_probs: bool, temperature: torch.Tensor | None = None) -> Args:
    g = torch.Generator(device="cuda").manual_seed(0)
    total = reqs * drafts
    logits = torch.randn(total, VOCAB, device="cuda", generator=g) * 4
    draft_ids = logits.argmax(dim=1)
    probs = torch.softmax(torch.randn(total, VOCAB, device="cuda", generator=g), dim=1) if with_probs else None
    tau = torch.ones(reqs, device="cuda") if temperature is None else temperature
    meta = SamplingMetadata(temperature=tau, all_greedy=False, all_random=bool((tau >= 1e-5).all()))
    return (
        draft_ids,
        [drafts] * reqs,
        drafts,
        torch.arange(1, reqs + 1, device="cuda") * drafts,
        probs,
        logits,
        torch.zeros(reqs, 1, dtype=torch.int64, device="cuda"),
        meta,
    )


@pytest.fixture(scope="module")
def bandwidth() -> float:
    """Bytes read + written per second by a 1 GiB device copy."""
    a = torch.empty(1024**3 // 4, device="cuda")
    b = torch.empty_like(a)
    return 2 * a.numel() * 4 / (median_ms(lambda: b.copy_(a), runs=20) * 1e-3)


SHAPES = [
    (1, 4, False),
    (8, 4, False),
    (32, 4, False),
    (256, 4, False),
    (256, 16, False),
    (64, 8, True),
    (256, 4, True),
]


@pytest.mark.parametrize(
    ("reqs", "drafts", "with_probs"), SHAPES, ids=[f"{r}x{d}" + ("-probs" if p else "") for r, d, p in SHAPES]
)
def test_rejection_sample_against_floor(
    benchmark: Any, bandwidth: float, reqs: int, drafts: int, with_probs: bool
) -> None:
    name = f"{reqs}x{drafts}" + ("-probs" if with_probs else "")
    args = _inputs(reqs, drafts, with_probs)
    read_bytes = args[5].numel() * 4 * (2 if with_probs else 1)
    floor_ms = read_bytes / bandwidth * 1e3
    sampler = RejectionSampler(capture_after=1)
    sampler(*args)
    from benchmarks.gpu.compare_rejection_vllm import vllm_call  # imports Triton: on a GPU only

    plain_ms = median_ms(lambda: rejection_sample(*args, fused=False))
    vllm_ms = median_ms(vllm_call(args), runs=200, warmup=20)
    eager_ms = median_ms(lambda: rejection_sample(*args), runs=200, warmup=20)
    graph_ms = median_ms(lambda: sampler(*args), runs=200, warmup=20)
    benchmark.pedantic(lambda: (sampler(*args), torch.cuda.synchronize()), rounds=100, warmup_rounds=20)
    assert sampler.replays > 0
    figures = {
        "copy_bandwidth_TBps": bandwidth / 1e12,
        "floor_ms": floor_ms,
        "plain_torch_ms": plain_ms,
        "vllm_0_32_ms": vllm_ms,
        "eager_fused_ms": eager_ms,
        "eager_over_vllm": eager_ms / vllm_ms,
        "graph_over_vllm": graph_ms / vllm_ms,
        "graph_ms": graph_ms,
        "graph_over_floor": graph_ms / floor_ms,
        "graph_over_plain_torch": graph_ms / plain_ms,
        "eager_over_graph": eager_ms / graph_ms,
    }
    target = TARGET_MS.get(name)
    verdict = (
        "no target" if target is None else f"target <= {target:.3f} ms: {'met' if graph_ms <= target else 'NOT met'}"
    )
    floor_bound = GRAPH_OVER_FLOOR.get(name)
    verdict += (
        f"; issue 47: eager <= vLLM {'met' if eager_ms <= vllm_ms else 'NOT met'}, graph <= "
        f"{GRAPH_OVER_VLLM} x vLLM {'met' if graph_ms <= GRAPH_OVER_VLLM * vllm_ms else 'NOT met'}"
    )
    if floor_bound is not None:
        verdict += f", graph <= {floor_bound} x floor {'met' if graph_ms <= floor_bound * floor_ms else 'NOT met'}"
    benchmark.extra_info.update(figures | {"target_ms": target})
    print(f"\n{name}: " + ", ".join(f"{k} {v:.4f}" for k, v in figures.items()) + f" | {verdict}")


@pytest.mark.parametrize(
    ("reqs", "drafts", "with_probs"), SHAPES, ids=[f"{r}x{d}" + ("-probs" if p else "") for r, d, p in SHAPES]
)
def test_eager_rejection_sample(benchmark: Any, reqs: int, drafts: int, with_probs: bool) -> None:
    """The eager ``rejection_sample`` as the stored row (the function users import)."""
    args = _inputs(reqs, drafts, with_probs)
    rejection_sample(*args)
    benchmark.pedantic(lambda: (rejection_sample(*args), torch.cuda.synchronize()), rounds=100, warmup_rounds=20)


def test_realistic_mix_breakdown(benchmark: Any) -> None:
    """64 requests × 4 drafts: every other request greedy; random ones τ = 0.8 with top-k 50 and
    top-p 0.9 (the non-fused path: ``RejectionSampler`` runs it eagerly). Where the time goes."""
    reqs, drafts = 64, 4
    tau = torch.where(torch.arange(reqs, device="cuda") % 2 == 0, 0.0, 0.8)
    ids, counts, k, cu, q, logits, bonus, _ = _inputs(reqs, drafts, False, tau)
    meta = SamplingMetadata(
        temperature=tau,
        all_greedy=False,
        all_random=False,
        top_k=torch.full((reqs,), 50, device="cuda"),
        top_p=torch.full((reqs,), 0.9, device="cuda"),
    )
    args = (ids, counts, k, cu, q, logits, bonus, meta)
    noise = draw_noise(counts, VOCAB, meta, device="cuda")
    parts = {
        "validate_inputs_ms": median_ms(lambda: validate_inputs(*args, INTENDED)),
        "draw_noise_ms": median_ms(lambda: draw_noise(counts, VOCAB, meta, device="cuda")),
        "target_probs_ms": median_ms(lambda: compute_target_probs(logits, cu, meta)),
        "with_noise_ms": median_ms(lambda: rejection_sample_with_noise(*args, noise)),
        "whole_call_ms": median_ms(lambda: rejection_sample(*args)),
    }
    sampler = RejectionSampler()
    benchmark.pedantic(lambda: (sampler(*args), torch.cuda.synchronize()), rounds=50, warmup_rounds=5)
    benchmark.extra_info.update(parts)
    print("\nmix 64x4, half greedy, top-k 50 + top-p 0.9: " + ", ".join(f"{k} {v:.3f}" for k, v in parts.items()))


def test_suffix_regime_one_request_64_drafts(benchmark: Any) -> None:
    """B = 1 with a 64-token suffix draft (a profile whose limit admits 64), eager and graphed."""
    profile = dataclasses.replace(INTENDED, max_spec_len_limit=64)
    args = _inputs(1, 64, False)
    sampler = RejectionSampler(profile=profile, capture_after=1)
    sampler(*args)
    eager_ms = median_ms(lambda: rejection_sample(*args, profile=profile), runs=100, warmup=10)
    graph_ms = median_ms(lambda: sampler(*args), runs=100, warmup=10)
    benchmark.pedantic(lambda: (sampler(*args), torch.cuda.synchronize()), rounds=100, warmup_rounds=10)
    figures = {"eager_fused_ms": eager_ms, "graph_ms": graph_ms, "eager_over_graph": eager_ms / graph_ms}
    benchmark.extra_info.update(figures)
    print("\nsuffix regime 1x64: " + ", ".join(f"{k} {v:.4f}" for k, v in figures.items()))
