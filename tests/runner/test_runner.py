"""The runner end to end on one rank (docs/runner.md §1, §2, §6): greedy speculation is lossless for
every drafter, budget-starved steps, the suffix-cache rules, the #132 bug fixture, and sampled
output that keeps the target distribution."""

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest
import torch
from scipy import stats

from arctic_ref.model.config import ModelConfig, tiny_config
from arctic_ref.model.weights import random_weights
from arctic_ref.parallel import ParallelLayout, RankGroups, SoloComm
from arctic_ref.runner import EngineConfig, RequestResult, SamplingParams, SchedulerConfig, build_runner, run_requests
from arctic_ref.runner.drafters import Drafter, NgramDrafter, SuffixDrafter, ngram_draft
from arctic_ref.runner.engine import RequestDriver, SampleRecord, request_id
from arctic_ref.runner.prompts import builtin_prompts
from arctic_ref.runner.requests import RequestState
from arctic_ref.runner.scheduler import SimpleScheduler
from arctic_ref.runner.trace_forcing import TraceForcing, repeated_span_trace
from arctic_ref.spec.drafts import DraftRow
from arctic_ref.testing.drafter_doubles import JunkDrafter, OracleDrafter
from arctic_ref.testing.drafting.ngram_oracle import brute_force_ngram, check_ngram_rows
from arctic_ref.testing.drafting.replays import replay_by_id
from arctic_ref.testing.drafting.runner_replays import MisplacedNgramDrafter
from arctic_ref.types import ReqId

SOLO = SoloComm(0)
GROUPS = RankGroups(rank=0, tp=SOLO, sp=SOLO, shift=SOLO)
CONFIG = tiny_config()
WEIGHTS = random_weights(CONFIG, 0)
PROMPTS = builtin_prompts(CONFIG.vocab_size)


def _generate(
    drafter: Drafter | None,
    *,
    budget: int = 64,
    max_tokens: int = 32,
    config: ModelConfig = CONFIG,
    weights: dict[str, torch.Tensor] = WEIGHTS,
    prompts: Sequence[Sequence[int]] = PROMPTS,
    params: Sequence[SamplingParams] | None = None,
    max_num_seqs: int = 8,
) -> list[RequestResult]:
    engine = EngineConfig(
        model=config,
        layout=ParallelLayout(1, 1, 1),
        scheduler=SchedulerConfig(max_num_seqs=max_num_seqs, max_num_batched_tokens=budget),
    )
    runner = build_runner(engine, weights, GROUPS, drafter)
    return run_requests(
        runner, engine.scheduler, prompts, params or [SamplingParams(max_tokens=max_tokens)] * len(prompts)
    )


BASELINE = _generate(None)
REFERENCE = tuple(r.output_token_ids for r in BASELINE)
BY_PROMPT = {tuple(p): out for p, out in zip(PROMPTS, REFERENCE, strict=True)}


def _drafters() -> dict[str, Drafter]:
    return {
        "suffix": SuffixDrafter.build(1024),
        "suffix-k4": SuffixDrafter.build(1024, 4),
        "ngram-5": NgramDrafter(1024, 3),
        "ngram-1..4": NgramDrafter(1024, 3, min_n=1, max_n=4),
        "oracle-1": OracleDrafter(BY_PROMPT, 1, CONFIG.vocab_size, 1024),
        "oracle-3": OracleDrafter(BY_PROMPT, 3, CONFIG.vocab_size, 1024),
        "oracle-7": OracleDrafter(BY_PROMPT, 7, CONFIG.vocab_size, 1024),
        "junk": JunkDrafter(CONFIG.vocab_size, 1024, k=4),
    }


