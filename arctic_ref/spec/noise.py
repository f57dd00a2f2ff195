"""``RejectionNoise`` and ``draw_noise``: all the randomness of one ``rejection_sample`` call, drawn
in vLLM's order so per-request generators advance exactly as vLLM's do (docs/verification.md §2.1)."""

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from jaxtyping import Float
from torch import Tensor

from arctic_ref.spec.metadata import SamplingMetadata
from arctic_ref.spec.profile import INTENDED, SamplerProfile


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectionNoise:
    """u: one uniform per draft row (acceptance); E: one Exp(1) row per request (the recovered
    token's exponential race, shared by all positions of the request)."""

    uniforms: Float[Tensor, "num_tokens"]
    exponentials: Float[Tensor, "num_reqs vocab"]

    @classmethod
    def drawn(cls, uniforms: Tensor, exponentials: Tensor) -> "RejectionNoise":
        """Noise fresh from torch's generators: in range by construction, so not re-scanned (a
        full pass over the [B, V] exponentials and a device sync saved on every call)."""
        noise = object.__new__(cls)
        object.__setattr__(noise, "uniforms", uniforms)
        object.__setattr__(noise, "exponentials", exponentials)
        return noise

    def __post_init__(self) -> None:
        u, e = self.uniforms, self.exponentials
        if u.ndim != 1 or e.ndim != 2:
            raise ValueError(f"uniforms must be [T] and exponentials [B, V], got {tuple(u.shape)} and {tuple(e.shape)}")
        if e.dtype != torch.float32:
            raise ValueError(f"exponentials must be float32, got {e.dtype}")
        bad = torch.stack([((u < 0) | (u >= 1)).any(), ((e <= 0) | ~torch.isfinite(e)).any()]).tolist()
        if bad[0]:
            raise ValueError(f"uniforms must lie in [0, 1), got min {u.min().item()} max {u.max().item()}")
        if bad[1]:
            raise ValueError(f"exponentials must lie in (0, inf), got min {e.min().item()} max {e.max().item()}")


def draw_noise(
    num_draft_tokens: Sequence[int],
    vocab_size: int,
    sampling_metadata: SamplingMetadata,
    *,
    profile: SamplerProfile = INTENDED,
    device: torch.device | str = "cpu",
    exponential_stream: torch.cuda.Stream | None = None,
) -> RejectionNoise | None:
    """N1 global uniforms, N2 per-generator uniforms (ascending request), N3 global exponentials,
    N4 per-generator exponential rows (generator insertion order). Nothing when all rows are greedy;
    a seeded request consumes exactly nᵢ uniforms then V exponentials, and only if it is random
    with nᵢ > 0.

    With ``exponential_stream`` (a CUDA stream of ``device``), N3 and N4 run on that stream, after
    the work queued so far on the current one, so they overlap what the caller queues next; the
    caller makes its stream wait for ``exponential_stream`` before reading them. Generators hand
    out their offsets as the draws are issued, so the values are the same on either stream."""
    num_reqs = len(num_draft_tokens)
    if sampling_metadata.all_greedy:
        return None
    greedy = [False] * num_reqs
    if sampling_metadata.generators and not sampling_metadata.all_random:
        greedy = sampling_metadata.is_greedy(num_reqs, torch.device(device)).tolist()
    total = sum(num_draft_tokens)
    uniforms = torch.rand(total, dtype=profile.uniform_dtype, device=device)
    start = 0
    for i, n in enumerate(num_draft_tokens):
        generator = sampling_metadata.generators.get(i)
        if generator is not None and not greedy[i] and n > 0:
            uniforms[start : start + n].uniform_(generator=generator)
        start += n
    exponentials = torch.empty(num_reqs, vocab_size, dtype=torch.float32, device=device)
    if exponential_stream is not None:
        exponential_stream.wait_stream(torch.cuda.current_stream(exponentials.device))
    with torch.cuda.stream(exponential_stream):  # no-op for None
        exponentials.exponential_()
        for i, generator in sampling_metadata.generators.items():
            if 0 <= i < num_reqs and not greedy[i] and num_draft_tokens[i] > 0:
                exponentials[i].exponential_(generator=generator)
    return RejectionNoise.drawn(uniforms, exponentials)
