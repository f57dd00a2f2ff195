"""The drafting component: checks of arctic_ref's own drafting, which take no implementation of
yours (the ``drafter`` component checks a drafter of yours): the selection suite and the seed's bug
replays, the replays in a running runner, the suffix cache rules, the speculators and n-gram rules."""

import random

import torch

from arctic_ref.check_options import CheckOptions
from arctic_ref.runner.drafters import NgramDrafter, SpeculatorDrafter, SuffixDrafter, ngram_draft, ngram_draft_longest
from arctic_ref.runner.speculator import (
    ArcticSpeculator,
    SpeculatorConfig,
    propose_literal,
    select_hidden_rows,
    speculator_for,
    speculator_weights,
)
from arctic_ref.spec.drafts import INTENDED_RULES, DraftRow, arctic_config
from arctic_ref.testing.check import Check, CheckRow, Verdict, checks_from_rows
from arctic_ref.testing.drafting.in_runner import check_replays_in_runner
from arctic_ref.testing.drafting.ngram_oracle import brute_force_ngram, check_ngram_rows
from arctic_ref.testing.drafting.replays import BUG_REPLAYS, replay_by_id
from arctic_ref.testing.drafting.runner_replays import RUNNER_REPLAYS, MisplacedNgramDrafter
from arctic_ref.testing.drafting.selection import check_draft_selection


def draft_selection() -> Verdict:
    """Intended rules pass every check; each seed bug replay fails a check named by it."""
    intended = [c for c in check_draft_selection() if not c.passed]
    uncaught = [
        r.id
        for r in BUG_REPLAYS
        if r.must_fail and not any(not c.passed and r.id in c.replays for c in check_draft_selection(r.rules))
    ]
    problems = [f"intended fails {c.id}" for c in intended] + [f"{rid} not caught" for rid in uncaught]
    return Verdict(
        compared="draft selection and bug replays (B1-B4, AI-16, AI-17)",
        passed=not problems,
        count=len(BUG_REPLAYS),
        figures={"replays caught": str(sum(1 for r in BUG_REPLAYS if r.must_fail) - len(uncaught))},
        detail="; ".join(problems),
    )


def draft_replays_in_runner() -> Verdict:
    """Each replay's ``DraftRules`` injected into a running ``ReferenceRunner`` (suffix and hybrid
    drafters): its drafts differ from the intended run's at some step (B4-literal: never), and greedy
    output stays lossless. Each runner replay's ``RunnerStages`` (V-11, V-14) breaks losslessness or
    D2 under both drafters."""
    results = check_replays_in_runner(BUG_REPLAYS, runner_replays=RUNNER_REPLAYS)
    stage_ids = {r.id for r in RUNNER_REPLAYS}
    rules = [r for r in results if r.replay_id not in stage_ids]
    stages = [r for r in results if r.replay_id in stage_ids]
    problems = [f"{r.replay_id} under {r.drafter} not lossless" for r in rules if not r.lossless]
    problems += [f"{r.replay_id} changed drafts ({r.first_difference})" for r in rules if not r.must_fail and r.differs]
    problems += [f"{r.replay_id} under {r.drafter} broke no runner rule" for r in stages if not r.caught_by_rules]
    caught = {r.replay_id for r in rules if r.must_fail and r.differs}
    problems += [f"{r.id} not caught in the runner" for r in BUG_REPLAYS if r.must_fail and r.id not in caught]
    first = {r.replay_id: r.first_difference.split(":")[0] for r in rules if r.differs and r.drafter == "hybrid"}
    return Verdict(
        compared="draft replays in the runner (suffix, hybrid): caught, lossless; V-11 and V-14 caught by its rules",
        count=len(results),
        passed=not problems,
        detail="; ".join(problems),
        figures={
            "caught": f"{len(caught)}/{sum(r.must_fail for r in BUG_REPLAYS)}",
            "runner replays caught": f"{len({r.replay_id for r in stages if r.caught_by_rules})}/{len(RUNNER_REPLAYS)}",
            **{f"{rid} at": where for rid, where in first.items()},
        },
    )


