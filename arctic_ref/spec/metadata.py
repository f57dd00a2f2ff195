"""``SamplingMetadata`` (what the sampler needs of each request) and ``SpecDecodeMetadata`` (where
the drafts and their logits rows are in a scheduled batch; docs/verification.md §1.2, §3)."""

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from jaxtyping import Int
from torch import Tensor

from arctic_ref.spec.profile import GREEDY_EPS


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplingMetadata:
    """Per-request sampling parameters of a batch (the subset of vLLM's that verification reads).

    A request is *greedy* iff its temperature is below ``GREEDY_EPS`` (any value: −1 as vLLM 0.9.x
    writes, 0 as vLLM ≥ 0.11.1 writes); every request is greedy when ``temperature`` is None.
    """

    temperature: Tensor | None
    """[num_reqs] float32, or None when every request is greedy."""
    all_greedy: bool
    all_random: bool
    top_k: Tensor | None = None
    """[num_reqs] int in [1, V] (V: no-op), or None."""
    top_p: Tensor | None = None
    """[num_reqs] float32 in (0, 1] (1: no-op), or None."""
    generators: dict[int, torch.Generator] = field(default_factory=dict)
    """Per-request generators of seeded random requests (by batch row)."""

    def is_greedy(self, num_reqs: int, device: torch.device) -> Tensor:
        """[num_reqs] bool; derived, never stored."""
        if self.temperature is None:
            return torch.ones(num_reqs, dtype=torch.bool, device=device)
        return self.temperature.to(torch.float32) < GREEDY_EPS


def _int32(values: Sequence[int] | Tensor, device: torch.device | str) -> Tensor:
    return torch.as_tensor(values, dtype=torch.int32, device=device)


@dataclass(frozen=True, slots=True, kw_only=True)
class SpecDecodeMetadata:
    """vLLM's ``SpecDecodeMetadata``: with sᵢ = nᵢ + 1 scheduled rows verified per request, the
    compact logits hold Σsᵢ rows; request i's first nᵢ rows verify its drafts, its last gives the
    bonus token."""

    draft_token_ids: Int[Tensor, "num_tokens"]
    num_draft_tokens: list[int]
    cu_num_draft_tokens: Int[Tensor, "num_reqs"]
    target_logits_indices: Int[Tensor, "num_tokens"]
    bonus_logits_indices: Int[Tensor, "num_reqs"]
    logits_indices: Int[Tensor, "num_logits"]

    @property
    def max_spec_len(self) -> int:
        return max(self.num_draft_tokens)

    @classmethod
    def build(
        cls,
        num_draft_tokens: Sequence[int],
        cu_num_scheduled_tokens: Sequence[int],
        input_ids: Tensor,
        device: torch.device | str = "cpu",
    ) -> "SpecDecodeMetadata":
        """As vLLM's ``GPUModelRunner._calc_spec_decode_metadata``: request i scheduled
        ``[last_emitted, d₁ … dₙ]`` as the last nᵢ + 1 of its tokens."""
        drafts = [int(n) for n in num_draft_tokens]
        cu_scheduled = [int(c) for c in cu_num_scheduled_tokens]
        if not drafts:
            raise ValueError("num_draft_tokens is empty: a batch has at least one request")
        if len(cu_scheduled) != len(drafts):
            raise ValueError(
                f"len(cu_num_scheduled_tokens)({len(cu_scheduled)}) != len(num_draft_tokens)({len(drafts)})"
            )
        scheduled = [c - p for c, p in zip(cu_scheduled, [0, *cu_scheduled[:-1]], strict=True)]
        for i, (n, s) in enumerate(zip(drafts, scheduled, strict=True)):
            if n < 0 or s < n + 1:
                raise ValueError(f"request {i}: {s} scheduled tokens cannot carry {n} drafts plus the verified token")
        if cu_scheduled[-1] > input_ids.shape[0]:
            raise ValueError(
                f"cu_num_scheduled_tokens ends at {cu_scheduled[-1]} but input_ids has {input_ids.shape[0]}"
            )
        logits_indices = [c - (n + 1) + j for c, n in zip(cu_scheduled, drafts, strict=True) for j in range(n + 1)]
        sample_cum = 0
        target: list[int] = []
        bonus: list[int] = []
        cu_drafts: list[int] = []
        for n in drafts:
            target.extend(sample_cum + j for j in range(n))
            sample_cum += n + 1
            bonus.append(sample_cum - 1)
            cu_drafts.append((cu_drafts[-1] if cu_drafts else 0) + n)
        draft_rows = [logits_indices[t + 1] for t in target]
        ids = input_ids.to(device)
        return cls(
            draft_token_ids=ids[_int32(draft_rows, device).long()].to(torch.int32),
            num_draft_tokens=drafts,
            cu_num_draft_tokens=_int32(cu_drafts, device),
            target_logits_indices=_int32(target, device),
            bonus_logits_indices=_int32(bonus, device),
            logits_indices=_int32(logits_indices, device),
        )

    @classmethod
    def from_drafts(cls, drafts: Sequence[Sequence[int]], device: torch.device | str = "cpu") -> "SpecDecodeMetadata":
        """Each request scheduled exactly its verified token and its drafts (placeholder 0 for the
        verified token's id)."""
        counts = [len(d) for d in drafts]
        input_ids = [t for d in drafts for t in (0, *d)]
        cumulative, total = [], 0
        for n in counts:
            total += n + 1
            cumulative.append(total)
        return cls.build(counts, cumulative, torch.tensor(input_ids, dtype=torch.int64), device)

    @classmethod
    def make_dummy(
        cls, draft_token_ids: Sequence[Sequence[int]], device: torch.device | str = "cpu"
    ) -> "SpecDecodeMetadata":
        """vLLM parity: real drafts and counts, zero indices (for warm-up and graph capture)."""
        counts = [len(d) for d in draft_token_ids]
        if not counts:
            raise ValueError("make_dummy needs at least one request")
        flat = [t for d in draft_token_ids for t in d]
        total = sum(counts)
        cumulative = torch.cumsum(torch.tensor(counts, dtype=torch.int64), 0)
        return cls(
            draft_token_ids=_int32(flat, device),
            num_draft_tokens=counts,
            cu_num_draft_tokens=cumulative.to(device=device, dtype=torch.int32),
            target_logits_indices=torch.zeros(total, dtype=torch.int32, device=device),
            bonus_logits_indices=torch.zeros(len(counts), dtype=torch.int32, device=device),
            logits_indices=torch.zeros(total + len(counts), dtype=torch.int32, device=device),
        )
