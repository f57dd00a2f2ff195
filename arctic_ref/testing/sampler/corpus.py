"""Seeded inputs for rejection-sampler checks: ``RejectionCase`` and ``random_case``.

Cases mix greedy and random rows, ties and −inf in the logits, τ ∈ {greedy, 0.5, 1, 2}, optional
top-k/top-p and draft probabilities with zeros, B ≤ 8, nᵢ ≤ 8, V ≤ 64 (docs/verification.md §5.1).
No case ties at its top-p boundary: docs/verification.md §1.4 leaves the order of tied values there to
the backend's sort, so exact tests never place ties there (``top_p_boundary_tied``).
"""

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from arctic_ref.spec.metadata import SamplingMetadata
from arctic_ref.spec.noise import RejectionNoise
from arctic_ref.spec.profile import SamplerProfile
from arctic_ref.spec.sampling import apply_temperature, apply_top_k

TOP_P_CHOICES = (0.3, 0.8, 1.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectionCase:
    """The eight arguments of ``rejection_sample``."""

    draft_token_ids: Tensor
    num_draft_tokens: list[int]
    max_spec_len: int
    cu_num_draft_tokens: Tensor
    draft_probs: Tensor | None
    target_logits: Tensor
    bonus_token_ids: Tensor
    sampling_metadata: SamplingMetadata

    def args(self) -> tuple[Tensor, list[int], int, Tensor, Tensor | None, Tensor, Tensor, SamplingMetadata]:
        """Fresh copies of every argument (a sampler may not mutate them, but a bad one might)."""
        meta = self.sampling_metadata
        return (
            self.draft_token_ids.clone(),
            list(self.num_draft_tokens),
            self.max_spec_len,
            self.cu_num_draft_tokens.clone(),
            None if self.draft_probs is None else self.draft_probs.clone(),
            self.target_logits.clone(),
            self.bonus_token_ids.clone(),
            replace(meta, generators={i: _clone(g) for i, g in meta.generators.items()}),
        )

    @property
    def vocab(self) -> int:
        return int(self.target_logits.shape[1])

    @property
    def greedy(self) -> list[bool]:
        return [
            bool(g) for g in self.sampling_metadata.is_greedy(len(self.num_draft_tokens), torch.device("cpu")).tolist()
        ]


def _clone(generator: torch.Generator) -> torch.Generator:
    copy = torch.Generator(device=generator.device)
    copy.set_state(generator.get_state())
    return copy


def clone_generators(meta: SamplingMetadata) -> SamplingMetadata:
    return replace(meta, generators={i: _clone(g) for i, g in meta.generators.items()})


def make_metadata(
    temperatures: Sequence[float | None],
    *,
    greedy_temperature: float = 0.0,
    top_k: Sequence[int] | None = None,
    top_p: Sequence[float] | None = None,
    generators: dict[int, torch.Generator] | None = None,
) -> SamplingMetadata:
    """Metadata from per-request temperatures (None = greedy, written as ``greedy_temperature``)."""
    greedy = [t is None for t in temperatures]
    values = [greedy_temperature if t is None else t for t in temperatures]
    return SamplingMetadata(
        temperature=None if all(greedy) and greedy_temperature is None else torch.tensor(values, dtype=torch.float32),
        all_greedy=all(greedy),
        all_random=not any(greedy),
        top_k=None if top_k is None else torch.tensor(top_k, dtype=torch.int64),
        top_p=None if top_p is None else torch.tensor(top_p, dtype=torch.float32),
        generators=generators or {},
    )


def random_case(
    rng: random.Random, *, greedy_temperature: float = 0.0, seeded: bool = False, max_reqs: int = 8, max_vocab: int = 64
) -> RejectionCase:
    """One case; ``seeded`` gives every random request its own generator (route B of the kit)."""
    num_reqs = rng.randint(1, max_reqs)
    vocab = rng.randint(2, max_vocab)
    counts = [rng.randint(0, 8) for _ in range(num_reqs)]
    total = sum(counts)
    torch_rng = torch.Generator().manual_seed(rng.randrange(2**31))
    logits = torch.round(torch.randn(total, vocab, generator=torch_rng) * 4) / 2  # many ties
    if rng.random() < 0.4 and total:
        cut = torch.rand(total, vocab, generator=torch_rng) < 0.3
        cut[torch.arange(total), torch.randint(0, vocab, (total,), generator=torch_rng)] = False
        logits = logits.masked_fill(cut, float("-inf"))
    temperatures: list[float | None] = [rng.choice([None, 0.5, 1.0, 2.0]) for _ in range(num_reqs)]
    top_k = [rng.randint(1, vocab) for _ in range(num_reqs)] if rng.random() < 0.4 else None
    top_p = [rng.choice(TOP_P_CHOICES) for _ in range(num_reqs)] if rng.random() < 0.4 else None
    drafts = torch.randint(0, vocab, (total,), generator=torch_rng)
    if total and rng.random() < 0.5:  # many drafts at the argmax, so greedy rows accept runs
        argmax = logits.argmax(dim=1)
        pick = torch.rand(total, generator=torch_rng) < 0.7
        drafts = torch.where(pick, argmax, drafts)
    draft_probs = None
    if rng.random() < 0.4:
        draft_probs = torch.softmax(torch.randn(total, vocab, generator=torch_rng) * 2, dim=1)
        if total and rng.random() < 0.5:
            draft_probs = draft_probs.masked_fill(torch.rand(total, vocab, generator=torch_rng) < 0.3, 0.0)
    if top_p is not None:
        top_p = _untied_top_p(logits, counts, temperatures, top_k, top_p)
    generators = {}
    if seeded:
        generators = {
            i: torch.Generator().manual_seed(rng.randrange(2**31)) for i, t in enumerate(temperatures) if t is not None
        }
    return RejectionCase(
        draft_token_ids=drafts.to(torch.int64),
        num_draft_tokens=counts,
        max_spec_len=max(max(counts), 1) + rng.choice([0, 0, 1, 3]),
        cu_num_draft_tokens=torch.tensor(counts, dtype=torch.int64).cumsum(0),
        draft_probs=draft_probs,
        target_logits=logits,
        bonus_token_ids=torch.randint(0, vocab, (num_reqs, 1), generator=torch_rng),
        sampling_metadata=make_metadata(
            temperatures, greedy_temperature=greedy_temperature, top_k=top_k, top_p=top_p, generators=generators
        ),
    )


def random_noise(case: RejectionCase, profile: SamplerProfile, rng: random.Random) -> RejectionNoise | None:
    """Fresh injected noise for a case (None when every row is greedy)."""
    if case.sampling_metadata.all_greedy:
        return None
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    total, num_reqs = sum(case.num_draft_tokens), len(case.num_draft_tokens)
    return RejectionNoise(
        uniforms=torch.rand(total, dtype=profile.uniform_dtype, generator=g),
        exponentials=torch.empty(num_reqs, case.vocab, dtype=torch.float32).exponential_(generator=g),
    )


def top_p_boundary_tied(rows: Tensor, temperature: float, top_k: int | None, top_p: float) -> bool:
    """Whether top-p's cut (docs/verification.md §1.4 step 4, after temperature and top-k) falls inside a
    run of equal values in any of ``rows``: some copies of a value masked, others kept, so which
    token survives depends on the order the sort gives equal values."""
    if not len(rows):
        return False
    x = apply_temperature(rows.to(torch.float32), torch.full((len(rows),), temperature, dtype=torch.float32))
    if top_k is not None:
        x = apply_top_k(x, torch.full((len(rows),), top_k, dtype=torch.int64))
    ordered = x.sort(dim=-1).values
    cumulative = ordered.softmax(dim=-1).cumsum(dim=-1)
    masked = (cumulative <= torch.tensor(1 - top_p, dtype=torch.float32)).sum(dim=-1).clamp(max=x.shape[-1] - 1)
    for row, m in zip(ordered, masked.tolist(), strict=True):
        if m > 0 and torch.isfinite(row[m]) and row[m - 1] == row[m]:
            return True
    return False


def _untied_top_p(
    logits: Tensor,
    counts: list[int],
    temperatures: list[float | None],
    top_k: list[int] | None,
    top_p: list[float],
) -> list[float]:
    """Each request's top-p, moved to the first of ``TOP_P_CHOICES`` (1.0 cuts nothing finite) whose
    boundary ties none of its rows (greedy rows too: the vLLM profile's greedy argmax reads p at τ = 1)."""
    starts = [0, *[sum(counts[: i + 1]) for i in range(len(counts))]]
    chosen = []
    for i, p in enumerate(top_p):
        rows = logits[starts[i] : starts[i + 1]]
        tau = temperatures[i] or 1.0
        k = None if top_k is None else top_k[i]
        for candidate in (p, *TOP_P_CHOICES):
            if not top_p_boundary_tied(rows, tau, k, candidate):
                chosen.append(candidate)
                break
        else:
            raise AssertionError(f"request {i}: every top-p in {TOP_P_CHOICES} ties at the boundary")
    return chosen
