"""Trace forcing for speculative-speedup benchmarks (docs/runner.md §7): every target choice is forced
to a recorded trace, so acceptance follows the trace while every forward is real. The forcing is a
logits processor the runner applies right after ``compute_logits``."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch
from jaxtyping import Float, Int
from torch import Tensor

from arctic_ref.types import ReqId


@runtime_checkable
class LogitsProcessor(Protocol):
    """Rewrites the step's logits rows; ``predicts[i]`` is the index (in prompt + output) of the
    token that row i predicts, ``owners[i]`` its request."""

    def __call__(
        self, logits: Float[Tensor, "rows vocab"], owners: Sequence[ReqId], predicts: Int[Tensor, "rows"]
    ) -> Tensor: ...


@dataclass(frozen=True, slots=True)
class TraceForcing:
    """Request r follows ``traces[r]`` (prompt + recorded output): a row predicting token j <
    len(trace) gets logits 0 at ``trace[j]`` and −inf elsewhere; rows past the trace, and requests
    without a trace, are left alone."""

    traces: Mapping[ReqId, tuple[int, ...]]

    def __call__(self, logits: Tensor, owners: Sequence[ReqId], predicts: Tensor) -> Tensor:
        forced = logits.clone()
        for row, (owner, index) in enumerate(zip(owners, predicts.tolist(), strict=True)):
            trace = self.traces.get(owner, ())
            if index < len(trace):
                forced[row] = torch.full_like(logits[row], float("-inf"))
                forced[row, trace[index]] = 0.0
        return forced


def repeated_span_trace(prompt_len: int, output_len: int, vocab: int, seed: int) -> tuple[int, ...]:
    """A seeded synthetic trace with repeated spans (the default replayed trace): random spans of
    8–32 tokens, each repeated a few times, so suffix decoding finds matches."""
    g = torch.Generator().manual_seed(seed)
    tokens: list[int] = []
    while len(tokens) < prompt_len + output_len:
        span = torch.randint(1, vocab, (int(torch.randint(8, 33, (1,), generator=g)),), generator=g).tolist()
        tokens += span * int(torch.randint(1, 4, (1,), generator=g))
    return tuple(tokens[: prompt_len + output_len])
