"""The ``distribution`` check: at T > 0 an engine with drafting on samples from the model's exact
distribution.

Seeded requests (several prompts, many seeds each) run with drafting on (n-gram and suffix) and
off, under each sampling mix of ``cases.SAMPLING_MIXES``. For each of the first K output positions:

* goodness of fit: the tokens at that position against the float64 reference's probabilities given
  each request's own prefix (temperature, then top-k, then top-p, as vLLM applies them), summed
  over requests: Pearson's chi-square with bins of expected count below 5 merged into one tail bin.
  With prefixes that differ between requests the counts are a sum of differently distributed
  draws, whose variance is at most the multinomial's, so the test is conservative;
* two samples: the spec-on tokens against the spec-off tokens at that position (chi-square test of
  homogeneity, the same merging);
* acceptance (n-gram drafts, whose drafts are a function of the tokens alone): each draft position
  reached is accepted with the reference probability of its token; the number accepted against the
  sum of those probabilities, as a normal z-test (variance the sum of p(1 − p)).

All tests of one run share the family-wise significance ``ALPHA`` (Bonferroni). An engine that
raises on a mix fails that mix, naming the engine's exception; a catalogued upstream bug makes it a
known difference (docs/bugs.md V-17)."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import torch
from scipy import stats
from torch import Tensor

from arctic_ref.runner.vllm_drafting import VllmDraftSemantics, new_vllm_drafter
from arctic_ref.testing.check import Verdict
from arctic_ref.testing.engine.cases import SAMPLING_MIXES, DraftMethod, SamplingMix, prompts, speculative_config
from arctic_ref.testing.engine.checkpoint import ReferenceModel
from arctic_ref.testing.engine.draft_replay import replay_request
from arctic_ref.testing.engine.engine_target import EngineFailure, EngineRequest, EngineRun, EngineSetup
from arctic_ref.testing.engine.known_bugs import explain
from arctic_ref.testing.engine.session import EngineSession

ALPHA: Final = 1e-3
"""Family-wise significance of one ``distribution`` run: a correct engine fails it at most this
often."""
POSITIONS: Final = 5
"""K: the first output positions tested (position 0 is the prefill's sample, 1.. come through
verification)."""
K_DRAFT: Final = 4


def reference_probs(logits: Tensor, mix: SamplingMix) -> Tensor:
    """vLLM's sampling distribution in float64: logits / T, then top-k (ties at the k-th value
    kept), then top-p (the smallest set of the highest probabilities whose mass reaches p, the
    most likely token always kept), renormalised."""
    x = logits.to(torch.float64) / mix.temperature
    if mix.top_k is not None and 0 < mix.top_k < x.shape[-1]:
        kth = torch.topk(x, mix.top_k, dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    probs = torch.softmax(x, dim=-1)
    if mix.top_p is not None and mix.top_p < 1.0:
        ordered, order = probs.sort(dim=-1)
        drop = ordered.cumsum(dim=-1) <= 1 - mix.top_p
        drop[..., -1] = False
        probs = probs.masked_fill(drop.scatter(-1, order, drop), 0.0)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


def merged_bins(observed: Tensor, expected: Tensor) -> tuple[Tensor, Tensor]:
    """Bins with expected count ≥ 5 kept, the rest merged into one tail bin (dropped if empty)."""
    keep = expected >= 5
    obs = torch.cat([observed[keep], observed[~keep].sum().view(1)])
    exp = torch.cat([expected[keep], expected[~keep].sum().view(1)])
    if exp[-1] < 1e-12:
        obs, exp = obs[:-1], exp[:-1]
    return obs, exp


def goodness_of_fit(observed: Tensor, expected: Tensor) -> float:
    """Pearson's chi-square p-value of counts against expected counts (merged bins)."""
    obs, exp = merged_bins(observed.to(torch.float64), expected.to(torch.float64))
    if obs.numel() < 2:
        return 1.0
    if bool((obs[exp <= 0] > 0).any()):
        return 0.0
    chi2 = float(((obs - exp) ** 2 / exp).sum())
    return float(stats.chi2.sf(chi2, obs.numel() - 1))


