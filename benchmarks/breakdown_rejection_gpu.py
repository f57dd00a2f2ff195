"""Where the time of one rejection_sample call goes on the GPU (diagnostic script, not a test).

python -m benchmarks.breakdown_rejection_gpu   (from the repository root, on a GPU)

Per shape (V = 128,256, τ = 1, fp32): each stage eagerly (median of CUDA-event-timed calls), the
whole eager call, one bare graph replay, and the ``RejectionSampler`` call (host checks, replay,
the one read-back, the output copy).
"""

import time

import torch
from torch.profiler import ProfilerActivity, profile

from arctic_ref.spec import RejectionSampler, SamplingMetadata, draw_noise, rejection_sample
from arctic_ref.spec.profile import INTENDED
from arctic_ref.spec.rejection import validate_host_inputs, validate_inputs
from arctic_ref.spec.rejection_graph import _graph_key
from arctic_ref.spec.rejection_triton import ValueChecks, fused_kernels, stats_partials
from benchmarks.cuda_timing import median_ms

VOCAB = 128_256


def breakdown(reqs: int, drafts: int) -> None:
    total = reqs * drafts
    logits = torch.randn(total, VOCAB, device="cuda") * 4
    ids = logits.argmax(1)
    tau = torch.ones(reqs, device="cuda")
    meta = SamplingMetadata(temperature=tau, all_greedy=False, all_random=True)
    cu = torch.arange(1, reqs + 1, device="cuda") * drafts
    bonus = torch.zeros(reqs, 1, dtype=torch.int64, device="cuda")
    args = (ids, [drafts] * reqs, drafts, cu, None, logits, bonus, meta)
    noise = draw_noise([drafts] * reqs, VOCAB, meta, device="cuda")
    assert noise is not None
    flags = torch.zeros(2, dtype=torch.int32, device="cuda")
    checks = ValueChecks(cu_num_draft_tokens=cu, all_greedy=False, all_random=True, flags=flags)
    sampler = RejectionSampler(capture_after=1)
    sampler(*args)
    graph = next(iter(sampler._graphs.values())).graph  # a diagnostic reads the cache
    stages = {
        "validate_host_inputs": lambda: validate_host_inputs(*args, INTENDED),
        "validate_inputs (sync)": lambda: validate_inputs(*args, INTENDED),
        "draw_noise": lambda: draw_noise([drafts] * reqs, VOCAB, meta, device="cuda"),
        "stats partials kernel": lambda: stats_partials(logits, tau, cu, drafts),
        "fused kernels (2)": lambda: fused_kernels(ids, cu, drafts, None, logits, bonus, tau, noise.uniforms, noise.exponentials),
        "fused kernels, checked": lambda: fused_kernels(
            ids, cu, drafts, None, logits, bonus, tau, noise.uniforms, noise.exponentials, checks=checks
        ),
        "eager rejection_sample": lambda: rejection_sample(*args),
        "bare graph replay": graph.replay,
        "RejectionSampler call": lambda: sampler(*args),
    }
    print(f"\n{reqs}x{drafts}:")
    for name, fn in stages.items():
        print(f"  {name:24s} {median_ms(fn, runs=100, warmup=10) * 1e3:9.1f} us")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            graph.replay()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=8, max_name_column_width=50))
    start = time.perf_counter()
    for _ in range(1000):
        _graph_key(*args, INTENDED)
    print(f"  {'graph key (host only)':24s} {(time.perf_counter() - start) * 1e3:9.1f} us")
    for block, warps, race_block, race_warps in ((2048, 4, 2048, 8), (2048, 4, 2048, 4), (2048, 4, 1024, 4),
                                                 (2048, 4, 4096, 8), (4096, 8, 2048, 8)):  # fmt: skip
        ms = median_ms(lambda b=block, w=warps, r=race_block, rw=race_warps: fused_kernels(
            ids, cu, drafts, None, logits, bonus, tau, noise.uniforms, noise.exponentials, block=b, warps=w,
            race_block=r, race_warps=rw,
        ), runs=100, warmup=10)  # fmt: skip
        print(f"  fused kernels, block {block} warps {warps} race block {race_block} warps {race_warps}: {ms * 1e3:9.1f} us")


for shape in ((1, 4), (32, 4), (256, 4), (256, 16)):
    breakdown(*shape)