def _draft_row(req: str, tokens: list[int], prompt: int, sampled: list[int]) -> DraftRow:
    return DraftRow(req_id=req, token_ids=tokens, num_prompt_tokens=prompt, sampled=sampled)


def suffix_runner_rules() -> Verdict:
    """docs/runner.md §2.1 (lazy start, stop when absent, evict on return) and §2.2 (pattern, max_spec),
    with the seed's doubled-pattern bug (#132) as a fixture that must be caught."""
    problems = []
    drafter = SuffixDrafter.build(1024)
    cache = drafter.cache
    drafter.propose([_draft_row("a", [1, 2, 3], 3, [])])
    if "a" in cache.active_requests:
        problems.append("partial prefill started the request")
    drafter.propose([_draft_row("a", [1, 2, 3, 4], 3, [4]), _draft_row("b", [5, 6, 7], 2, [7])])
    drafter.propose([_draft_row("b", [5, 6, 7, 8], 2, [8])])
    if "a" in cache.active_requests or "a" not in cache.cached_requests:
        problems.append("absent request not stopped")
    drafter.propose([_draft_row("a", [1, 2, 3, 4, 9], 3, [9])])
    if "a" not in cache.active_requests:
        problems.append("returning request not restarted")
    near_end = SuffixDrafter.build(12)
    near_end.propose([_draft_row("c", [1, 2, 3, 1, 2, 3, 1, 2, 3], 3, [3])])
    long = near_end.propose([_draft_row("c", [1, 2, 3, 1, 2, 3, 1, 2, 3, 1], 3, [1])])[0]
    if len(long) > 12 - 10 - 1:
        problems.append(f"draft {long} reaches past max_model_len - 1")
    history = [1, 2, 3, 4, 5, 1, 2, 3, 9, 9, 1, 2, 3]
    rows = [_draft_row("r", history[:k], 3, [history[k - 1]]) for k in range(4, len(history) + 1)]
    intended, buggy = SuffixDrafter.build(1024), SuffixDrafter.build(1024, rules=replay_by_id("B1").rules)
    if [intended.propose([r])[0] for r in rows] == [buggy.propose([r])[0] for r in rows]:
        problems.append("the #132 doubled-pattern fixture is not caught")
    return Verdict(
        compared="suffix-runner: cache rules, pattern, max_spec, #132 fixture",
        count=6,
        passed=not problems,
        detail="; ".join(problems),
    )