@pytest.mark.parametrize("budget", [64, 8], ids=["budget-64", "budget-8-starved"])
@pytest.mark.parametrize("name", list(_drafters()))
def test_greedy_speculation_is_lossless(name: str, budget: int) -> None:
    """docs/runner.md §6 item 1 in float64: identical outputs with every drafter; drafts were made
    (ngram with lookup 5 drafts only where a 5-gram repeats)."""
    results = _generate(_drafters()[name], budget=budget)
    assert [r.output_token_ids for r in results] == list(REFERENCE)
    drafts = sum(r.num_draft_tokens for r in results)
    accepted = sum(r.num_accepted_tokens for r in results)
    assert drafts > 0 and 0 <= accepted <= drafts
    if name.startswith("oracle"):
        correct = int(name.split("-")[1])
        assert accepted >= correct * sum(r.num_steps - 2 for r in results) // 2  # most steps accept a correct ones
    steps = sum(r.num_steps for r in results)
    assert steps <= sum(r.num_steps for r in BASELINE) or budget == 8 or name == "junk"


def test_outputs_stop_at_max_tokens_and_max_model_len() -> None:
    engine = EngineConfig(
        model=CONFIG,
        layout=ParallelLayout(1, 1, 1),
        scheduler=SchedulerConfig(max_num_batched_tokens=64, max_model_len=60),
    )
    runner = build_runner(engine, WEIGHTS, GROUPS, SuffixDrafter.build(60))
    results = run_requests(runner, engine.scheduler, PROMPTS, [SamplingParams(max_tokens=20)] * 4)
    for prompt, result in zip(PROMPTS, results, strict=True):
        assert len(result.output_token_ids) == min(20, 60 - len(prompt))
        assert result.output_token_ids == REFERENCE[result.prompt_index][: len(result.output_token_ids)]


def test_budget_starved_step_leaves_requests_out() -> None:
    """docs/runner.md §1.3 rule 5: budget 8, four decoders each needing 1 + 3 tokens: two wait."""
    scheduler = SimpleScheduler(SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=8))
    for i in range(4):
        scheduler.add(RequestState(req_id=ReqId(f"req-{i}"), prompt_token_ids=(1, 2), sampling=SamplingParams()))
    first = scheduler.schedule()
    assert [r.num_scheduled_tokens for r in first.scheduled] == [2, 2, 2, 2]
    scheduler.update(first, {r.req_id: [5] for r in first.scheduled}, {r.req_id: [6, 7, 8] for r in first.scheduled})
    second = scheduler.schedule()
    assert [(r.req_id, r.num_scheduled_tokens, r.spec_token_ids) for r in second.scheduled] == [
        ("req-0", 4, (6, 7, 8)),
        ("req-1", 4, (6, 7, 8)),
    ]


def _row(req: str, tokens: list[int], prompt: int, sampled: list[int]) -> DraftRow:
    return DraftRow(req_id=req, token_ids=tokens, num_prompt_tokens=prompt, sampled=sampled)


def test_suffix_cache_rules() -> None:
    """docs/runner.md §2.1: lazy start on the first sample, stop when absent, evict on return."""
    drafter = SuffixDrafter.build(1024)
    cache = drafter.cache
    drafter.propose([_row("a", [1, 2, 3], 3, [])])  # partial prefill: nothing started
    assert "a" not in cache.active_requests
    drafter.propose([_row("a", [1, 2, 3, 4], 3, [4]), _row("b", [5, 6, 7], 2, [7])])
    assert set(cache.active_requests) == {"a", "b"}
    drafter.propose([_row("b", [5, 6, 7, 8], 2, [8])])  # a absent this step: stopped, response cached
    assert "a" not in cache.active_requests and "a" in cache.cached_requests
    drafter.propose([_row("a", [1, 2, 3, 4, 9], 3, [9]), _row("b", [5, 6, 7, 8, 1], 2, [1])])
    assert "a" in cache.active_requests  # returned: old response evicted, restarted from its prompt
    assert drafter.propose([_row(str(i), [1, 2], 1, [2]) for i in range(65)]) == [[]] * 65  # disable_by_batch_size


