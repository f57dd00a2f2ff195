"""Faults in verification, planted around vLLM's own ``RejectionSampler`` instance.

Every fault here runs vLLM's sampler unchanged and alters either its inputs (the draft
probabilities, the target logits) or its output (the row of tokens a verify step emits); none
writes a sampler of its own. Terms as in ``RejectionSampler``'s docstring: a verify step of a row
with n drafts emits the accepted drafts, then one *recovered* token (sampled from
max(p − q, 0) at the first rejected position) or, when all n are accepted, the *bonus* token.
For n-gram and suffix drafts vLLM passes ``draft_probs=None``: q is one-hot at the draft, so the
acceptance test is p(d) ≥ u and the recovered token is drawn from p with the draft zeroed."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Final

import torch
from torch import Tensor
from vllm.v1.outputs import SamplerOutput
from vllm.v1.sample.metadata import SamplingMetadata
from vllm.v1.sample.rejection_sampler import (
    PLACEHOLDER_TOKEN_ID,
    RejectionSampler,
    apply_sampling_constraints,
    sample_recovered_tokens,
)
from vllm.v1.spec_decode.metadata import SpecDecodeMetadata


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifyStep:
    """One call of the rejection sampler, with the arguments the model runner passes
    (``GPUModelRunner._sample``)."""

    metadata: SpecDecodeMetadata
    draft_probs: Tensor | None
    """None for n-gram and suffix drafts."""
    logits: Tensor
    """[num_draft_tokens + batch, vocab]: every draft position, then each row's bonus position."""
    sampling: SamplingMetadata

    @property
    def batch(self) -> int:
        return len(self.metadata.num_draft_tokens)

    @property
    def num_drafts(self) -> int:
        return int(self.metadata.draft_token_ids.numel())

    def random_rows(self) -> list[bool]:
        """Which rows sample at T > 0 (vLLM's greedy rows have temperature 0)."""
        if self.sampling.all_greedy or self.sampling.temperature is None:
            return [False] * self.batch
        return [float(t) > 0 for t in self.sampling.temperature[: self.batch].tolist()]


Verify = Callable[[VerifyStep], SamplerOutput]
"""vLLM's own verification of a step (the sampler instance's original ``forward``)."""
Fault = Callable[[Verify, VerifyStep], SamplerOutput]


def plant(sampler: RejectionSampler, fault: Fault) -> None:
    """From now on ``sampler(...)`` returns ``fault(verify, step)``, ``verify`` being the instance's
    own ``forward`` (itself possibly a repair of ``repairs``)."""
    original = sampler.forward

    def verify(step: VerifyStep) -> SamplerOutput:
        return original(step.metadata, step.draft_probs, step.logits, step.sampling)

    def forward(
        metadata: SpecDecodeMetadata, draft_probs: Tensor | None, logits: Tensor, sampling_metadata: SamplingMetadata
    ) -> SamplerOutput:
        step = VerifyStep(metadata=metadata, draft_probs=draft_probs, logits=logits, sampling=sampling_metadata)
        return fault(verify, step)

    sampler.forward = forward


@dataclass(frozen=True, slots=True)
class Rejection:
    """The first rejected draft of a row: the row, its position among the row's drafts, and its
    index in the flat draft arrays (``draft_token_ids``, ``target_logits_indices``)."""

    row: int
    position: int
    flat: int


def target_probs(sampler: RejectionSampler, step: VerifyStep) -> Tensor:
    """p at every draft position, [num_draft_tokens, vocab], computed as vLLM's ``forward`` does
    (float32, logits processors, temperature then top-k/top-p, softmax), from a copy of the logits."""
    rows = step.logits[step.metadata.target_logits_indices].to(torch.float32).clone()
    rows = sampler.apply_logits_processors(rows, step.sampling, step.metadata)
    rows = apply_sampling_constraints(rows, step.metadata.cu_num_draft_tokens, step.sampling)
    return rows.softmax(dim=-1, dtype=torch.float32)


