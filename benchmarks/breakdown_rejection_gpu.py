"""Where the time of one rejection_sample call goes on the GPU (diagnostic script, not a test).

python -m benchmarks.breakdown_rejection_gpu   (from the repository root, on a GPU)

Per shape (V = 128,256, τ = 1, fp32): each stage eagerly (median of CUDA-event-timed calls), the
whole eager call, one bare graph replay, and the ``RejectionSampler`` call (host checks, replay,
the one read-back, the output copy); then the host clock of each step of that call.
"""

import time
from collections.abc import Callable

import torch
from torch.profiler import ProfilerActivity, profile

from arctic_ref.spec import RejectionSampler, SamplingMetadata, draw_noise, rejection_sample
from arctic_ref.spec.profile import INTENDED
from arctic_ref.spec.rejection import validate_host_inputs, validate_inputs
from arctic_ref.spec.rejection_graph import _graph_key
from arctic_ref.spec.rejection_triton import ValueChecks, fused_kernels, race_chunks, stats_partials
from benchmarks.cuda_timing import median_ms

VOCAB = 128_256
SWEEP = (
    (2048, 4, 2048, 8, None),
    (4096, 8, 2048, 8, None),
    (1024, 4, 2048, 8, None),
    (2048, 4, 1024, 4, None),
    (2048, 4, 2048, 4, None),
    (2048, 4, 1024, 8, None),
    (2048, 4, 4096, 8, None),
    (2048, 4, 1024, 4, 64),
    (2048, 4, 2048, 8, 32),
    (2048, 4, 2048, 8, 8),
)
"""(statistics columns, warps, race columns, warps, race chunks: None for ``race_chunks``) per row."""


def host_timeline(sampler: RejectionSampler, args: tuple, calls: int = 2000) -> None:  # type: ignore[type-arg]
    """Mean host µs of each step of a replayed ``RejectionSampler`` call, as ``__call__`` runs them
    (the synchronisation step holds the wait for the GPU), then of the whole call."""
    captured = next(iter(sampler._graphs.values()))  # a diagnostic reads the cache
    device = args[5].device
    names = ("graph key", "generator", "output take", "replay launch", "current stream", "synchronise", "flags read")
    spent = dict.fromkeys(names, 0.0)
    clock = time.perf_counter
    generator = torch.cuda.default_generators[device.index or 0]
    for _ in range(calls):
        t0 = clock()
        _graph_key(*args, INTENDED)
        tg = clock()
        captured.hand_over(generator)  # as __call__: seed and offset to the slot, the offset advanced
        t1 = clock()
        _, captured.host_values[0] = captured.outputs.take()
        t2 = clock()
        captured.graph.replay()
        t3 = clock()
        stream = sampler._current_stream(device)
        t4 = clock()
        stream.synchronize()
        t5 = clock()
        captured.host_flags.tolist()
        t6 = clock()
        steps = ((t0, tg), (tg, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5), (t5, t6))
        for name, (a, b) in zip(names, steps, strict=True):
            spent[name] += b - a
    start = clock()
    for _ in range(calls):
        sampler(*args)
    whole = clock() - start
    print(
        "  host clock per call: "
        + ", ".join(f"{k} {v / calls * 1e6:.1f}" for k, v in spent.items())
        + f" | sum {sum(spent.values()) / calls * 1e6:.1f}, whole call {whole / calls * 1e6:.1f} us"
    )


def kernel_us(fn: Callable[[], object], calls: int = 20) -> dict[str, float]:
    """Mean GPU µs per call of each kernel ``fn`` launches (under the profiler, after a warm-up)."""
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return {e.key: e.self_device_time_total / calls for e in prof.key_averages() if e.self_device_time_total > 0}


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
    captured = next(iter(sampler._graphs.values()))  # a diagnostic reads the cache
    sink = torch.empty(captured.outputs.shape, dtype=torch.int32, device="cuda")

    def bare_replay() -> None:
        captured.host_values[0] = sink.data_ptr()  # a replay writes where the slot points: a live tensor
        captured.graph.replay()

    stages = {
        "validate_host_inputs": lambda: validate_host_inputs(*args, INTENDED),
        "validate_inputs (sync)": lambda: validate_inputs(*args, INTENDED),
        "draw_noise": lambda: draw_noise([drafts] * reqs, VOCAB, meta, device="cuda"),
        "stats partials kernel": lambda: stats_partials(logits, tau, cu, drafts),
        "fused kernels (2)": lambda: fused_kernels(
            ids, cu, drafts, None, logits, bonus, tau, noise.uniforms, noise.exponentials
        ),
        "fused kernels, checked": lambda: fused_kernels(
            ids, cu, drafts, None, logits, bonus, tau, noise.uniforms, noise.exponentials, checks=checks
        ),
        "eager rejection_sample": lambda: rejection_sample(*args),
        "bare graph replay": bare_replay,
        "RejectionSampler call": lambda: sampler(*args),
    }
    print(f"\n{reqs}x{drafts}:")
    for name, fn in stages.items():
        print(f"  {name:24s} {median_ms(fn, runs=100, warmup=10) * 1e3:9.1f} us")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            bare_replay()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=8, max_name_column_width=50))
    host_timeline(sampler, args)  # its first step is the graph key
    for block, warps, race_block, race_warps, chunks in SWEEP:
        times = kernel_us(
            lambda b=block, w=warps, r=race_block, rw=race_warps, c=chunks: fused_kernels(
                ids,
                cu,
                drafts,
                None,
                logits,
                bonus,
                tau,
                noise.uniforms,
                noise.exponentials,
                block=b,
                warps=w,
                race_block=r,
                race_warps=rw,
                race_chunk_count=c,
            )
        )
        stats, race = times.get("_stats_verify_kernel", 0.0), times.get("_race_finish_kernel", 0.0)
        print(
            f"  stats {block} x {warps} warps: {stats:6.1f} us | race {race_block} x {race_warps} warps, "
            f"{chunks or race_chunks(reqs)} chunks: {race:6.1f} us"
        )


for shape in ((1, 4), (8, 4), (32, 4), (256, 4), (256, 16)):
    breakdown(*shape)
