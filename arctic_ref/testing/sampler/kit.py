"""``check_rejection_sampler``: the conformance kit for any function with ``rejection_sample``'s
signature (ours, vLLM's, a user's Triton kernel). Spec docs/verification.md §6.

Exact checks compare the candidate with ``rejection_sample_with_noise`` on the same randomness:
route A injects u and E through the candidate's ``with_noise`` context; route B gives every random
request a seeded generator and predicts the draws of docs/verification.md §2.1 on clones. Statistical checks need
no injection at all.
"""

from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

import torch
from torch import Tensor

from arctic_ref.check_options import SAMPLER_CATEGORIES, SamplerCategory
from arctic_ref.spec.metadata import SamplingMetadata
from arctic_ref.spec.noise import RejectionNoise, draw_noise
from arctic_ref.spec.profile import INTENDED, SamplerProfile
from arctic_ref.testing.sampler.check_ids import CATEGORIES
from arctic_ref.testing.sampler.exact import Candidate, exact_checks
from arctic_ref.testing.sampler.report import (
    KNOWN_DIFFERENCE_OF_CHECK,
    CheckStatus,
    ConformanceReport,
    NoiseInjector,
    RejectionSampleFn,
)
from arctic_ref.testing.sampler.stats import statistical_checks


@contextmanager
def _global_rng_guard() -> Iterator[None]:
    state = torch.get_rng_state()
    try:
        yield
    finally:
        torch.set_rng_state(state)


def check_rejection_sampler(
    sampler: RejectionSampleFn,
    *,
    takes: Literal["logits", "probs"] = "logits",
    profile: SamplerProfile = INTENDED,
    greedy_temperature: float = 0.0,
    with_noise: NoiseInjector | None = None,
    known_differences: Sequence[str] = (),
    level: Literal["quick", "full"] = "full",
    device: str = "cpu",
    seed: int = 0,
    name: str | None = None,
    statistics: bool = True,
    categories: Collection[SamplerCategory] = SAMPLER_CATEGORIES,
    unsafe_inputs: Mapping[str, str] | None = None,
) -> ConformanceReport:
    """Every exact check (E1–E18, E20, RNG-ORDER) and, unless ``statistics=False``, S1–S5. Checks
    of a category not in ``categories`` (check_ids.py: ``"semantics"``, ``"strict"``) are reported
    as skipped, e.g. ``categories=("semantics",)`` leaves out arctic_ref's strict input contract.
    ``unsafe_inputs`` (strict check id → why) names strict checks whose invalid inputs must never
    reach the sampler (its native kernels would write out of bounds): they are skipped with that reason."""
    candidate = Candidate(
        fn=sampler,
        takes=takes,
        profile=profile,
        injector=with_noise,
        greedy_temperature=greedy_temperature,
        unsafe_inputs=dict(unsafe_inputs or {}),
    )
    report = ConformanceReport(
        candidate=name or str(getattr(sampler, "__qualname__", repr(sampler))),
        torch_version=torch.__version__,
        device=device,
        profile=profile.name,
        level=level,
    )
    with _global_rng_guard():
        results = exact_checks(candidate, level=level, seed=seed)
        if statistics:
            results += statistical_checks(sampler, level=level, seed=seed, greedy_temperature=greedy_temperature)
    for result in results:
        category = CATEGORIES.get(result.id, "semantics")
        if category not in categories:
            result = replace(result, status=CheckStatus.SKIP, detail=f"category {category!r} left out")
        explained = KNOWN_DIFFERENCE_OF_CHECK.get(result.id)
        if result.status is CheckStatus.FAIL and explained in known_differences:
            result = replace(
                result, status=CheckStatus.KNOWN, detail=f"{explained} (docs/verification.md §2.4): {result.detail}"
            )
        report.checks.append(result)
    return report


class SampleWithNoiseFn(Protocol):
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
        noise: RejectionNoise | None,
        *,
        profile: SamplerProfile = INTENDED,
    ) -> Tensor: ...


@dataclass(slots=True)
class Injectable:
    """A ``…_with_noise`` function as a candidate with a route-A injector: inside ``inject(noise)``
    it uses that noise; outside it draws its own with ``draw_noise`` (so it is a complete sampler)."""

    fn: SampleWithNoiseFn
    profile: SamplerProfile = INTENDED
    noise: list[RejectionNoise] = field(default_factory=list)

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
    ) -> Tensor:
        noise = self.noise[-1] if self.noise else None
        drawable = sum(num_draft_tokens) <= target_logits.shape[0] and max_spec_len <= self.profile.max_spec_len_limit
        if noise is None and not sampling_metadata.all_greedy and drawable:
            noise = draw_noise(
                num_draft_tokens,
                target_logits.shape[1],
                sampling_metadata,
                profile=self.profile,
                device=target_logits.device,
            )
        return self.fn(
            draft_token_ids,
            num_draft_tokens,
            max_spec_len,
            cu_num_draft_tokens,
            draft_probs,
            target_logits,
            bonus_token_ids,
            sampling_metadata,
            noise,
            profile=self.profile,
        )

    @contextmanager
    def inject(self, noise: RejectionNoise) -> Iterator[None]:
        self.noise.append(noise)
        try:
            yield
        finally:
            self.noise.pop()