def first_rejections(output: Tensor, metadata: SpecDecodeMetadata) -> Iterator[Rejection]:
    """Each row's first emitted token that differs from its draft (a recovered token: it never
    equals the draft it replaces). Rows whose drafts were all accepted yield nothing."""
    drafts = metadata.draft_token_ids.tolist()
    emitted = output.tolist()
    start = 0
    for row, n in enumerate(metadata.num_draft_tokens):
        for position in range(n):
            if emitted[row][position] != drafts[start + position]:
                yield Rejection(row, position, start + position)
                break
        start += n


# -- the faults ---------------------------------------------------------------------------------

UNIFORM_SCALE: Final = 0.5


def scale_uniforms(sampler: RejectionSampler) -> None:
    """The acceptance test compares p(d) with u · ``UNIFORM_SCALE`` instead of u, so drafts are
    accepted too often (min(1, 2 p(d)) instead of p(d)).

    Planted through the inputs: vLLM's kernel accepts when p(d) / q(d) ≥ u, so handing it
    q = ``UNIFORM_SCALE`` · one-hot(d) where it would have used one-hot(d) is the same test on
    scaled uniforms. The recovered token is unchanged: max(p − q, 0) zeroes d whenever
    p(d) ≤ 0.5, and a draft with p(d) > 0.5 is always accepted by the scaled test."""

    def fault(verify: Verify, step: VerifyStep) -> SamplerOutput:
        if step.draft_probs is not None or step.num_drafts == 0:
            return verify(step)
        q = torch.zeros(step.num_drafts, step.logits.shape[-1], dtype=torch.float32)
        q[torch.arange(step.num_drafts), step.metadata.draft_token_ids.long().clamp(min=0)] = UNIFORM_SCALE
        return verify(replace(step, draft_probs=q))

    plant(sampler, fault)


Chooser = Callable[[Tensor, VerifyStep], Tensor]
"""(p at every draft position, the step) → a token per draft position."""


def replace_recovered(sampler: RejectionSampler, choose: Chooser, *, above_batch: int = 0) -> None:
    """In verify steps of more than ``above_batch`` rows, each random row's recovered token (at its
    first rejected position) is replaced by ``choose``'s token for that position. Acceptance, bonus
    tokens and greedy rows are untouched; p is computed before vLLM's sampler runs, ``choose``
    after, so the sampler draws its randomness first, as it does unbroken."""

    def fault(verify: Verify, step: VerifyStep) -> SamplerOutput:
        randomized = step.random_rows()
        if step.batch <= above_batch or step.num_drafts == 0 or not any(randomized):
            return verify(step)
        probs = target_probs(sampler, step)
        out = verify(step)
        chosen = choose(probs, step)
        for r in first_rejections(out.sampled_token_ids, step.metadata):
            if randomized[r.row]:
                out.sampled_token_ids[r.row, r.position] = chosen[r.flat]
        return out

    plant(sampler, fault)


def draw_with_argmax_zeroed(probs: Tensor, step: VerifyStep) -> Tensor:
    """vLLM's own ``sample_recovered_tokens``, handed the target's argmax ids as the "drafts": a
    draw from p with the argmax zeroed."""
    metadata = step.metadata
    return sample_recovered_tokens(
        metadata.max_spec_len,
        metadata.num_draft_tokens,
        metadata.cu_num_draft_tokens,
        probs.argmax(dim=-1).to(metadata.draft_token_ids.dtype),
        None,
        probs,
        step.sampling,
        probs.device,
    )


def residual_argmax(probs: Tensor, step: VerifyStep) -> Tensor:
    """The most likely token of max(p − q, 0), q one-hot at the draft: p's argmax with the draft zeroed."""
    residual = probs.clone()
    residual[torch.arange(residual.shape[0]), step.metadata.draft_token_ids.long().clamp(min=0)] = 0.0
    return residual.argmax(dim=-1)