def homogeneity(a: Tensor, b: Tensor) -> float:
    """Chi-square test of homogeneity of two count vectors (bins with pooled expected < 5 merged)."""
    pooled = a + b
    total_a, total_b = float(a.sum()), float(b.sum())
    expected_a = pooled * total_a / (total_a + total_b)
    keep = expected_a >= 5
    table = torch.stack(
        [torch.cat([a[keep], a[~keep].sum().view(1)]), torch.cat([b[keep], b[~keep].sum().view(1)])]
    ).to(torch.float64)
    table = table[:, table.sum(0) > 0]
    if table.shape[1] < 2:
        return 1.0
    return float(stats.chi2_contingency(table.numpy(), correction=False).pvalue)


@dataclass(frozen=True, slots=True, kw_only=True)
class MixSample:
    """One mix's requests and, per request, the reference distribution at each tested position."""

    mix: SamplingMix
    requests: tuple[EngineRequest, ...]


def mix_requests(vocab: int, mix: SamplingMix, seeds: int) -> tuple[EngineRequest, ...]:
    return tuple(
        EngineRequest(
            prompt=prompt,
            max_tokens=POSITIONS,
            temperature=mix.temperature,
            top_k=mix.top_k,
            top_p=mix.top_p,
            seed=seed,
        )
        for prompt in prompts(vocab, 3, (12, 20), 7)
        for seed in range(seeds)
    )


def position_counts(
    reference: ReferenceModel, requests: Sequence[EngineRequest], outputs: Sequence[Sequence[int]], mix: SamplingMix
) -> tuple[Tensor, Tensor]:
    """([K, vocab] observed counts, [K, vocab] expected counts) over the requests."""
    vocab = reference.config.vocab_size
    observed = torch.zeros(POSITIONS, vocab, dtype=torch.float64)
    expected = torch.zeros(POSITIONS, vocab, dtype=torch.float64)
    for request, output in zip(requests, outputs, strict=True):
        n = len(request.prompt)
        probs = reference_probs(reference.logits(list(request.prompt) + list(output))[n - 1 : n - 1 + POSITIONS], mix)
        for j, token in enumerate(output[:POSITIONS]):
            observed[j, token] += 1
            expected[j] += probs[j]
    return observed, expected


def acceptance_z(
    reference: ReferenceModel,
    requests: Sequence[EngineRequest],
    outputs: Sequence[Sequence[int]],
    mix: SamplingMix,
    semantics: VllmDraftSemantics,
) -> tuple[float, int, float]:
    """(two-sided p-value, draft positions reached, accepted − expected) of the acceptance test."""
    accepted = 0
    mean = variance = 0.0
    reached = 0
    for index, (request, output) in enumerate(zip(requests, outputs, strict=True)):
        _, steps = replay_request(
            new_vllm_drafter(semantics), f"r{index}", request.prompt, output, (), max_model_len=semantics.max_model_len
        )
        tokens = list(request.prompt) + list(output)
        probs = reference_probs(reference.logits(tokens), mix)
        for step in steps:
            for i, draft in enumerate(step.drafts):
                at = step.num_tokens - 1 + i
                if at + 1 >= len(tokens):
                    break
                p = float(probs[at, draft])
                reached += 1
                mean += p
                variance += p * (1 - p)
                hit = tokens[at + 1] == draft
                accepted += int(hit)
                if not hit:
                    break
    if variance <= 0:
        return 1.0, reached, 0.0
    z = (accepted - mean) / variance**0.5
    return float(2 * stats.norm.sf(abs(z))), reached, accepted - mean