def test_suffix_pattern_bug_132_is_caught() -> None:
    """A history where the doubled pattern (seed #132) drafts differently from the intended one;
    the runner's drafts stay lossless either way, so the test compares the drafts themselves."""
    history = [1, 2, 3, 4, 5, 1, 2, 3, 9, 9, 1, 2, 3]
    rows = [_row("r", history[:k], 3, [history[k - 1]]) for k in range(4, len(history) + 1)]

    def drafts(drafter: SuffixDrafter) -> list[list[int]]:
        return [drafter.propose([row])[0] for row in rows]

    intended = drafts(SuffixDrafter.build(1024))
    buggy = drafts(SuffixDrafter.build(1024, rules=replay_by_id("B1").rules))
    assert intended != buggy
    assert intended[-1] == [4, 5, 1, 2, 3, 9, 9, 1, 2, 3][: len(intended[-1])] or intended[-1][0] in (4, 9)


@pytest.mark.parametrize(
    ("tokens", "n", "k", "expected"),
    [([1, 2, 3, 4, 1, 2, 3], 2, 3, [4, 1, 2]), ([1, 3, 6, 2, 3, 4, 1, 2, 3], 1, 3, [6, 2, 3]), ([1, 1, 1], 2, 3, [])],
)
def test_ngram_vectors(tokens: list[int], n: int, k: int, expected: list[int]) -> None:
    """docs/runner.md §2.3 vectors (vLLM 0.9.x: leftmost match, no overlap with the suffix)."""
    assert ngram_draft(tokens, k, n, n) == expected


@pytest.mark.parametrize(("min_n", "max_n"), [(1, 1), (1, 3), (2, 4), (5, 5)])
def test_ngram_drafter_rows_and_the_v12_replay(min_n: int, max_n: int) -> None:
    """The batch n-gram drafter equals the brute-force oracle row by row, with rows without a sample
    between rows that have one; V-12 (drafts written at the valid-list index, read at the request
    index) fails the same check at a row that follows a row without a sample."""
    drafter = NgramDrafter(20, 3, min_n=min_n, max_n=max_n)
    assert check_ngram_rows(drafter, k=3, min_n=min_n, max_n=max_n, max_model_len=20).passed
    replay = check_ngram_rows(MisplacedNgramDrafter(drafter), k=3, min_n=min_n, max_n=max_n, max_model_len=20)
    assert not replay.passed and "vs the oracle's" in replay.detail


def test_ngram_against_brute_force() -> None:
    rng = np.random.default_rng(0)
    for _ in range(2000):
        tokens = rng.integers(0, 4, size=int(rng.integers(1, 30))).tolist()
        lo = int(rng.integers(1, 4))
        hi = lo + int(rng.integers(0, 3))
        k = int(rng.integers(1, 6))
        assert ngram_draft(tokens, k, lo, hi) == brute_force_ngram(tokens, k, lo, hi, overlap=False)


SMALL = ModelConfig(
    vocab_size=16,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=8,
)
SMALL_WEIGHTS = {k: v * (40.0 if "embed" in k or "lm_head" in k else 1.0) for k, v in random_weights(SMALL, 5).items()}
SMALL_PROMPT = [3, 1, 4, 1, 5]


def _exact_second_token() -> np.ndarray:
    """p(t₂) = Σ p(t₁)·p(t₂ | t₁) from the model's own logits at temperature 1 (float32 softmax)."""

    def dist(prefix: list[int]) -> np.ndarray:
        engine = EngineConfig(model=SMALL, layout=ParallelLayout(1, 1, 1), scheduler=SchedulerConfig())
        records: list[SampleRecord] = []
        run_requests(
            build_runner(engine, SMALL_WEIGHTS, GROUPS),
            engine.scheduler,
            [prefix],
            [SamplingParams(max_tokens=1)],
            records=records,
        )
        return torch.softmax(records[0].logits.float(), dim=-1).double().numpy()

    first = dist(SMALL_PROMPT)
    return sum(first[t] * dist([*SMALL_PROMPT, t]) for t in range(SMALL.vocab_size))


