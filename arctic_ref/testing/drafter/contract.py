"""The bodies of the drafter component's checks, under the protocol the runner uses (``propose(rows)``, or
``propose_with_hidden(rows, sample_hidden, num_drafts)``): the selection rules that apply to any
drafter (docs/verification.md §4 D2, D8) and greedy losslessness in the runner (docs/runner.md §6 item 1)."""

import random
from collections.abc import Callable
from typing import Any

import torch

from arctic_ref.model.config import tiny_config
from arctic_ref.model.weights import random_weights
from arctic_ref.parallel.comm import RankGroups, SoloComm
from arctic_ref.parallel.layout import ParallelLayout
from arctic_ref.runner.drafters import Drafter, HiddenStateDrafter
from arctic_ref.runner.engine import EngineConfig, build_runner, run_requests
from arctic_ref.runner.prompts import builtin_prompts
from arctic_ref.runner.requests import SamplingParams
from arctic_ref.runner.scheduler import SchedulerConfig
from arctic_ref.spec.drafts import DraftRow
from arctic_ref.spec.profile import MAX_SPEC_LEN
from arctic_ref.testing.check import Verdict

LOSSLESS_MAX_MODEL_LEN = 256
"""The runner's max_model_len in the losslessness checks."""
BOUNDS_MAX_MODEL_LEN = 40
"""The bounds check's max_model_len: short, so rows run into it."""
LOSSLESS_MAX_TOKENS = 32


def _propose(drafter: Any, rows: list[DraftRow]) -> list[list[int]]:
    if isinstance(drafter, HiddenStateDrafter):
        hidden = torch.zeros(len(rows), tiny_config().hidden_size, dtype=torch.float64)
        return drafter.propose_with_hidden(rows, hidden, [0] * len(rows))
    return drafter.propose(rows)  # type: ignore[no-any-return]


def drafter_bounds(
    make: Callable[[int], Drafter | HiddenStateDrafter],
    *,
    steps: int = 300,
    seed: int = 0,
    one_past_known: str = "",
) -> Verdict:
    """D2 and D8 on seeded random batches: one list per row, [] for rows without a sample, every
    draft ≤ min(32, M − N − 1) ids in the vocabulary; M = ``BOUNDS_MAX_MODEL_LEN``, and rows grow
    up to M − 1 before they restart. ``one_past_known``: the catalogue id that explains a draft of
    exactly M − N ids (vLLM's n-gram proposer, V-23), which vLLM's scheduler cuts to M − N − 1; such
    drafts are counted and the verdict, if nothing else fails, is a known difference."""
    rng = random.Random(seed)
    vocab = tiny_config().vocab_size
    max_model_len = BOUNDS_MAX_MODEL_LEN
    drafter = make(max_model_len)
    histories: dict[str, list[int]] = {}
    one_past: list[str] = []
    for step in range(steps):
        rows = []
        for r in range(rng.randint(1, 6)):
            req = f"r{r}"
            tokens = histories.setdefault(req, [rng.randrange(1, 20) for _ in range(rng.randint(1, 8))])
            if len(tokens) >= max_model_len - 1:
                tokens[:] = tokens[:4]
            sampled = [] if rng.random() < 0.2 else [rng.choice(tokens[-4:])]
            tokens.extend(sampled)
            rows.append(
                DraftRow(req_id=req, token_ids=list(tokens), num_prompt_tokens=min(4, len(tokens)), sampled=sampled)
            )
        drafts = _propose(drafter, rows)
        problem = ""
        if not isinstance(drafts, list) or len(drafts) != len(rows):
            problem = f"{len(rows)} rows but the drafter returned {drafts!r}"
        else:
            for row, draft in zip(rows, drafts, strict=True):
                limit = max(0, min(MAX_SPEC_LEN, max_model_len - row.num_tokens - 1))
                if not row.sampled and draft:
                    problem = f"{row.req_id} has no sample this step but got draft {draft} (D2)"
                elif one_past_known and len(draft) == max_model_len - row.num_tokens > limit:
                    one_past.append(f"step {step}: {row.req_id} (N = {row.num_tokens}): {len(draft)} ids")
                elif len(draft) > limit:
                    problem = (
                        f"{row.req_id} (N = {row.num_tokens}, M = {max_model_len}): draft {draft} has {len(draft)} "
                        f"ids, more than min({MAX_SPEC_LEN}, M - N - 1) = {limit} (D8)"
                    )
                elif any(not 0 <= int(t) < vocab for t in draft):
                    outside = [int(t) for t in draft if not 0 <= int(t) < vocab]
                    problem = f"{row.req_id}: draft {draft} has ids {outside} outside the vocabulary [0, {vocab}) (D8)"
                if problem:
                    break
        if problem:
            return Verdict(
                passed=False,
                compared=f"drafts of {step + 1} seeded steps",
                detail=f"step {step}: {problem}",
                replay=f"drafter_bounds(make, seed={seed}), step {step}",
            )
    compared = f"drafts of {steps} seeded steps (1-6 rows, partial prefills, M = {max_model_len})"
    if one_past:
        return Verdict(
            passed=False,
            compared=compared,
            count=steps,
            detail=f"{len(one_past)} drafts of M - N ids, one past min(32, M - N - 1), which vLLM's scheduler "
            f"cuts (D8); the first: {one_past[0]}",
            known_difference=one_past_known,
            replay=f"drafter_bounds(make, seed={seed})",
        )
    return Verdict(passed=True, compared=compared, count=steps)


def drafter_lossless(make: Callable[[int], Drafter | HiddenStateDrafter], budget: int) -> Verdict:
    """The built-in prompts, greedy, float64, tiny model: outputs with the drafter equal the outputs
    without, token for token, at ``budget`` tokens per step."""
    model = tiny_config()
    weights = random_weights(model, 0)
    solo = SoloComm(0)
    groups = RankGroups(rank=0, tp=solo, sp=solo, shift=solo)
    scheduler = SchedulerConfig(max_num_batched_tokens=budget, max_model_len=LOSSLESS_MAX_MODEL_LEN)
    engine = EngineConfig(model=model, layout=ParallelLayout(1, 1, 1), scheduler=scheduler)
    prompts = builtin_prompts(model.vocab_size)
    params = [SamplingParams(max_tokens=LOSSLESS_MAX_TOKENS)] * len(prompts)
    base = run_requests(build_runner(engine, weights, groups), scheduler, prompts, params)
    mine = run_requests(build_runner(engine, weights, groups, make(LOSSLESS_MAX_MODEL_LEN)), scheduler, prompts, params)
    drafted = sum(r.num_draft_tokens for r in mine)
    accepted = sum(r.num_accepted_tokens for r in mine)
    compared = (
        f"greedy outputs of {len(prompts)} prompts x {LOSSLESS_MAX_TOKENS} tokens with and without your drafts "
        f"(budget {budget}; {drafted} drafts, {accepted} accepted)"
    )
    for i, (a, b) in enumerate(zip(base, mine, strict=True)):
        if a.output_token_ids != b.output_token_ids:
            at = next(
                (j for j, (x, y) in enumerate(zip(a.output_token_ids, b.output_token_ids, strict=False)) if x != y),
                None,
            )
            return Verdict(
                passed=False,
                compared=compared,
                detail=f"prompt {i}, token {at}: without drafts {list(a.output_token_ids)} vs with {list(b.output_token_ids)}",
            )
    return Verdict(passed=True, compared=compared, count=sum(len(r.output_token_ids) for r in mine))
