"""Where a bf16 decode step of Llama-3-8B shapes spends its GPU time, for both forwards (diagnostic
script, not a test).

python -m benchmarks.gpu.profile_decode   (from the repository root, on a GPU)
"""

import torch
from torch.profiler import ProfilerActivity, profile

from arctic_ref.model.fused_forward import pack_projections
from arctic_ref.model.llama import forward
from arctic_ref.runner.engine import forward_for
from benchmarks.gpu.test_decode import _cache, _inputs, _static, _step_fn, build_model

base = build_model()
cases = [("reference", base, forward), ("triton", pack_projections(base), forward_for("triton"))]
for (name, shard, forward_fn), requests in [(case, b) for case in cases for b in (1, 8)]:
    step = _step_fn(shard, _cache(shard, requests), _static(_inputs(requests, 1)), forward_fn)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    print(f"{name} B={requests}")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=18, max_name_column_width=70))