def zero_the_argmax(sampler: RejectionSampler) -> None:
    """The recovered token is drawn from p with the target's argmax zeroed instead of the rejected
    draft: it is never the most likely token, and it can be the draft just rejected (planted on
    the output, ``replace_recovered`` with ``draw_with_argmax_zeroed``)."""
    replace_recovered(sampler, draw_with_argmax_zeroed)


BATCH_THRESHOLD: Final = 2


def corrupt_large_random_batches(sampler: RejectionSampler) -> None:
    """F-2 (1Cat-vLLM#656): only when more than ``BATCH_THRESHOLD`` requests share a verify step,
    each random row's recovered token is the argmax of max(p − q, 0) instead of a draw from it.
    Acceptance is untouched, so the acceptance rate looks normal; greedy rows are untouched, so
    every greedy check passes."""
    replace_recovered(sampler, residual_argmax, above_batch=BATCH_THRESHOLD)


UNTESTED_FROM: Final = 5


def accept_long_drafts_untested(sampler: RejectionSampler) -> None:
    """F-3 (sglang#34189): draft positions ``UNTESTED_FROM`` and later are accepted without a test.
    A row whose first rejection falls there emits all its drafts and no recovered or bonus token
    (the scheduler then counts the last draft as the step's sampled token and recomputes it, so the
    engine stays consistent). Drafts of up to five tokens are never affected; the longer the
    draft, the more positions are emitted unverified."""

    def fault(verify: Verify, step: VerifyStep) -> SamplerOutput:
        out = verify(step)
        metadata = step.metadata
        if metadata.max_spec_len <= UNTESTED_FROM:
            return out
        starts = [0]
        for n in metadata.num_draft_tokens:
            starts.append(starts[-1] + n)
        for r in first_rejections(out.sampled_token_ids, metadata):
            n = metadata.num_draft_tokens[r.row]
            if r.position >= UNTESTED_FROM:
                first = starts[r.row]
                out.sampled_token_ids[r.row, r.position : n] = metadata.draft_token_ids[first + r.position : first + n]
                out.sampled_token_ids[r.row, n:] = PLACEHOLDER_TOKEN_ID
        return out

    plant(sampler, fault)


RELAXED_TOP: Final = 2
RELAXED_DELTA: Final = 1.0


def relax_greedy_acceptance(sampler: RejectionSampler) -> None:
    """F-6 (vllm#41758): greedy verification accepts a draft that is not the target's argmax but
    is among its top ``RELAXED_TOP`` tokens and within ``RELAXED_DELTA`` of the top logit (a
    "relaxed acceptance" left on for greedy requests). Greedy output then changes with drafting on.

    Planted through the inputs: on a copy of the logits, such a draft's logit at its verify
    position is raised just above the maximum, so vLLM's greedy kernel (draft == argmax) accepts
    it. Random rows are untouched."""

    def fault(verify: Verify, step: VerifyStep) -> SamplerOutput:
        randomized = step.random_rows()
        if step.num_drafts == 0 or all(randomized):
            return verify(step)
        relaxed = step.logits.clone()
        drafts = step.metadata.draft_token_ids.tolist()
        indices = step.metadata.target_logits_indices.tolist()
        start = 0
        for row, n in enumerate(step.metadata.num_draft_tokens):
            if not randomized[row]:
                for flat in range(start, start + n):
                    scores = relaxed[indices[flat]]
                    top = torch.topk(scores, RELAXED_TOP).values
                    d = drafts[flat]
                    if 0 <= d < scores.shape[0] and scores[d] >= max(float(top[-1]), float(top[0]) - RELAXED_DELTA):
                        scores[d] = top[0] + 1e-3
            start += n
        return verify(replace(step, logits=relaxed))

    plant(sampler, fault)


def sampler_of(parts: Any) -> RejectionSampler:
    """The engine's rejection sampler (drafting must be on)."""
    if parts.sampler is None:
        raise ValueError("this broken engine breaks verification: build it with a speculative_config")
    sampler: RejectionSampler = parts.sampler
    return sampler
