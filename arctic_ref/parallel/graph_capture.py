"""``capture_graph``: warm up on a side stream, then capture one call as a CUDA graph (docs/parallel.md §4.2)."""

from collections.abc import Callable
from typing import TypeVar

import torch

Out = TypeVar("Out")


def capture_graph(
    fn: Callable[[], Out], device: torch.device, pool: tuple[int, int] | None = None
) -> tuple[torch.cuda.CUDAGraph, Out]:
    """Two warm-up calls on a side stream (allocator, cuBLAS handles, kernel compilation), then one
    captured call; returns the graph and the captured call's output (static buffers, rewritten by
    each replay). Capturing does not advance any generator; the warm-up calls do, as eager calls."""
    side = torch.cuda.Stream(device)  # type: ignore[no-untyped-call]
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, pool=pool):  # type: ignore[arg-type]
        out = fn()
    return graph, out
