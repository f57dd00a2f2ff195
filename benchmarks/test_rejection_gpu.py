"""GPU rejection sampling: medians against the memory-bandwidth floor (one read of the logits).

    pytest benchmarks/test_rejection_gpu.py --benchmark-only -s     (on one H200)

Shapes of verification.md §7: 256 requests × 4 and × 16 drafts, V = 128,256, fp32 logits, one-hot
drafts and draft probabilities; noise generation included (rejection_sample draws its own).
"""

from typing import Any

import pytest
import torch

from arctic_ref.spec import SamplingMetadata, rejection_sample
from benchmarks.cuda_timing import median_ms

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
REQS, VOCAB = 256, 128_256
RESULTS: dict[str, float] = {}


def _inputs(drafts: int, with_probs: bool) -> tuple:  # type: ignore[type-arg]
    g = torch.Generator(device="cuda").manual_seed(0)
    total = REQS * drafts
    logits = torch.randn(total, VOCAB, device="cuda", generator=g) * 4
    draft_ids = logits.argmax(dim=1)
    probs = torch.softmax(torch.randn(total, VOCAB, device="cuda", generator=g), dim=1) if with_probs else None
    meta = SamplingMetadata(temperature=torch.ones(REQS, device="cuda"), all_greedy=False, all_random=True)
    return (draft_ids, [drafts] * REQS, drafts, torch.arange(1, REQS + 1, device="cuda") * drafts, probs, logits,
            torch.zeros(REQS, 1, dtype=torch.int64, device="cuda"), meta)  # fmt: skip


@pytest.mark.parametrize(
    ("drafts", "with_probs"), [(4, False), (16, False), (4, True)], ids=["256x4", "256x16", "256x4-probs"]
)
def test_rejection_sample_against_floor(benchmark: Any, drafts: int, with_probs: bool) -> None:
    args = _inputs(drafts, with_probs)
    logits = args[5]
    read_bytes = logits.numel() * 4 + (args[4].numel() * 4 if with_probs else 0)
    copy = torch.empty_like(logits)
    copy_ms = median_ms(lambda: copy.copy_(logits))
    bandwidth = 2 * logits.numel() * 4 / (copy_ms * 1e-3)  # bytes read + written per second
    floor_ms = read_bytes / bandwidth * 1e3
    amax_ms = median_ms(lambda: logits.amax(dim=-1))
    plain_ms = median_ms(lambda: rejection_sample(*args, fused=False))
    fused_ms = median_ms(lambda: rejection_sample(*args), runs=200, warmup=20)
    benchmark.pedantic(lambda: (rejection_sample(*args), torch.cuda.synchronize()), rounds=100, warmup_rounds=20)
    figures = {
        "copy_bandwidth_TBps": bandwidth / 1e12, "floor_ms": floor_ms, "amax_ms": amax_ms,
        "plain_torch_ms": plain_ms, "fused_ms": fused_ms, "fused_over_floor": fused_ms / floor_ms,
        "plain_over_floor": plain_ms / floor_ms,
    }  # fmt: skip
    benchmark.extra_info.update(figures)
    print(f"\n{drafts=} {with_probs=}: " + ", ".join(f"{k} {v:.3f}" for k, v in figures.items()))
