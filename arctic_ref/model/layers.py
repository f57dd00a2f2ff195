"""The Llama layer math as free functions, mirroring transformers' float32 islands (docs/runner.md §3.1)."""

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor


def rms_norm(
    x: Float[Tensor, "rows hidden"], weight: Float[Tensor, "hidden"], eps: float
) -> Float[Tensor, "rows hidden"]:
    """float32 inside, weight product in the model dtype (transformers ``LlamaRMSNorm``)."""
    xf = x.to(torch.float32)
    normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return weight * normed.to(x.dtype)


def rope_tables(
    positions: Int[Tensor, "rows"], head_dim: int, theta: float, dtype: torch.dtype
) -> tuple[Float[Tensor, "rows head_dim"], Float[Tensor, "rows head_dim"]]:
    """cos, sin: inv = 1/θ^(arange(0, d, 2)/d), angles in float32, then cast."""
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=positions.device) / head_dim))
    angles = positions.to(torch.float32)[:, None] * inv
    both = torch.cat((angles, angles), dim=-1)
    return both.cos().to(dtype), both.sin().to(dtype)


def apply_rope(
    x: Float[Tensor, "rows heads head_dim"], cos: Float[Tensor, "rows head_dim"], sin: Float[Tensor, "rows head_dim"]
) -> Float[Tensor, "rows heads head_dim"]:
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos[:, None, :] + rotated * sin[:, None, :]


def swiglu(x: Float[Tensor, "rows hidden"], gate: Tensor, up: Tensor, down: Tensor) -> Float[Tensor, "rows hidden"]:
    """down(silu(gate·x)·up·x) on this rank's shard (partial sums under TP)."""
    return (F.silu(x @ gate.T) * (x @ up.T)) @ down.T
