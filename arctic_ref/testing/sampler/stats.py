"""Statistical checks S1–S5 of docs/verification.md §5.2, with stated significance.

Family-wise α = 1e-4 with Bonferroni: every chi-square test uses α / m, m = the number of chi-square
tests in the battery (reported). Cells with expected count < 5 are merged into one bin. Seeds are
fixed, so a run is deterministic; a configuration that yields fewer conditional samples than the
minimum is a failure of the test design, not a skip.
"""

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import torch
from scipy import stats
from torch import Tensor

from arctic_ref.spec.metadata import SamplingMetadata
from arctic_ref.spec.noise import draw_noise
from arctic_ref.spec.rejection import recover
from arctic_ref.spec.sampling import compute_target_probs
from arctic_ref.testing.check import Verdict
from arctic_ref.testing.sampler.check_ids import S1, S2, S3, S4, S5, S5_SPEED, S_DESIGN
from arctic_ref.testing.sampler.malformed import require_well_formed
from arctic_ref.testing.sampler.sampler_fn import RejectionSampleFn
from arctic_ref.testing.sampler.toy_generation import SAMPLED_DRAFTERS, exact_sequence_distribution, sample_sequences

FAMILY_ALPHA: Final = 1e-4
VOCAB: Final = 16
BATCH: Final = 10_000


def chi_square(observed: np.ndarray, expected_probs: np.ndarray) -> tuple[float, int, float]:
    """Goodness of fit with cells of expected count < 5 merged; (statistic, df, p-value)."""
    total = observed.sum()
    expected = expected_probs / expected_probs.sum() * total
    small = expected < 5
    if small.any():
        observed = np.append(observed[~small], observed[small].sum())
        expected = np.append(expected[~small], expected[small].sum())
        if expected[-1] == 0:
            if observed[-1] > 0:
                return math.inf, len(observed) - 1, 0.0
            observed, expected = observed[:-1], expected[:-1]
    if len(observed) < 2:
        return 0.0, 0, 1.0
    statistic = float(((observed - expected) ** 2 / expected).sum())
    df = len(observed) - 1
    return statistic, df, float(stats.chi2.sf(statistic, df))


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """One configuration of docs/verification.md §5.2: per-position target logits, drafts and draft probabilities."""

    name: str
    logits: Tensor  # [k, V]
    temperature: float
    top_k: int | None = None
    top_p: float | None = None
    draft: Callable[[int, torch.Generator], tuple[Tensor, Tensor | None]]  # count → drafts [count, k], q [k, V]


def _peaked(g: torch.Generator, k: int, top: float) -> Tensor:
    """Logits whose softmax has maximum ≈ ``top`` at a random token."""
    logits = torch.randn(k, VOCAB, generator=g) * 0.3
    best = torch.randint(0, VOCAB, (k,), generator=g)
    rest = torch.logsumexp(logits.scatter(1, best.unsqueeze(1), float("-inf")), dim=1)
    logits[torch.arange(k), best] = rest + math.log(top / (1 - top))
    return logits


def _fixed(tokens: Tensor) -> Callable[[int, torch.Generator], tuple[Tensor, Tensor | None]]:
    return lambda count, g: (tokens.unsqueeze(0).expand(count, -1).clone(), None)


def _sampled(q: Tensor) -> Callable[[int, torch.Generator], tuple[Tensor, Tensor | None]]:
    def draw(count: int, g: torch.Generator) -> tuple[Tensor, Tensor | None]:
        drafts = torch.stack(
            [torch.multinomial(q[j], count, replacement=True, generator=g) for j in range(q.shape[0])], dim=1
        )
        return drafts, q

    return draw


def _probs(config: Config) -> Tensor:
    k = config.logits.shape[0]
    meta = SamplingMetadata(
        temperature=torch.full((k,), config.temperature),
        all_greedy=False,
        all_random=True,
        top_k=None if config.top_k is None else torch.full((k,), config.top_k),
        top_p=None if config.top_p is None else torch.full((k,), config.top_p),
    )
    return compute_target_probs(config.logits, torch.arange(1, k + 1), meta)