def distribution_check(session: EngineSession, methods: tuple[DraftMethod, ...]) -> Verdict:
    reference = session.reference()
    vocab = reference.config.vocab_size
    seeds = 400 if session.level == "full" else 120
    samples = [MixSample(mix=mix, requests=mix_requests(vocab, mix, seeds)) for mix in SAMPLING_MIXES]
    setups = [EngineSetup(max_num_seqs=32, max_model_len=256)] + [
        EngineSetup(max_num_seqs=32, max_model_len=256, speculative_config=speculative_config(m, K_DRAFT))
        for m in methods
    ]
    runs = session.runs([(setup, [s.requests for s in samples]) for setup in setups])
    tests = (2 * len(methods) + 1) * len(samples) * POSITIONS + len(samples)
    alpha = ALPHA / tests
    failures: list[str] = []
    smallest = 1.0
    counts: dict[str, tuple[Tensor, Tensor] | None] = {}
    for setup, run in zip(setups, runs, strict=True):
        name = setup.label.split(",")[0]
        if isinstance(run, EngineFailure):
            failures.append(f"{name}: {run}")
            continue
        for s, sample in enumerate(samples):
            key = f"{name} / {sample.mix.name}"
            outputs = _batch(run, s, len(sample.requests))
            if outputs is None:
                failures.append(
                    f"{key}: {run.failure}"
                    if s == len(run.per_call)
                    else f"{key}: not run, the engine stopped at the batch before it ({run.failure})"
                )
                counts[key] = None
                continue
            observed, expected = position_counts(reference, sample.requests, outputs, sample.mix)
            counts[key] = (observed, expected)
            for j in range(POSITIONS):
                p = goodness_of_fit(observed[j], expected[j])
                smallest = min(smallest, p)
                if p < alpha:
                    failures.append(
                        f"{key}, position {j}: chi-square p = {p:.3g} < {alpha:.2g} against the float64 distribution"
                    )
            spec = setup.speculative_config
            if spec is not None and spec.get("method") == "ngram":
                semantics = VllmDraftSemantics.parse(spec, max_model_len=setup.max_model_len)
                p, reached, excess = acceptance_z(reference, sample.requests, outputs, sample.mix, semantics)
                smallest = min(smallest, p)
                if p < alpha:
                    failures.append(
                        f"{key}: {reached} draft positions, accepted − expected = {excess:.1f}, p = {p:.3g}"
                    )
    off = setups[0].label.split(",")[0]
    for method_setup in setups[1:]:
        name = method_setup.label.split(",")[0]
        for sample in samples:
            a, b = counts.get(f"{name} / {sample.mix.name}"), counts.get(f"{off} / {sample.mix.name}")
            if a is None or b is None:
                continue
            for j in range(POSITIONS):
                p = homogeneity(a[0][j], b[0][j])
                smallest = min(smallest, p)
                if p < alpha:
                    failures.append(f"{name} vs spec off / {sample.mix.name}, position {j}: two-sample p = {p:.3g}")
    figures = {"tests": str(tests), "per-test alpha": f"{alpha:.2g}", "smallest p": f"{smallest:.3g}"}
    compared = (
        f"{sum(len(s.requests) for s in samples)} seeded requests per engine × {len(setups)} engines, "
        f"first {POSITIONS} positions, family-wise alpha {ALPHA:g}"
    )
    explained = {line: explain(session.target.identity, "distribution", line) for line in failures}
    unexplained = [line for line, bug in explained.items() if not bug]
    return Verdict(
        passed=not failures,
        compared=compared,
        count=tests,
        figures=figures,
        detail="; ".join(unexplained + [f"[{bug}] {line}" for line, bug in explained.items() if bug]),
        known_difference="" if unexplained else ", ".join(sorted(set(explained.values()))),
    )


def _batch(run: EngineRun, index: int, size: int) -> list[tuple[int, ...]] | None:
    """The outputs of batch ``index`` (all batches have ``size`` requests), None if it did not finish."""
    if index >= len(run.per_call):
        return None
    return list(run.tokens[index * size : (index + 1) * size])
