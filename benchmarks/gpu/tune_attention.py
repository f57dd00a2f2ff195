"""Times ``decode_attention`` tilings (None: the default, ``attention_tiling``) at Llama-3-8B head shapes (bf16, context 1056) for a decode
row, verify steps of 8 and 16 rows and 8, 32 and 128 decode requests (diagnostic script, not a test).

python -m benchmarks.gpu.tune_attention   (from the repository root, on a GPU)
"""

from functools import partial

import torch

from arctic_ref.model.attention import BatchedAttention
from arctic_ref.model.kv_cache import BLOCK_SIZE, KVCache
from arctic_ref.model.layers import rope_tables
from arctic_ref.model.triton_ops import decode_attention
from benchmarks.cuda_timing import median_ms

CUDA = torch.device("cuda")
CONTEXT, HEADS, KV_HEADS, D = 1056, 32, 8, 128
cache = KVCache.allocate(
    layers=1,
    num_blocks=128 * CONTEXT // BLOCK_SIZE + 1,
    heads=KV_HEADS,
    head_dim=D,
    dtype=torch.bfloat16,
    device=CUDA,
    fill=0.0,
)
cache.keys[0].normal_()
cache.values[0].normal_()
CASES = (
    ("decode B=1", 1, 1),
    ("verify 1+7", 1, 8),
    ("verify 1+15", 1, 16),
    ("decode B=8", 8, 1),
    ("decode B=32", 32, 1),
    ("decode B=128", 128, 1),
)
for name, requests, per in CASES:
    rows = requests * per
    owner = torch.arange(rows, device=CUDA) // per
    slots = (owner[:, None] * CONTEXT + BLOCK_SIZE + torch.arange(CONTEXT, device=CUDA)[None, :]).contiguous()
    positions = 1024 + torch.arange(rows, device=CUDA) % per
    meta = BatchedAttention(context_slots=slots, real=torch.ones(rows, dtype=torch.bool, device=CUDA))
    cos, sin = rope_tables(positions, D, 500_000.0, torch.bfloat16)
    q = torch.randn(rows, HEADS, D, device=CUDA).to(torch.bfloat16)
    kv_bytes = requests * CONTEXT * KV_HEADS * D * 2 * 2
    for tiling in (
        None,
        (64, 64, 4),
        (128, 64, 4),
        (256, 64, 4),
        (64, 32, 4),
        (128, 128, 4),
        (64, 64, 8),
        (2048, 64, 4),
    ):
        call = partial(
            decode_attention, q, cos, sin, positions, slots, meta.real, cache.keys[0], cache.values[0], tiling=tiling
        )
        call()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(32):  # one per layer, as in a step
                call()
        us = median_ms(graph.replay, runs=30, warmup=3) * 1e3 / 32
        print(f"{name}: tiling {tiling}: {us:.2f} us per layer ({kv_bytes / (us * 1e-6) / 1e12:.2f} TB/s of KV)")