def configurations(seed: int) -> list[Config]:
    g = torch.Generator().manual_seed(seed)
    c1 = _peaked(g, 4, 0.7)
    c2_logits = torch.randn(3, VOCAB, generator=g)
    c2_drafts = torch.randint(0, VOCAB, (3,), generator=g)
    rest = torch.logsumexp(c2_logits.scatter(1, c2_drafts.unsqueeze(1), float("-inf")) / 0.7, dim=1)
    c2_logits[torch.arange(3), c2_drafts] = 0.7 * (rest + math.log(0.5 / 0.5))  # p(d) = 0.5 after τ = 0.7
    c3 = torch.randn(1, VOCAB, generator=g)
    c3_draft = c3.argsort(dim=1)[:, 0]  # the least likely: outside top-4
    c4 = _peaked(g, 2, 0.7)
    c5 = torch.randn(2, VOCAB, generator=g)
    q5 = torch.softmax(torch.randn(2, VOCAB, generator=g), dim=1)
    c6 = torch.randn(2, VOCAB, generator=g)
    c7 = torch.randn(1, VOCAB, generator=g)
    top6 = c7.argsort(dim=1, descending=True)[:, :6]
    q7 = torch.ones(1, VOCAB).scatter(1, top6, 0.0)
    q7 = q7 / q7.sum(dim=1, keepdim=True)
    c8 = torch.randn(3, VOCAB, generator=g)
    q8 = torch.softmax(torch.randn(3, VOCAB, generator=g), dim=1)
    q8[:, : VOCAB // 2] = 0
    q8 = q8 / q8.sum(dim=1, keepdim=True)
    configs = [
        Config(name="C1", logits=c1, temperature=1.0, draft=_fixed(c1.argmax(dim=1))),
        Config(name="C2", logits=c2_logits, temperature=0.7, draft=_fixed(c2_drafts)),
        Config(name="C3", logits=c3, temperature=1.0, top_k=4, draft=_fixed(c3_draft)),
        Config(name="C4", logits=c4, temperature=1.3, top_p=0.8, draft=_fixed(c4.argmax(dim=1))),
        Config(name="C5", logits=c5, temperature=1.0, draft=_sampled(q5)),
        Config(name="C7", logits=c7, temperature=1.0, top_k=6, draft=_sampled(q7)),
        Config(name="C8", logits=c8, temperature=1.0, draft=_sampled(q8)),
    ]
    c6_config = Config(name="C6", logits=c6, temperature=1.0, draft=lambda n, g: (torch.zeros(0), None))
    p6 = _probs(c6_config)
    configs.insert(5, Config(name="C6", logits=c6, temperature=1.0, draft=_sampled(p6)))
    return configs


@dataclass(slots=True)
class _Samples:
    outputs: list[Tensor]
    drafts: list[Tensor]


def _run_config(
    sampler: RejectionSampleFn, config: Config, requests: int, g: torch.Generator, mixed: bool
) -> tuple[Tensor, Tensor]:
    """Outputs [N, k+1] and drafts [N, k] of ``requests`` identical requests (in batches); with
    ``mixed`` every other batch row is a greedy or seeded filler request whose output is ignored."""
    k = config.logits.shape[0]
    outs, drafts = [], []
    done = 0
    while done < requests:
        count = min(BATCH, requests - done)
        d, q = config.draft(count, g)
        reqs = count * 2 if mixed else count
        rows_logits = config.logits.unsqueeze(0).expand(reqs, -1, -1).reshape(-1, VOCAB).clone()
        all_drafts = d if not mixed else torch.stack([d, d], dim=1).reshape(-1, k)
        temps = torch.full((reqs,), config.temperature)
        generators: dict[int, torch.Generator] = {}
        if mixed:
            temps[1::4] = 0.0  # greedy fillers
            for i in range(3, reqs, 4):  # seeded fillers
                generators[i] = torch.Generator().manual_seed(i)
        meta = SamplingMetadata(
            temperature=temps,
            all_greedy=False,
            all_random=not mixed,
            top_k=None if config.top_k is None else torch.full((reqs,), config.top_k),
            top_p=None if config.top_p is None else torch.full((reqs,), config.top_p),
            generators=generators,
        )
        draft_probs = None if q is None else q.unsqueeze(0).expand(reqs, -1, -1).reshape(-1, VOCAB).contiguous()
        out = sampler(
            all_drafts.reshape(-1),
            [k] * reqs,
            k,
            torch.arange(1, reqs + 1) * k,
            draft_probs,
            rows_logits,
            torch.full((reqs, 1), VOCAB - 1),
            meta,
        )
        out = require_well_formed(out, [k] * reqs, VOCAB)
        keep = slice(None) if not mixed else slice(0, None, 2)
        outs.append(out[keep].to(torch.int64).cpu())
        drafts.append(d)
        done += count
    return torch.cat(outs), torch.cat(drafts)


def _acceptance(config: Config, p: Tensor, q: Tensor | None, g: torch.Generator) -> list[float]:
    if q is None:
        drafts = config.draft(1, g)[0][0]
        return [float(p[j, drafts[j]]) for j in range(p.shape[0])]
    return [float(torch.minimum(p[j], q[j].to(torch.float64)).sum()) for j in range(p.shape[0])]


def _requests_needed(config: Config, p: Tensor, q: Tensor | None, requests: int, minimum: int) -> int:
    """Enough requests that every (position, branch) gets ``minimum`` conditional samples."""
    rates = _acceptance(config, p, q, torch.Generator().manual_seed(0))
    needed = requests
    reach = 1.0
    for a in rates:
        branch = min(a, 1 - a) if 0 < a < 1 else 1.0
        needed = max(needed, math.ceil(1.2 * minimum / max(reach * branch, 1e-9)))
        reach *= a
        if reach == 0:
            break
    return min(needed, 20 * requests)


STATISTICAL_IDS: Final = (S1, S2, S3, S4, S5)
STATISTICS_STOPPED: Final = "the statistical checks stopped"
"""How S1–S5's detail begins when the sampler raised or returned malformed output (S-DESIGN and
S5-SPEED are then not reported)."""

StatisticalRun = tuple[dict[str, Verdict], dict[str, float]]
"""(check id → verdict, check id → the worst chi-square test's p-value)."""


def statistical_checks(
    sampler: RejectionSampleFn, *, level: str, seed: int, greedy_temperature: float = 0.0
) -> StatisticalRun:
    """S1–S5 (and S-DESIGN when a position got too few samples, S5-SPEED); a sampler that raises or
    returns malformed output fails every statistical check with what happened, and the kit goes on."""
    try:
        return _statistical_checks(sampler, level=level, seed=seed)
    except Exception as error:  # the candidate's failure is the result; the kit never raises
        detail = f"{STATISTICS_STOPPED}: {type(error).__name__}: {error}"
        return {c: Verdict(passed=False, count=1, detail=detail) for c in STATISTICAL_IDS}, {}


def _statistical_checks(sampler: RejectionSampleFn, *, level: str, seed: int) -> StatisticalRun:
    requests = 200_000 if level == "full" else 50_000
    minimum = 20_000 if level == "full" else 5_000
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    findings = _Findings()
    configs = configurations(seed)
    runs = [(c, False) for c in configs] + [(configs[1], True), (configs[4], True)]  # C9: C2 and C5 rows mixed
    for config, mixed in runs:
        _test_config(sampler, config, mixed, g, requests=requests, minimum=minimum, findings=findings)
    findings.planned.append(_race_test(requests))
    # S5: drafts change speed, never the output distribution.
    s5 = _draft_independence(sampler, requests, seed)
    findings.planned += [(c, o, e, lab) for c, o, e, lab in s5[0]]
    return _results(findings, s5[1], s5[2])


Planned = tuple[str, np.ndarray, np.ndarray, str]
"""(check id, observed counts, expected probabilities, label) of one chi-square test."""


@dataclass(slots=True)
class _Findings:
    """What the configurations found: the planned chi-square tests, the acceptance-band failures
    (S2) and the positions that got too few conditional samples (S-DESIGN)."""

    planned: list[Planned] = field(default_factory=list)
    band_failures: list[str] = field(default_factory=list)
    shortfalls: list[str] = field(default_factory=list)


def _test_config(
    sampler: RejectionSampleFn,
    config: Config,
    mixed: bool,
    g: torch.Generator,
    *,
    requests: int,
    minimum: int,
    findings: _Findings,
) -> None:
    """One configuration's runs: per position, the emitted tokens (S1), the acceptance band (S2),
    the recovered tokens (S3); then the mean emitted length (S2)."""
    planned, band_failures, shortfalls = findings.planned, findings.band_failures, findings.shortfalls
    label = config.name + (" in C9 (mixed batch)" if mixed else "")
    p = _probs(config).to(torch.float64)
    q = config.draft(1, g)[1]
    k = config.logits.shape[0]
    outputs, drafts = _run_config(sampler, config, _requests_needed(config, p, q, requests, minimum), g, mixed)
    reaching = torch.ones(outputs.shape[0], dtype=torch.bool)
    lengths = (outputs != -1).sum(dim=1).to(torch.float64)
    rates = []
    for j in range(k):
        stopped = reaching & (outputs[:, j] == -1)
        if bool(stopped.any()):  # a row that accepted draft j-1 must emit a token at j
            band_failures.append(
                f"{label} position {j}: {int(stopped.sum())} rows stop after an accepted draft "
                "(their last token equals their draft: a rejected draft re-emitted?)"
            )
            reaching = reaching & ~stopped
        n_j = int(reaching.sum())
        column = outputs[reaching, j]
        d_j = drafts[reaching, j]
        accepted = column == d_j
        if q is None:
            a = float(p[j, drafts[0, j]])
            recovered_probs = p[j].clone()
            recovered_probs[drafts[0, j]] = 0
        else:
            a = float(torch.minimum(p[j], q[j].to(torch.float64)).sum())
            recovered_probs = (p[j] - q[j].to(torch.float64)).clamp(min=0)
        a = min(max(a, 0.0), 1.0)
        rates.append(a)
        if n_j < minimum:
            shortfalls.append(f"{label} position {j}: {n_j} requests reach it (< {minimum})")
            break
        planned.append((S1, np.bincount(column.numpy(), minlength=VOCAB), p[j].numpy(), f"{label} position {j}"))
        a_hat = float(accepted.to(torch.float64).mean())
        band = 5 * math.sqrt(a * (1 - a) / n_j) + 1 / n_j
        if (a in (0.0, 1.0) and a_hat != a) or abs(a_hat - a) > band:
            band_failures.append(f"{label} position {j}: acceptance {a_hat:.5f}, expected {a:.5f} ± {band:.5f}")
        rejected = column[~accepted]
        if 0 < a < 1 and recovered_probs.sum() > 0:
            if len(rejected) >= minimum:
                planned.append(
                    (
                        S3,
                        np.bincount(rejected.numpy(), minlength=VOCAB),
                        recovered_probs.numpy(),
                        f"{label} position {j}",
                    )
                )
            else:
                shortfalls.append(f"{label} position {j}: {len(rejected)} rejections (< {minimum})")
        after = torch.zeros_like(reaching)
        after[reaching.nonzero().squeeze(1)[accepted]] = True
        reaching = after
    expected_length = sum(math.prod(rates[:j]) for j in range(k + 1))
    error = 5 * float(lengths.std()) / math.sqrt(len(lengths))
    if abs(float(lengths.mean()) - expected_length) > error:
        band_failures.append(
            f"{label}: mean emitted length {float(lengths.mean()):.4f}, expected {expected_length:.4f} ± {error:.4f}"
        )


def _race_test(requests: int) -> Planned:
    """S4: the exponential race alone, with E from draw_noise."""
    weights = torch.tensor([0.0, 1.0, 2.0, 0.0, 4.0, 0.5, 0.0, 3.0, 1.5, 0.0, 0.25, 2.5, 0.0, 1.0, 0.75, 0.1])
    meta = SamplingMetadata(temperature=torch.ones(requests), all_greedy=False, all_random=True)
    noise = draw_noise([1] * requests, VOCAB, meta)
    assert noise is not None
    winners = recover(
        weights.expand(requests, -1),
        torch.zeros(requests, dtype=torch.int64),
        weights.expand(requests, -1) * 0,
        noise.exponentials,
    )
    return (S4, np.bincount(winners.numpy(), minlength=VOCAB), weights.numpy(), "race over w with zeros")


def _results(findings: _Findings, s5_speed_passed: bool, s5_speed_detail: str) -> StatisticalRun:
    """S1, S3, S4, S5 at the Bonferroni threshold over every planned test; S2; S-DESIGN; S5-SPEED."""
    planned, band_failures, shortfalls = findings.planned, findings.band_failures, findings.shortfalls
    tests = len(planned)
    alpha = FAMILY_ALPHA / max(tests, 1)
    verdicts: dict[str, Verdict] = {}
    p_values: dict[str, float] = {}
    for check in (S1, S3, S4, S5):
        mine = [(o, e, lab) for c, o, e, lab in planned if c == check]
        worst = min(((chi_square(o, e), lab) for o, e, lab in mine), key=lambda x: x[0][2], default=None)
        if worst is None:
            verdicts[check] = Verdict(passed=True, skipped="no test planned")
            continue
        (statistic, df, p_value), lab = worst
        p_values[check] = p_value
        verdicts[check] = Verdict(
            passed=not p_value < alpha,  # a NaN p-value passes, as the comparison says
            count=1,
            figures={"statistic": f"{statistic:.4g}", "p-value": f"{p_value:.3g}", "threshold": f"{alpha:.3g}"},
            detail=f"p = {p_value:.3g} (threshold {alpha:.3g}); "
            f"{len(mine)} chi-square tests, m={tests} in the battery, worst: {lab} (df {df})",
        )
    verdicts[S2] = Verdict(
        passed=not band_failures,
        count=1,
        detail="; ".join(band_failures[:3])
        or "acceptance inside the 5-sigma band at every position; mean length matches",
    )
    if shortfalls:
        verdicts[S_DESIGN] = Verdict(passed=False, count=1, detail="; ".join(shortfalls[:3]))
    verdicts[S5_SPEED] = Verdict(passed=s5_speed_passed, count=1, detail=s5_speed_detail)
    return verdicts, p_values


def _draft_independence(
    sampler: RejectionSampleFn, requests: int, seed: int
) -> tuple[list[tuple[str, np.ndarray, np.ndarray, str]], bool, str]:
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    vocab = 6
    table = torch.randn(vocab, vocab, generator=g) * 1.5
    prompt = [rng.randrange(vocab)]
    planned = []
    steps: dict[str, float] = {}
    count = max(requests // 4, 20_000)
    for top_k in (None, 4):
        exact = exact_sequence_distribution(table, prompt, 3, top_k).numpy()
        for drafter in SAMPLED_DRAFTERS:
            sequences, mean_steps = sample_sequences(
                sampler, drafter, table, prompt, count=count, length=3, top_k=top_k, seed=rng.randrange(2**31)
            )
            index = (sequences * torch.tensor([vocab**2, vocab, 1])).sum(dim=1)
            planned.append(
                (S5, np.bincount(index.numpy(), minlength=vocab**3), exact, f"{drafter.name}, top_k={top_k}")
            )
            steps[f"{drafter.name}/{top_k}"] = mean_steps
    faster = all(steps[f"oracle argmax/{t}"] < steps[f"none/{t}"] for t in (None, 4))
    detail = "mean verification steps per 3 tokens: " + ", ".join(f"{k} {v:.2f}" for k, v in steps.items())
    return planned, faster, detail
