"""Where the host time of one eager ``rejection_sample`` call goes (diagnostic script, not a test).

    python -m benchmarks.gpu.profile_rejection_host [B K ...]

Per shape (V = 128,256, τ = 1, as ``benchmarks/test_rejection_gpu.py``): cProfile over 200 calls,
the 25 functions with the most own time, and the kernels' GPU time under torch's profiler; first the host µs of one launch of a one-argument Triton
kernel, for scale.
"""

import cProfile
import pstats
import sys
import time

import torch
import triton
import triton.language as tl
from torch.profiler import ProfilerActivity, profile

from arctic_ref.spec import rejection_sample
from benchmarks.test_rejection_gpu import _inputs


@triton.jit
def _touch(x_ptr):  # type: ignore[no-untyped-def]
    tl.store(x_ptr, tl.load(x_ptr) + 1)


def launch_us(calls: int = 2000) -> float:
    x = torch.zeros(1, device="cuda")
    _touch[(1,)](x)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        _touch[(1,)](x)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def main(argv: list[str]) -> None:
    shapes = [(int(a), int(b)) for a, b in zip(argv[::2], argv[1::2], strict=True)] or [(1, 4), (32, 4)]
    print(f"one-argument Triton launch: {launch_us():.1f} us host")
    for reqs, drafts in shapes:
        args = _inputs(reqs, drafts, False)
        for _ in range(20):
            rejection_sample(*args)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(200):
            rejection_sample(*args)
        profiler.disable()
        print(f"\n{reqs}x{drafts}: cProfile of 200 eager calls")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            for _ in range(20):
                rejection_sample(*args)
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=12, max_name_column_width=40))


if __name__ == "__main__":
    main(sys.argv[1:])
