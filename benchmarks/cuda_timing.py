"""``median_ms``: the GPU timing used by the benchmarks and the breakdown script."""

import statistics
from collections.abc import Callable

import torch


def median_ms(fn: Callable[[], object], runs: int = 50, warmup: int = 5) -> float:
    """Median milliseconds of synchronised runs after warm-up, timed with CUDA events."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)
