"""The seed's draft-selection bugs (ArcticInference v0.0.9; docs/verification.md §4, docs/runner.md §2.6) and
HEAD's suffix-feed and gate bugs (bugs.md AI-16, AI-17), each reintroduced as one ``DraftRules`` value: a stage of ``propose_draft_token_ids`` swapped for the
upstream deviation, never a patch.

The same value is injected into the selection suite (``check_draft_selection(replay.rules)``) and
into a running ``ReferenceRunner`` (``SuffixDrafter(config, replay.rules)`` or
``SpeculatorDrafter(config, speculator, replay.rules)``), so what the suite certifies is what the
runner runs.
"""

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from arctic_ref.spec.drafts import (
    INTENDED_RULES,
    ArcticProposer,
    DraftConfig,
    DraftRow,
    DraftRules,
    SuffixQuery,
    arctic_drafts,
    batch_gate,
    batch_gate_fires,
)
from arctic_ref.spec.profile import MAX_SPEC_LEN


def duplicated_pattern(row: DraftRow, config: DraftConfig) -> SuffixQuery | None:
    """B1: the sampled ids are written again after the true sequence; clamps use N + ℓ."""
    seq = list(row.token_ids) + list(row.sampled)
    n, depth = len(seq), config.suffix_cache_max_depth
    if n >= config.max_model_len:
        return None
    budget = min(config.suffix_max_spec_tokens, MAX_SPEC_LEN, depth, config.max_model_len - n - 1)
    return SuffixQuery(
        pattern=seq[max(0, n - depth) :], max_spec_tokens=budget, max_spec_offset=config.suffix_max_spec_offset
    )


def wipe_out(drafter: ArcticProposer, rows: Sequence[DraftRow], budgets: Sequence[int]) -> list[list[int]]:
    """B2: any non-participating row (it chose suffix, is a partial prefill, or has no room left)
    empties every row's Arctic drafts. This is also the runner's former ``step_wide_blanking``
    fixture, written as the stage it replaces."""
    if any(k == 0 for k in budgets):
        return [[] for _ in rows]
    return arctic_drafts(drafter, rows, budgets)


def batch_global_budget(rows: Sequence[DraftRow], config: DraftConfig, chosen: Sequence[bool]) -> list[int]:
    """B3: one budget for the whole batch, the minimum over rows (with N + ℓ); ≤ 0 empties all."""
    budget = min(
        (
            min(
                config.num_speculative_tokens,
                MAX_SPEC_LEN,
                config.max_model_len - row.num_tokens - len(row.sampled) - 1,
            )
            for row in rows
        ),
        default=0,
    )
    return [max(0, budget) if row.sampled and not took else 0 for row, took in zip(rows, chosen, strict=True)]


def batch_min_lengths(rows: Sequence[DraftRow], config: DraftConfig, chosen: Sequence[bool]) -> list[int]:
    """B3 as docs/runner.md §2.4 words it (the runner's former ``batch_min_lengths`` fixture): one
    batch-wide minimum of M − N − 1 over the rows with a sample (the true N, no ℓ)."""
    shortest = min(
        (config.max_model_len - row.num_tokens - 1 for row in rows if row.sampled),
        default=config.num_speculative_tokens,
    )
    k = max(0, min(config.num_speculative_tokens, MAX_SPEC_LEN, shortest))
    return [k if row.sampled and not took else 0 for row, took in zip(rows, chosen, strict=True)]


def inverted_min_score(config: DraftConfig) -> float:
    """B4 (divergent copy): one of the two assignments with its condition inverted."""
    return float(config.num_speculative_tokens) if config.method == "suffix" else 0.0


def literal_double_assignment(config: DraftConfig) -> float:
    """B4 (literal seed): two assignments with opposite-looking conditions and equal results."""
    score = 0.0 if config.method == "suffix" else float(config.num_speculative_tokens)
    if config.method != "suffix":
        score = float(config.num_speculative_tokens)
    return score


