"""Where a bf16 decode step of Llama-3-8B shapes spends its GPU time (diagnostic script, not a test).

python -m benchmarks.gpu.profile_decode   (from the repository root, on a GPU)
"""

import torch
from torch.profiler import ProfilerActivity, profile

from benchmarks.gpu.test_decode import _cache, _inputs, _static, _step_fn, build_model

shard = build_model()
for requests in (1, 8):
    step = _step_fn(shard, _cache(shard, requests), _static(_inputs(requests, 1)))
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    print(f"B={requests}")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=18, max_name_column_width=70))
