"""Times a Triton GEMV/skinny GEMM (y = x·Wᵀ, bf16, float32 accumulation) against torch's matmul at
Llama-3-8B projection shapes for M = 1 and 16 rows (diagnostic script, not a test).

python -m benchmarks.gpu.tune_gemv   (from the repository root, on a GPU)
"""

import itertools

import torch
import triton
import triton.language as tl

from benchmarks.cuda_timing import median_ms

CUDA = torch.device("cuda")
SHAPES = {"qkv": (6144, 4096), "o": (4096, 4096), "gate_up": (28672, 4096), "down": (4096, 14336)}
LAYERS = 32  # one weight per layer, as a step reads them (nothing stays in L2)


@triton.jit
def _skinny_kernel(  # type: ignore[no-untyped-def]
    x_ptr, w_ptr, y_ptr, rows, n_out, k_in, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr
):
    n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    m = tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for k0 in range(0, k_in, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + m[:, None] * k_in + k[None, :], mask=m[:, None] < rows, other=0.0)
        w = tl.load(w_ptr + n[:, None] * k_in + k[None, :])
        acc += tl.dot(x, tl.trans(w))
    tl.store(y_ptr + m[:, None] * n_out + n[None, :], acc.to(y_ptr.dtype.element_ty), mask=m[:, None] < rows)


def skinny(
    x: torch.Tensor, w: torch.Tensor, y: torch.Tensor, block_n: int, block_k: int, warps: int, stages: int
) -> None:
    rows, k_in = x.shape
    n_out = w.shape[0]
    _skinny_kernel[(n_out // block_n,)](
        x, w, y, rows, n_out, k_in, BLOCK_M=16, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=warps, num_stages=stages
    )


def graphed(fn) -> torch.cuda.CUDAGraph:  # type: ignore[no-untyped-def]
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


def replay_us(
    weights: list[torch.Tensor], ys: list[torch.Tensor], x: torch.Tensor, config: tuple[int, ...] | None
) -> float:
    """µs per layer of one graph that multiplies x by every layer's weight (torch's matmul, or the
    Triton kernel with ``config``)."""

    def run() -> None:
        for w, y in zip(weights, ys, strict=True):
            if config is None:
                torch.matmul(x, w.T, out=y)
            else:
                skinny(x, w, y, *config)

    return median_ms(graphed(run).replay, runs=20, warmup=3) * 1e3 / len(weights)


def measure(name: str, n_out: int, k_in: int) -> None:
    weights = [torch.randn(n_out, k_in, device=CUDA, dtype=torch.bfloat16) for _ in range(LAYERS)]
    per_layer = n_out * k_in * 2
    for rows in (1, 16):
        x = torch.randn(rows, k_in, device=CUDA, dtype=torch.bfloat16)
        ys = [torch.empty(rows, n_out, device=CUDA, dtype=torch.bfloat16) for _ in range(LAYERS)]
        reference = [x @ w.T for w in weights]
        torch_us = replay_us(weights, ys, x, None)
        best: tuple[float, tuple[object, ...]] = (float("inf"), ())
        for config in itertools.product((16, 32, 64), (128, 256), (4, 8), (3, 5)):
            if n_out % config[0] or k_in % config[1]:
                continue
            try:
                us = replay_us(weights, ys, x, config)
            except Exception as error:  # a config that does not compile (shared memory)
                print(f"  {name} M={rows} {config} failed: {type(error).__name__}")
                continue
            worst = max(float((y.float() - r.float()).abs().max()) for y, r in zip(ys, reference, strict=True))
            if us < best[0]:
                best = (us, (*config, worst))
        print(
            f"{name} {n_out}x{k_in} M={rows}: torch {torch_us:.1f} us ({per_layer / torch_us / 1e6:.2f} TB/s); "
            f"triton best {best[0]:.1f} us ({per_layer / best[0] / 1e6:.2f} TB/s) at (BN, BK, warps, stages, "
            f"max|dy|) {best[1]}"
        )


for shape_name, (n, k) in SHAPES.items():
    measure(shape_name, n, k)
