"""Graph-replay times of the fused bf16 decode step (Llama-3-8B shapes, context 1024) for whichever
``arctic_ref`` is first on the path: B = 1, B = 8 and a 1 + 15-row verify, three medians of 30
replays each, and B = 1 and B = 8 over the floor (``test_decode``'s). For an A/B of two trees on one
GPU, run it once per tree, alternating, in separate processes, each from its tree's root (``-m``
puts the working directory first on the path; diagnostic script, not a test):

    mkdir /tmp/old && git archive <base> arctic_ref benchmarks | tar -x -C /tmp/old
    cp benchmarks/gpu/ab_decode.py /tmp/old/benchmarks/gpu/  # if <base> predates it
    for i in 1 2; do (cd /tmp/old && PYTHONPATH=$PWD python -m benchmarks.gpu.ab_decode old)
                     PYTHONPATH=$PWD python -m benchmarks.gpu.ab_decode new; done

Each line names the ``arctic_ref`` it imported, so a mix-up shows.
"""

import statistics
import sys
from typing import Any

import torch

import arctic_ref
from arctic_ref.model.fused_forward import pack_projections
from arctic_ref.runner.engine import forward_for
from benchmarks.cuda_timing import median_ms
from benchmarks.gpu.test_decode import _bandwidth, _cache, _floor_ms, _graph, _inputs, _static, _step_fn, build_model

SHAPES = {"B1": (1, 1), "B8": (8, 1), "V16": (1, 16)}  # name: (requests, rows per request)

tag = sys.argv[1] if len(sys.argv) > 1 else "tree"
model = pack_projections(build_model())
forward_fn = forward_for("triton")
steps: dict[str, Any] = {}  # each step holds its cache and inputs alive for its graph
graphs: dict[str, torch.cuda.CUDAGraph] = {}
for name, (requests, rows) in SHAPES.items():
    steps[name] = _step_fn(model, _cache(model, requests), _static(_inputs(requests, rows)), forward_fn)
    graphs[name] = _graph(steps[name])
times: dict[str, list[float]] = {name: [] for name in graphs}
for _ in range(3):
    for name, graph in graphs.items():
        times[name].append(median_ms(graph.replay, runs=30, warmup=3))
bandwidth = _bandwidth()
floors = {"B1": _floor_ms(model, 1, bandwidth)[1], "B8": _floor_ms(model, 8, bandwidth)[1]}
medians = {name: statistics.median(values) for name, values in times.items()}
print(
    f"{tag} ({arctic_ref.__file__}): copy {bandwidth / 1e12:.3f} TB/s | "
    + " ".join(f"{name} {medians[name]:.4f} ms ({'/'.join(f'{t:.4f}' for t in v)})" for name, v in times.items())
    + " | "
    + " ".join(f"{name}/floor {medians[name] / floor:.4f}" for name, floor in floors.items())
)
