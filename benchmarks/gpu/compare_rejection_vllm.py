"""Our GPU rejection sampling against vLLM 0.32's Triton kernels, in one process on the same inputs.

    python -m benchmarks.gpu.compare_rejection_vllm [--json FILE] [--label NAME] [--breakdown]

Per shape (issue 47's: V = 128,256, fp32 logits, τ = 1 on every row, so all rows random), medians of
200 CUDA-event-timed calls, each synchronised, after 20 warm-ups:

- **floor**: the bytes read once (the logits, and the draft probabilities where given) at the
  bandwidth of a 1 GiB device copy measured here;
- **vLLM 0.32**: ``apply_sampling_constraints`` on a copy of the logits (its ``forward`` gathers the
  draft rows' logits into a new tensor and divides that in place; the copy stands for the gather)
  then ``rejection_sample``, both from ``benchmarks/gpu/vllm_0_32_rejection.py`` (vLLM's source; the
  bonus tokens are given, as ours are);
- **eager**: ``arctic_ref.spec.rejection_sample`` (what users import);
- **graph**: ``RejectionSampler`` (replays after its first sightings).

``--breakdown`` adds, per shape, the eager call's host time without synchronising (how much of the
call is host-bound) and the medians of its stages as the eager call of this checkout runs them.
The table goes to stdout; ``--json`` writes every figure.
"""

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import torch

from arctic_ref.spec import RejectionSampler, rejection_sample
from benchmarks.cuda_timing import median_ms as _median_ms
from benchmarks.gpu import vllm_0_32_rejection as vllm_ref
from benchmarks.test_rejection_gpu import SHAPES, VOCAB, Args
from benchmarks.test_rejection_gpu import _inputs as inputs

RUNS, WARMUP = 200, 20


def median_ms(fn: Callable[[], object], runs: int = RUNS, warmup: int = WARMUP) -> float:
    """``benchmarks.cuda_timing.median_ms`` at issue 47's counts (200 timed calls after 20 warm-ups)."""
    return _median_ms(fn, runs=runs, warmup=warmup)


def vllm_call(args: Args) -> Callable[[], torch.Tensor]:
    ids, counts, k, cu, probs, logits, bonus, meta = args

    def call() -> torch.Tensor:
        target = vllm_ref.apply_sampling_constraints(logits.clone(), cu, meta)
        return vllm_ref.rejection_sample(ids, counts, k, cu, probs, target, bonus, meta)

    return call


def copy_bandwidth() -> float:
    """Bytes read + written per second by a 1 GiB device copy."""
    a = torch.empty(1024**3 // 4, device="cuda")
    b = torch.empty_like(a)
    return 2 * a.numel() * 4 / (median_ms(lambda: b.copy_(a), runs=20, warmup=3) * 1e-3)


def host_us(fn: Callable[[], object], calls: int = 200) -> float:
    """Mean host µs per call of ``fn`` issued back to back (the GPU waits only where ``fn`` does)."""
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def breakdown(args: Args) -> dict[str, float]:
    """Stage medians of this checkout's eager call (the stages it has)."""
    from arctic_ref.spec import draw_noise, validate_inputs
    from arctic_ref.spec.profile import INTENDED

    counts, meta = args[1], args[7]
    parts: dict[str, float] = {"eager_host_us": host_us(lambda: rejection_sample(*args))}
    parts["validate_inputs_ms"] = median_ms(lambda: validate_inputs(*args, INTENDED), runs=50, warmup=5)
    parts["draw_noise_ms"] = median_ms(lambda: draw_noise(counts, VOCAB, meta, device="cuda"), runs=50, warmup=5)
    return parts


def measure(reqs: int, drafts: int, with_probs: bool, bandwidth: float, *, with_breakdown: bool) -> dict[str, Any]:
    """One shape's floor, vLLM, eager and graph medians (and the breakdown), on one set of inputs."""
    args = inputs(reqs, drafts, with_probs)
    sampler = RejectionSampler(capture_after=1)
    sampler(*args)
    row: dict[str, Any] = {
        "shape": f"{reqs}x{drafts}" + ("-probs" if with_probs else ""),
        "floor_ms": args[5].numel() * 4 * (2 if with_probs else 1) / bandwidth * 1e3,
        "vllm_ms": median_ms(vllm_call(args)),
        "eager_ms": median_ms(lambda: rejection_sample(*args)),
        "graph_ms": median_ms(lambda: sampler(*args)),
    }
    assert sampler.replays > 0
    if with_breakdown:
        row |= breakdown(args)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", default=None)
    parser.add_argument("--label", default="")
    parser.add_argument("--breakdown", action="store_true")
    options = parser.parse_args()
    bandwidth = copy_bandwidth()
    rows: list[dict[str, Any]] = []
    print(f"{options.label} card {torch.cuda.get_device_name()}, copy {bandwidth / 1e12:.3f} TB/s")
    for reqs, drafts, with_probs in SHAPES:
        rows.append(measure(reqs, drafts, with_probs, bandwidth, with_breakdown=options.breakdown))
        torch.cuda.empty_cache()
    print("| B × K | floor ms | vLLM 0.32 ms | eager ms | eager / vLLM | graph ms | graph / vLLM | graph / floor |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['shape']} | {r['floor_ms']:.4f} | {r['vllm_ms']:.4f} | {r['eager_ms']:.4f} | "
            f"{r['eager_ms'] / r['vllm_ms']:.3f} | {r['graph_ms']:.4f} | {r['graph_ms'] / r['vllm_ms']:.3f} | "
            f"{r['graph_ms'] / r['floor_ms']:.3f} |"
        )
    for r in rows:
        extra = {
            k: round(v, 4)
            for k, v in r.items()
            if k.endswith(("_us", "ms")) and k not in ("floor_ms", "vllm_ms", "eager_ms", "graph_ms")
        }
        if extra:
            print(f"{options.label} {r['shape']} breakdown: {extra}")
    if options.json:
        with open(options.json, "w") as f:
            json.dump(
                {"label": options.label, "card": torch.cuda.get_device_name(), "copy_Bps": bandwidth, "rows": rows},
                f,
                indent=1,
            )


if __name__ == "__main__":
    main()
