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
from arctic_ref.testing.check import Verdict
from arctic_ref.testing.sampler.exact import Candidate, exact_checks
from arctic_ref.testing.sampler.report import ConformanceReport
from arctic_ref.testing.sampler.sampler_fn import NoiseInjector, RejectionSampleFn
from arctic_ref.testing.sampler.stats import statistical_checks
from arctic_ref.testing.sampler.table import EXACT_SCENARIOS, SAMPLER_CHECKS, Route


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
    """Every exact check (E1–E18, E20, RNG-ORDER) and, unless ``statistics=False``, S1–S5, as one
    ``Verdict`` per check in the table's order (``table.py``). Checks of a category not in
    ``categories`` (``"semantics"``, ``"strict"``) are reported as skipped, e.g.
    ``categories=("semantics",)`` leaves out arctic_ref's strict input contract. A failure that the
    row's upstream difference explains, when ``known_differences`` names it, is reported with
    ``Verdict.known_difference`` set and does not fail ``report.ok``.
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
    route: Route = "A" if with_noise is not None else "B"
    off_route = {row.id: row.off_route for row in SAMPLER_CHECKS if route not in row.routes}
    p_values: dict[str, float] = {}
    with _global_rng_guard():
        found = exact_checks(candidate, EXACT_SCENARIOS, skipped=off_route, level=level, seed=seed)
        if statistics:
            statistical, p_values = statistical_checks(
                sampler, level=level, seed=seed, greedy_temperature=greedy_temperature
            )
            found |= statistical
    described = f"[{level} level, profile {profile.name}, device {device}]"
    verdicts: dict[str, Verdict] = {}
    for row in SAMPLER_CHECKS:
        if row.id not in found:
            continue
        verdict = found[row.id]
        if row.category not in categories:
            verdict = Verdict(passed=True, skipped=f"category {row.category!r} left out")
        if verdict.skipped:
            verdicts[row.id] = replace(verdict, compared=row.meaning)
            continue
        if not verdict.passed and row.difference and row.difference in known_differences:
            verdict = replace(
                verdict,
                known_difference=row.difference,
                detail=f"{row.difference} (docs/verification.md §2.4): {verdict.detail}",
            )
        verdicts[row.id] = replace(
            verdict,
            compared=f"{row.meaning} {described}",
            replay=f"check_rejection_sampler(yours, level={level!r}, seed={seed}) from arctic_ref.testing, "
            f"check {row.id}",
        )
    return ConformanceReport(
        candidate=name or str(getattr(sampler, "__qualname__", repr(sampler))),
        torch_version=torch.__version__,
        device=device,
        profile=profile.name,
        level=level,
        verdicts=verdicts,
        p_values=p_values,
    )


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