def speculator_checks() -> Verdict:
    """docs/runner.md §2.4–2.5, §2.3: batched speculators ≡ the literal per-row loop (float64), the
    hidden-row example, the seed's batch-wide cut and hybrid blanking caught by their checks, and
    both n-gram rules against a brute-force matcher."""
    problems, compared = [], 0
    g = torch.Generator().manual_seed(0)
    for config in (
        SpeculatorConfig(kind="mlp"),
        SpeculatorConfig(kind="mlp", tie_weights=True),
        SpeculatorConfig(kind="lstm", tie_weights=True),
    ):
        speculator = ArcticSpeculator(config, speculator_weights(config, 1))
        hidden = torch.randn(16, config.input_dim, dtype=torch.float64, generator=g)
        tokens = torch.randint(0, config.vocab_size, (16,), generator=g)
        compared += 16
        if speculator.propose(hidden, tokens, 3).tolist() != propose_literal(speculator, hidden, tokens.tolist(), 3):
            problems.append(f"{config.kind} tied={config.tie_weights}: batched != literal")
    if select_hidden_rows(torch.zeros(8, 4), [3, 0, 2], [[1, 2], [3], [4, 5, 6]]) != [1, 4, 7]:
        problems.append("hidden-row example")
    rows = [
        _draft_row("a", list(range(98)), 2, [7]),
        _draft_row("b", list(range(10)), 2, [8]),
        _draft_row("c", list(range(12)), 2, []),
    ]
    hidden = torch.randn(3, 128, dtype=torch.float64, generator=g)
    speculator = speculator_for(128, 512, "mlp", 1, torch.float64)
    lengths = {
        replay: [
            len(d)
            for d in SpeculatorDrafter(arctic_config(100), speculator, rules).propose_with_hidden(
                rows, hidden, [0, 0, 0]
            )
        ]
        for replay, rules in (("intended", INTENDED_RULES), ("B3-runner", replay_by_id("B3-runner").rules))
    }
    if lengths["intended"] != [1, 3, 0] or lengths["B3-runner"] == lengths["intended"]:
        problems.append(f"per-row cut or its batch-wide fixture: {lengths}")
    hybrid = arctic_config(1024, hybrid=True)
    repeated = _draft_row("r", [7, 8, 9, 10] * 6, 23, [10])  # the prompt repeats: its suffix score reaches k
    rows = [repeated, _draft_row("s", [501, 502, 503, 504], 2, [504]), _draft_row("t", list(range(12)), 2, [])]
    hidden = torch.randn(3, 128, dtype=torch.float64, generator=g)
    per_row, blanked = (
        SpeculatorDrafter(hybrid, speculator, rules).propose_with_hidden(rows, hidden, [0, 0, 0])
        for rules in (INTENDED_RULES, replay_by_id("B2").rules)
    )
    if not per_row[0] or not per_row[1] or blanked[1] or per_row[0] != blanked[0]:
        problems.append(f"hybrid per-row choice or its blanking fixture: {per_row} vs {blanked}")
    rng = random.Random(0)
    for _ in range(500):
        tokens_list = [rng.randrange(3) for _ in range(rng.randrange(1, 25))]
        lo = rng.randrange(1, 4)
        hi = lo + rng.randrange(3)
        compared += 2
        for rule, overlap in ((ngram_draft, False), (ngram_draft_longest, True)):
            if rule(tokens_list, 3, lo, hi) != brute_force_ngram(tokens_list, 3, lo, hi, overlap=overlap):
                problems.append(f"{rule.__name__}({tokens_list}, {lo}..{hi})")
    ngram = NgramDrafter(20, 3, min_n=1, max_n=3)
    ngram_rows = check_ngram_rows(ngram, k=3, min_n=1, max_n=3, max_model_len=20)
    misplaced = check_ngram_rows(MisplacedNgramDrafter(ngram), k=3, min_n=1, max_n=3, max_model_len=20)
    compared += 2
    if not ngram_rows.passed or misplaced.passed:
        problems.append(
            f"n-gram drafter row by row: {ngram_rows.detail or 'passes'}; its V-12 replay: {misplaced.detail or 'not caught'}"
        )
    return Verdict(
        compared="speculator: batched = literal, hidden rows, fixtures, n-gram rules (V-12 caught)",
        count=compared,
        passed=not problems,
        detail="; ".join(problems[:5]),
    )


def checks(options: CheckOptions) -> list[Check]:
    """arctic_ref's own drafting: the selection rules and the seed's bug replays, the replays in a
    running runner, the suffix cache rules and the speculators."""
    rows: list[CheckRow] = [
        (
            "draft-selection",
            "draft selection and bug replays (B1-B4, AI-16, AI-17)",
            "the intended selection rules pass every check; each seed bug replay fails a check named by it",
            draft_selection,
        ),
        (
            "draft-runner",
            "draft replays in the runner (suffix, hybrid): caught, lossless; V-11 and V-14 caught by its rules",
            "each replay injected into a running runner changes drafts at some step and stays lossless",
            draft_replays_in_runner,
        ),
        (
            "suffix-runner",
            "suffix-runner: cache rules, pattern, max_spec, #132 fixture",
            "the runner's suffix drafter follows docs/runner.md §2's cache rules, pattern and budget",
            suffix_runner_rules,
        ),
        (
            "speculator",
            "speculator: batched = literal, hidden rows, fixtures, n-gram rules (V-12 caught)",
            "the MLP/LSTM speculators, batched equal literal; the n-gram rules row by row",
            speculator_checks,
        ),
    ]
    return checks_from_rows("drafting", rows)
