"""Where the time of one fused rejection_sample call goes on the GPU (diagnostic script, not a test).

python -m benchmarks.breakdown_rejection_gpu   (from the repository root, on a GPU)
"""

import torch

from arctic_ref.spec import SamplingMetadata, draw_noise, rejection_sample, rejection_sample_with_noise
from arctic_ref.spec.profile import INTENDED
from arctic_ref.spec.rejection import validate_inputs
from arctic_ref.spec.rejection_triton import fused_rejection_sample, row_stats
from benchmarks.cuda_timing import median_ms

reqs, vocab, drafts = 256, 128_256, 4
total = reqs * drafts
logits = torch.randn(total, vocab, device="cuda") * 4
ids = logits.argmax(1)
meta = SamplingMetadata(temperature=torch.ones(reqs, device="cuda"), all_greedy=False, all_random=True)
cu = torch.arange(1, reqs + 1, device="cuda") * drafts
bonus = torch.zeros(reqs, 1, dtype=torch.int64, device="cuda")
args = (ids, [drafts] * reqs, drafts, cu, None, logits, bonus, meta)
tau = torch.ones(total, device="cuda")
noise = draw_noise([drafts] * reqs, vocab, meta, device="cuda")
print(f"validate_inputs      {median_ms(lambda: validate_inputs(*args, INTENDED)):.3f} ms")
print(f"draw_noise           {median_ms(lambda: draw_noise([drafts] * reqs, vocab, meta, device='cuda')):.3f} ms")
print(f"row_stats kernel     {median_ms(lambda: row_stats(logits, tau, ids)):.3f} ms")
print(
    f"fused kernels (3)    {median_ms(lambda: fused_rejection_sample(ids, cu, drafts, None, logits, bonus, meta.temperature, noise.uniforms, noise.exponentials)):.3f} ms"
)
print(f"with_noise (fused)   {median_ms(lambda: rejection_sample_with_noise(*args, noise)):.3f} ms")
print(f"rejection_sample     {median_ms(lambda: rejection_sample(*args)):.3f} ms")
e = torch.empty(reqs * 4, vocab, device="cuda").exponential_()
print("zeros in 131M CUDA exponentials:", int((e == 0).sum()), "min", float(e.min()))


# Kernel configurations (block, warps, chunks, race_block) of the fused path, same inputs.
def configured(block: int, warps: int, chunks: int, race_block: int) -> object:
    return fused_rejection_sample(
        ids, cu, drafts, None, logits, bonus, meta.temperature, noise.uniforms, noise.exponentials,
        block=block, warps=warps, chunks=chunks, race_block=race_block,
    )  # fmt: skip


CONFIGS = [(4096, 8, 16, 2048), (2048, 4, 16, 2048), (8192, 8, 16, 2048), (2048, 8, 8, 4096), (8192, 8, 8, 4096)]
timings: dict[tuple[int, int, int, int], list[float]] = {config: [] for config in CONFIGS}
for _ in range(3):  # interleaved rounds: clock and thermal drift hit every configuration alike
    for config in CONFIGS:
        timings[config].append(median_ms(lambda config=config: configured(*config)))  # type: ignore[misc]
for config, ms in timings.items():
    block, warps, chunks, race_block = config
    print(f"block {block:5d} warps {warps:2d} chunks {chunks:2d} race_block {race_block:5d}: "
          + " ".join(f"{t:.3f}" for t in ms) + " ms")  # fmt: skip