@pytest.mark.parametrize("name", ["none", "junk", "ngram-1"])
def test_sampled_output_keeps_the_target_distribution(name: str) -> None:
    """The second sampled token (which passes through verification when drafts exist) follows the
    exact p(t₂): chi-square goodness of fit, α = 1e-4 per drafter (3 tests; seeds fixed)."""
    drafter: Drafter | None = {
        "none": None,
        "junk": JunkDrafter(16, 1024, k=2, seed=1),
        "ngram-1": NgramDrafter(1024, 2, min_n=1, max_n=1),
    }[name]
    prompts = [SMALL_PROMPT] * 64
    seconds: Counter[int] = Counter()
    drafts = 0
    for batch in range(16):
        params = [SamplingParams(temperature=1.0, seed=batch * 64 + r, max_tokens=3) for r in range(64)]
        results = _generate(
            drafter, config=SMALL, weights=SMALL_WEIGHTS, prompts=prompts, params=params, budget=512, max_num_seqs=64
        )
        seconds.update(r.output_token_ids[1] for r in results)
        drafts += sum(r.num_draft_tokens for r in results)
    assert name == "none" or drafts > 0
    exact = _exact_second_token()
    expected = exact / exact.sum() * sum(seconds.values())  # float32 softmax sums to 1 ± 1e-7
    observed = np.array([seconds[t] for t in range(16)], dtype=float)
    keep = expected >= 5  # pool the rare cells into one
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    p_value = stats.chisquare(obs, exp).pvalue
    print(f"\n{name}: {int(sum(observed))} samples, {drafts} drafts, chi-square p = {p_value:.3g}")
    assert p_value > 1e-4


@pytest.mark.parametrize("name", ["none", "suffix", "junk"])
def test_trace_forcing_reproduces_the_trace_with_any_drafter(name: str) -> None:
    """docs/runner.md §7 replayed trace: every target choice forced to the trace, every forward real."""
    traces = tuple(repeated_span_trace(24, 40, CONFIG.vocab_size, seed) for seed in range(3))
    drafter = {"none": None, "suffix": SuffixDrafter.build(1024), "junk": JunkDrafter(CONFIG.vocab_size, 1024)}[name]
    engine = EngineConfig(
        model=CONFIG, layout=ParallelLayout(1, 1, 1), scheduler=SchedulerConfig(max_num_batched_tokens=64)
    )
    runner = build_runner(engine, WEIGHTS, GROUPS, drafter)
    runner.logits_processor = TraceForcing({request_id(i): trace for i, trace in enumerate(traces)})
    results = run_requests(runner, engine.scheduler, [t[:24] for t in traces], [SamplingParams(max_tokens=40)] * 3)
    assert [r.output_token_ids for r in results] == [t[24:] for t in traces]
    if name == "suffix":
        accepted = sum(r.num_accepted_tokens for r in results)
        assert accepted > 0 and sum(r.num_steps for r in results) < 3 * 40


def test_bad_prompts_are_refused_before_any_state_changes() -> None:
    """Out-of-vocabulary ids (named with their prompt index) and empty prompts raise ValueError; a
    refused arrival leaves the driver as it was."""
    config = tiny_config()
    engine = EngineConfig(model=config, layout=ParallelLayout(1, 1, 1))
    runner = build_runner(engine, random_weights(config, 0), GROUPS)
    with pytest.raises(ValueError, match=r"outside \[0, 512\): \(prompt, id\) \[\(1, 512\)\]"):
        RequestDriver.start(runner, engine.scheduler, [[1, 2], [3, 512]], [SamplingParams()] * 2)
    driver = RequestDriver.start(runner, engine.scheduler, [[1, 2]], [SamplingParams()])
    for bad in ([600], []):
        with pytest.raises(ValueError, match=r"outside|non-empty"):
            driver.add(bad, SamplingParams())
    assert list(driver.index.values()) == [0] and len(driver.scheduler.waiting) == 1
    assert driver.add([4, 5], SamplingParams()) == 1