def fed_with_discarded(row: DraftRow) -> Sequence[int]:
    """AI-16: HEAD's sync path feeds a partial prefill's discarded sample into the suffix cache, so
    the request starts early and its cached response begins with tokens it never emitted."""
    return row.sampled or row.discarded


def suffix_ignores_gate(rows: Sequence[DraftRow], config: DraftConfig) -> tuple[bool, bool]:
    """AI-17: HEAD's suffix drafting ignores ``disable_by_batch_size``; the Arctic drafter is still
    gated."""
    return False, batch_gate(rows, config)[1]


def gate_counts_decoding_rows(rows: Sequence[DraftRow], config: DraftConfig) -> tuple[bool, bool]:
    """AI-17 (the counting half): the worker counts only the rows with a sample, where the
    scheduler counts every scheduled row, so a step with prefills escapes the gate."""
    fires = batch_gate_fires(sum(1 for row in rows if row.sampled), config.disable_by_batch_size)
    return fires, fires


@dataclass(frozen=True, slots=True, kw_only=True)
class BugReplay:
    """One seed bug as an injectable rule set."""

    id: str
    """The catalogue id (bugs.md / docs/verification.md §4); variants add a suffix (``B3-runner``)."""
    upstream: str
    rules: DraftRules
    must_fail: bool = True
    """False for a replay that is observationally inert: every check must pass it."""


BUG_REPLAYS: Final = (
    BugReplay(
        id="B1",
        upstream="ArcticInference #132 (319edfc), fixed by #162 (e1d1ff2): pattern duplication",
        rules=replace(INTENDED_RULES, suffix_query=duplicated_pattern),
    ),
    BugReplay(
        id="B2",
        upstream="ArcticInference #132: hybrid empty-row wipe-out (the runner's step-wide blanking)",
        rules=replace(INTENDED_RULES, arctic_drafts=wipe_out),
    ),
    BugReplay(
        id="B3",
        upstream="ArcticInference #132: batch-global max_spec_tokens",
        rules=replace(INTENDED_RULES, arctic_budgets=batch_global_budget),
    ),
    BugReplay(
        id="B3-runner",
        upstream="ArcticInference #132: batch-wide cut of the Arctic length (docs/runner.md §2.4)",
        rules=replace(INTENDED_RULES, arctic_budgets=batch_min_lengths),
    ),
    BugReplay(
        id="B4",
        upstream="ArcticInference #132, simplified by #195: min_score assigned twice (divergent copy)",
        rules=replace(INTENDED_RULES, min_score=inverted_min_score),
    ),
    BugReplay(
        id="B4-literal",
        upstream="ArcticInference v0.0.9: the literal double assignment (inert)",
        rules=replace(INTENDED_RULES, min_score=literal_double_assignment),
        must_fail=False,
    ),
    BugReplay(
        id="AI-16",
        upstream="ArcticInference HEAD: the sync path feeds discarded partial-prefill samples into the suffix cache",
        rules=replace(INTENDED_RULES, suffix_feed=fed_with_discarded),
    ),
    BugReplay(
        id="AI-17",
        upstream="ArcticInference HEAD: suffix drafting ignores disable_by_batch_size",
        rules=replace(INTENDED_RULES, batch_gate=suffix_ignores_gate),
    ),
    BugReplay(
        id="AI-17-rows",
        upstream="ArcticInference HEAD: scheduler and worker count different rows for the gate",
        rules=replace(INTENDED_RULES, batch_gate=gate_counts_decoding_rows),
    ),
)


def replay_by_id(replay_id: str) -> BugReplay:
    """The replay with this id; ValueError naming the known ids otherwise."""
    for replay in BUG_REPLAYS:
        if replay.id == replay_id:
            return replay
    raise ValueError(f"unknown bug replay {replay_id!r}; known: {', '.join(r.id for r in BUG_REPLAYS)}")
