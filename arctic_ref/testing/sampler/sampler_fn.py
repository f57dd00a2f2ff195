"""What the kit checks: a function with ``rejection_sample``'s argument list, and how route A
injects the randomness it uses."""

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

from torch import Tensor

from arctic_ref.spec.metadata import SamplingMetadata
from arctic_ref.spec.noise import RejectionNoise


class RejectionSampleFn(Protocol):
    """The eight positional parameters of ``rejection_sample`` (vLLM 0.9.x's module function)."""

    def __call__(
        self,
        draft_token_ids: Tensor,
        num_draft_tokens: list[int],
        max_spec_len: int,
        cu_num_draft_tokens: Tensor,
        draft_probs: Tensor | None,
        target_logits: Tensor,
        bonus_token_ids: Tensor,
        sampling_metadata: SamplingMetadata,
    ) -> Tensor: ...


NoiseInjector = Callable[[RejectionNoise], AbstractContextManager[None]]
"""Route A: ``with injector(noise):`` the candidate uses ``noise`` (u and E) instead of drawing its own."""
