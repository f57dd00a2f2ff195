"""Draft selection between suffix decoding and the Arctic (MLP/LSTM) speculator, as the seed's
``propose_draft_token_ids`` intends it (docs/verification.md §4, rules U1–U2 and D1–D8; docs/runner.md §2.1,
§2.2 and §2.5).

This module is the only implementation of draft selection. The runner's drafters
(``arctic_ref.runner.drafters``) are thin adapters around ``propose_draft_token_ids``: they own a
suffix cache or a speculator forward, nothing else. The rule is a pipeline of small stages held in a
frozen ``DraftRules`` value; the bug replays (``arctic_ref.testing.drafting.replays``) swap one stage
for the seed's buggy version — an injected value, never a patch — and the same value is injected
into a running ``ReferenceRunner`` through its drafter.
"""

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from arctic_ref.spec.profile import MAX_SPEC_LEN
from arctic_ref.suffix.cache import SuffixDecodingCache, SuffixDecodingDraft

Method = Literal["suffix", "arctic", "mlp_speculator"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftRow:
    """One request of this step, after its tokens were appended."""

    req_id: Hashable
    token_ids: Sequence[int]
    """prompt + output so far (length N = num_tokens)."""
    num_prompt_tokens: int
    sampled: Sequence[int]
    """This step's emitted tokens; empty for partial prefills and discarded rows."""
    spec_ids: Sequence[int] = ()
    """Tokens already speculated past the true sequence ([] in the seed's call path)."""
    discarded: Sequence[int] = ()
    """A partial prefill's own sample, which the runner discards (vLLM samples every row, then drops
    these). No intended rule reads it; it is here so that a replay of a bug that leaks it (AI-16,
    V-14) has the value upstream had."""

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftConfig:
    """The seed's speculative configuration (``arctic_inference/vllm/config.py``,
    ``ArcticSpeculativeConfig``), validated once.

    Two knobs are easy to confuse. ``num_speculative_tokens`` (k) is the Arctic speculator's draft
    length and the hybrid's selection threshold (D5, D6). For ``method="suffix"`` the seed overwrites it
    with ``suffix_cache_max_depth`` and nothing reads it, so ``check_suffix_k`` refuses any other value
    wherever such a config would draft (``propose_draft_token_ids``, the runner's ``SuffixDrafter``).
    What caps a suffix draft, and what vLLM's own ``num_speculative_tokens`` means for suffix
    decoding, is ``suffix_max_spec_tokens`` (``arctic_ref.runner.vllm_drafting`` builds vLLM's
    semantics). The check is not in ``__post_init__`` so that a drafter that refuses a suffix config
    outright still says why (tests/runner/test_drafting.py)."""

    method: Method
    num_speculative_tokens: int
    """k: the Arctic speculator's draft length and the hybrid's threshold. For "suffix" it must equal
    ``suffix_cache_max_depth`` (the seed sets k = D; ``check_suffix_k``) and caps nothing: set
    ``suffix_max_spec_tokens``."""
    max_model_len: int
    """M."""
    enable_suffix_decoding: bool = False
    """Hybrid: suffix decoding beside the Arctic speculator (always on for "suffix")."""
    disable_by_batch_size: int | None = 64
    """D1's gate. 64 is the value every ArcticInference example and test configuration passes for
    "arctic" and "suffix" (README, tests/): the seed's ``ArcticSpeculativeConfig`` itself inherits
    vLLM 0.9's dataclass default, None (off). None or 0 turns the gate off."""
    suffix_cache_max_depth: int = 64
    """D, the suffix trees' depth (the seed's default)."""
    suffix_max_spec_factor: float = 1.0
    suffix_max_spec_offset: float = 0.0
    suffix_min_token_prob: float = 0.1
    suffix_max_spec_tokens: int = MAX_SPEC_LEN
    """The cap on a suffix draft: what vLLM calls ``num_speculative_tokens`` for suffix decoding.
    docs/runner.md §2.2 item 3 caps a suffix draft at ``suffix_max_spec_tokens`` (default 32, the
    runner's ``--num-spec-tokens`` for suffix decoding); docs/verification.md §4 D3 has no such cap. The
    default, MAX_SPEC_LEN, makes the two documents agree, so D3 is this rule at its default."""
    max_cached_requests: int = 100_000
    """How many responses the global suffix tree keeps (FIFO eviction; 0 keeps none). 100,000 is the
    seed's (docs/runner.md §2.1); vLLM 0.32's ``suffix_decoding_max_cached_requests`` defaults to
    10,000."""

    def __post_init__(self) -> None:
        if self.method not in ("suffix", "arctic", "mlp_speculator"):
            raise ValueError(f"method {self.method!r} is not suffix, arctic or mlp_speculator")
        if self.num_speculative_tokens < 0 or self.max_model_len < 1 or self.suffix_cache_max_depth < 1:
            raise ValueError(
                f"num_speculative_tokens({self.num_speculative_tokens}) >= 0, max_model_len({self.max_model_len}) >= 1 "
                f"and suffix_cache_max_depth({self.suffix_cache_max_depth}) >= 1 are required"
            )
        if not 1 <= self.suffix_max_spec_tokens <= MAX_SPEC_LEN:
            raise ValueError(f"suffix_max_spec_tokens({self.suffix_max_spec_tokens}) must be in [1, {MAX_SPEC_LEN}]")
        if self.max_cached_requests < 0:
            raise ValueError(f"max_cached_requests({self.max_cached_requests}) must be >= 0")

    @property
    def uses_suffix(self) -> bool:
        return self.method == "suffix" or self.enable_suffix_decoding

    @property
    def uses_arctic(self) -> bool:
        return self.method != "suffix"


def check_suffix_k(config: DraftConfig) -> None:
    """For "suffix", k must be D, as the seed sets it: a k meant as a cap on suffix drafts (vLLM's
    meaning) would otherwise be ignored and give ``suffix_max_spec_tokens``-token drafts."""
    if config.method == "suffix" and config.num_speculative_tokens != config.suffix_cache_max_depth:
        raise ValueError(
            f"method 'suffix' takes num_speculative_tokens({config.num_speculative_tokens}) == "
            f"suffix_cache_max_depth({config.suffix_cache_max_depth}), as the seed sets it; it caps nothing: "
            f"the suffix draft cap (vLLM's num_speculative_tokens) is suffix_max_spec_tokens"
            f"({config.suffix_max_spec_tokens})"
        )


@runtime_checkable
class ArcticProposer(Protocol):
    """The model-based proposer: row-independent and prefix-consistent (its first m tokens do not
    depend on ``num_predict`` ≥ m). It may return fewer than ``num_predict`` tokens (a speculator
    with ``n_predict`` heads returns at most that many: docs/runner.md §2.4 "Length")."""

    def propose(self, rows: Sequence[DraftRow], num_predict: int) -> list[list[int]]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SuffixQuery:
    """The arguments of one row's ``cache.speculate`` call (D3, D4)."""

    pattern: list[int]
    max_spec_tokens: int
    max_spec_offset: float


def suffix_query(row: DraftRow, config: DraftConfig) -> SuffixQuery | None:
    """D3/D4: pattern = the true sequence's last min(N, D) tokens then ``spec_ids``, cut to the last D;
    budget min(suffix_max_spec_tokens, MAX_SPEC_LEN − s, D, M − N − 1); offset o − s·(f + 1). None
    (no ``speculate`` call) when N ≥ M or the budget is ≤ 0 (docs/runner.md §2.2 items 1 and 3; a call
    with budget 0 would return an empty draft of score 0, so the drafts are the same either way)."""
    n, depth, s = row.num_tokens, config.suffix_cache_max_depth, len(row.spec_ids)
    if n >= config.max_model_len:
        return None
    pattern = (list(row.token_ids[max(0, n - depth) :]) + list(row.spec_ids))[-depth:]
    budget = min(config.suffix_max_spec_tokens, MAX_SPEC_LEN - s, depth, config.max_model_len - n - 1)
    if budget <= 0:
        return None
    offset = config.suffix_max_spec_offset - s * (config.suffix_max_spec_factor + 1)
    return SuffixQuery(pattern=pattern, max_spec_tokens=budget, max_spec_offset=offset)


def min_score(config: DraftConfig) -> float:
    """D5: suffix decoding wins a row iff its score ≥ this (0 for "suffix", k for hybrids)."""
    return 0.0 if config.method == "suffix" else float(config.num_speculative_tokens)


def arctic_budgets(rows: Sequence[DraftRow], config: DraftConfig, chosen: Sequence[bool]) -> list[int]:
    """D6: kᵢ = min(k, MAX_SPEC_LEN, M − N − 1) for participating rows (non-empty ``sampled``, not
    chosen by suffix), 0 for the others."""
    return [
        0
        if not row.sampled or took_suffix
        else max(0, min(config.num_speculative_tokens, MAX_SPEC_LEN, config.max_model_len - row.num_tokens - 1))
        for row, took_suffix in zip(rows, chosen, strict=True)
    ]


def arctic_drafts(drafter: ArcticProposer, rows: Sequence[DraftRow], budgets: Sequence[int]) -> list[list[int]]:
    """One drafter call with num_predict = max kᵢ over participating rows; row i keeps its first kᵢ."""
    participating = [i for i, k in enumerate(budgets) if k > 0]
    out: list[list[int]] = [[] for _ in rows]
    if not participating:
        return out
    proposed = drafter.propose([rows[i] for i in participating], max(budgets[i] for i in participating))
    for i, tokens in zip(participating, proposed, strict=True):
        out[i] = list(tokens[: budgets[i]])
    return out


def fed_tokens(row: DraftRow) -> Sequence[int]:
    """U1: the tokens a row appends to its suffix-cache response: this step's valid sample, never a
    partial prefill's discarded one (docs/runner.md §2.1)."""
    return row.sampled


def batch_gate(rows: Sequence[DraftRow], config: DraftConfig) -> tuple[bool, bool]:
    """D1, per drafter: (suffix decoding gated, Arctic gated). One gate for both: it fires when the
    step has more rows than ``disable_by_batch_size``, prefills included."""
    fires = batch_gate_fires(len(rows), config.disable_by_batch_size)
    return fires, fires


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftRules:
    """The stages of draft selection (the intended ones by default)."""

    suffix_feed: Callable[[DraftRow], Sequence[int]] = fed_tokens
    batch_gate: Callable[[Sequence[DraftRow], DraftConfig], tuple[bool, bool]] = batch_gate
    suffix_query: Callable[[DraftRow, DraftConfig], SuffixQuery | None] = suffix_query
    min_score: Callable[[DraftConfig], float] = min_score
    arctic_budgets: Callable[[Sequence[DraftRow], DraftConfig, Sequence[bool]], list[int]] = arctic_budgets
    arctic_drafts: Callable[[ArcticProposer, Sequence[DraftRow], Sequence[int]], list[list[int]]] = arctic_drafts


INTENDED_RULES = DraftRules()


def update_suffix_cache(
    cache: SuffixDecodingCache, rows: Sequence[DraftRow], feed: Callable[[DraftRow], Sequence[int]] = fed_tokens
) -> None:
    """U1: rows with new tokens (``feed``: the intended ``fed_tokens`` unless a replay swaps it)
    (re)start their request if needed and append them; U2: requests absent from this step's batch
    are stopped."""
    for row in rows:
        tokens = list(feed(row))
        if not tokens:
            continue
        if row.req_id not in cache.active_requests:
            if row.req_id in cache.cached_requests:
                cache.evict_cached_response(row.req_id)
            cache.start_request(row.req_id, list(row.token_ids[: row.num_prompt_tokens]))
        cache.add_active_response(row.req_id, tokens)
    present = {row.req_id for row in rows}
    for req_id in [r for r in cache.active_requests if r not in present]:
        cache.stop_request(req_id)


def new_suffix_cache(config: DraftConfig) -> SuffixDecodingCache:
    """An empty cache as the seed builds it: D = ``suffix_cache_max_depth``, at most
    ``max_cached_requests`` cached responses (100,000 by default: docs/runner.md §2.1)."""
    return SuffixDecodingCache(config.suffix_cache_max_depth, config.max_cached_requests)


def batch_gate_fires(num_rows: int, disable_by_batch_size: int | None) -> bool:
    """D1: the gate is on iff ``disable_by_batch_size`` is truthy (None and 0 mean off, as in the
    seed), and it fires when the step has more rows than that (prefills included)."""
    return bool(disable_by_batch_size) and num_rows > (disable_by_batch_size or 0)


@dataclass(slots=True, kw_only=True)
class DraftStats:
    """What selection did, accumulated over steps (owned by a drafter, read by tests and ``check``).
    A row counts once per step, by the draft it ends with."""

    steps: int = 0
    gated_steps: int = 0
    """Steps where D1's gate emptied every row."""
    suffix_rows: int = 0
    """Rows whose draft is their (non-empty) suffix draft."""
    arctic_rows: int = 0
    """Rows whose draft is their (non-empty) Arctic draft."""
    empty_rows: int = 0
    """Rows with a sample this step that got no draft."""
    draft_tokens: int = 0
    suffix_scores: list[float] = field(default_factory=list)
    """The score of every suffix draft computed (chosen or not)."""


def propose_draft_token_ids(
    rows: Sequence[DraftRow],
    config: DraftConfig,
    *,
    suffix_cache: SuffixDecodingCache | None,
    arctic_drafter: ArcticProposer | None,
    rules: DraftRules = INTENDED_RULES,
    stats: DraftStats | None = None,
) -> list[list[int]]:
    """Update the suffix cache (every step, also when the gate fires), then choose per row."""
    check_suffix_k(config)
    if config.uses_suffix and suffix_cache is None:
        raise ValueError(f"method {config.method!r} with suffix decoding needs a suffix_cache")
    if config.uses_arctic and arctic_drafter is None:
        raise ValueError(f"method {config.method!r} needs an arctic_drafter")
    cache = suffix_cache if config.uses_suffix else None  # not None whenever suffix decoding is on
    if cache is not None:
        update_suffix_cache(cache, rows, rules.suffix_feed)
    suffix_gated, arctic_gated = rules.batch_gate(rows, config)
    if suffix_gated and arctic_gated:
        if stats is not None:
            stats.steps += 1
            stats.gated_steps += 1
        return [[] for _ in rows]  # D1
    suffix: list[SuffixDecodingDraft | None] = [None] * len(rows)
    if cache is not None and not suffix_gated:
        for i, row in enumerate(rows):
            query = rules.suffix_query(row, config) if row.sampled else None  # D2
            if query is not None:
                suffix[i] = cache.speculate(
                    row.req_id,
                    query.pattern,
                    query.max_spec_tokens,
                    config.suffix_max_spec_factor,
                    query.max_spec_offset,
                    config.suffix_min_token_prob,
                )
    threshold = rules.min_score(config)
    chosen = [d is not None and d.score >= threshold for d in suffix]
    if config.method == "suffix":
        chosen = [bool(row.sampled) for row in rows]
    out = [list(d.token_ids) if d is not None and took else [] for d, took in zip(suffix, chosen, strict=True)]
    from_suffix = [bool(tokens) for tokens in out]
    if arctic_drafter is not None and config.uses_arctic and not arctic_gated:
        model = rules.arctic_drafts(arctic_drafter, rows, rules.arctic_budgets(rows, config, chosen))
        out = [mine if mine else theirs for mine, theirs in zip(out, model, strict=True)]  # D7
    if stats is not None:
        _count(stats, rows, suffix, from_suffix, out)
    return out


def _count(
    stats: DraftStats,
    rows: Sequence[DraftRow],
    suffix: Sequence[SuffixDecodingDraft | None],
    from_suffix: Sequence[bool],
    out: Sequence[list[int]],
) -> None:
    stats.steps += 1
    stats.suffix_rows += sum(from_suffix)
    stats.arctic_rows += sum(1 for took, tokens in zip(from_suffix, out, strict=True) if tokens and not took)
    stats.empty_rows += sum(1 for row, tokens in zip(rows, out, strict=True) if row.sampled and not tokens)
    stats.draft_tokens += sum(len(tokens) for tokens in out)
    stats.suffix_scores.extend(d.score for d in suffix if d is not None)


def suffix_config(
    max_model_len: int, *, max_spec_tokens: int = MAX_SPEC_LEN, disable_by_batch_size: int | None = 64
) -> DraftConfig:
    """The runner's suffix decoding (docs/runner.md §2.2): D = 64, k = D (the seed's rule for "suffix")."""
    return DraftConfig(
        method="suffix",
        num_speculative_tokens=64,
        max_model_len=max_model_len,
        suffix_max_spec_tokens=max_spec_tokens,
        disable_by_batch_size=disable_by_batch_size,
    )


def arctic_config(
    max_model_len: int, *, num_speculative_tokens: int = 3, hybrid: bool = False, disable_by_batch_size: int | None = 64
) -> DraftConfig:
    """The runner's Arctic speculator (docs/runner.md §2.4), with suffix decoding beside it when ``hybrid``
    (docs/runner.md §2.5 item 4: a row takes its suffix draft iff its score ≥ k)."""
    return DraftConfig(
        method="arctic",
        num_speculative_tokens=num_speculative_tokens,
        max_model_len=max_model_len,
        enable_suffix_decoding=hybrid,
        disable_by_batch_size=disable_by_batch_size,
    )
