"""Where a bf16 decode step of Llama-3-8B shapes spends its GPU time, for both forwards, and where a
1 + 15-row verify step does with the fused forward (diagnostic script, not a test).

python -m benchmarks.gpu.profile_decode [triton]   (from the repository root, on a GPU; ``triton``
profiles only the fused forward, at B = 1, 8, 32 and 128 and the verify step)
"""

import sys

import torch
from torch.profiler import ProfilerActivity, profile

from arctic_ref.model.fused_forward import pack_projections
from arctic_ref.model.llama import forward
from arctic_ref.runner.engine import forward_for
from benchmarks.gpu.test_decode import _cache, _inputs, _static, _step_fn, build_model

base = build_model()
fused = ("triton", pack_projections(base), forward_for("triton"))
only_fused = sys.argv[1:] == ["triton"]
cases = [fused] if only_fused else [("reference", base, forward), fused]
shapes = [(1, 1), (8, 1), (32, 1), (128, 1), (1, 16)] if only_fused else [(1, 1), (8, 1)]
for (name, shard, forward_fn), (requests, rows) in [(case, shape) for case in cases for shape in shapes]:
    step = _step_fn(shard, _cache(shard, requests), _static(_inputs(requests, rows)), forward_fn)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    print(f"{name} B={requests} rows per request={rows}")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=14, max_name_column_width=60))
