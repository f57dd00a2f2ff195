"""Draft selection between suffix decoding and the Arctic (MLP/LSTM) speculator, as the seed's
``propose_draft_token_ids`` intends it (spec verification.md §4, rules U1–U2 and D1–D8).

The rule is a pipeline of small stages held in a frozen ``DraftRules`` value; ``propose_draft_token_ids``
runs the intended stages. The test suite's bug replays (``arctic_ref.testing.bug_replays``) swap one
stage for the seed's buggy version — an injected value, never a patch.
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

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftConfig:
    """The seed's speculative configuration (``arctic_inference/vllm/config.py``)."""

    method: Method
    num_speculative_tokens: int
    """k; for "suffix" the seed uses ``suffix_cache_max_depth``."""
    max_model_len: int
    """M."""
    enable_suffix_decoding: bool = False
    """Hybrid: suffix decoding beside the Arctic speculator (always on for "suffix")."""
    disable_by_batch_size: int | None = 64
    suffix_cache_max_depth: int = 64
    suffix_max_spec_factor: float = 1.0
    suffix_max_spec_offset: float = 0.0
    suffix_min_token_prob: float = 0.1

    def __post_init__(self) -> None:
        if self.method not in ("suffix", "arctic", "mlp_speculator"):
            raise ValueError(f"method {self.method!r} is not suffix, arctic or mlp_speculator")
        if self.num_speculative_tokens < 0 or self.max_model_len < 1 or self.suffix_cache_max_depth < 1:
            raise ValueError(
                f"num_speculative_tokens({self.num_speculative_tokens}) >= 0, max_model_len({self.max_model_len}) >= 1 "
                f"and suffix_cache_max_depth({self.suffix_cache_max_depth}) >= 1 are required"
            )

    @property
    def uses_suffix(self) -> bool:
        return self.method == "suffix" or self.enable_suffix_decoding

    @property
    def uses_arctic(self) -> bool:
        return self.method != "suffix"


@runtime_checkable
class ArcticDrafter(Protocol):
    """The model-based drafter: row-independent and prefix-consistent (its first m tokens do not
    depend on ``num_predict`` ≥ m)."""

    def propose(self, rows: Sequence[DraftRow], num_predict: int) -> list[list[int]]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SuffixQuery:
    """The arguments of one row's ``cache.speculate`` call (D3, D4)."""

    pattern: list[int]
    max_spec_tokens: int
    max_spec_offset: float


def suffix_query(row: DraftRow, config: DraftConfig) -> SuffixQuery | None:
    """D3/D4: pattern = the true sequence's last min(N, D) tokens then ``spec_ids``, cut to the last D;
    budget min(MAX_SPEC_LEN − s, D, M − N − 1); offset o − s·(f + 1). None when N ≥ M."""
    n, depth, s = row.num_tokens, config.suffix_cache_max_depth, len(row.spec_ids)
    if n >= config.max_model_len:
        return None
    pattern = (list(row.token_ids[max(0, n - depth) :]) + list(row.spec_ids))[-depth:]
    budget = min(MAX_SPEC_LEN - s, depth, config.max_model_len - n - 1)
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


def arctic_drafts(drafter: ArcticDrafter, rows: Sequence[DraftRow], budgets: Sequence[int]) -> list[list[int]]:
    """One drafter call with num_predict = max kᵢ over participating rows; row i keeps its first kᵢ."""
    participating = [i for i, k in enumerate(budgets) if k > 0]
    out: list[list[int]] = [[] for _ in rows]
    if not participating:
        return out
    proposed = drafter.propose([rows[i] for i in participating], max(budgets[i] for i in participating))
    for i, tokens in zip(participating, proposed, strict=True):
        out[i] = list(tokens[: budgets[i]])
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftRules:
    """The stages of draft selection (the intended ones by default)."""

    suffix_query: Callable[[DraftRow, DraftConfig], SuffixQuery | None] = suffix_query
    min_score: Callable[[DraftConfig], float] = min_score
    arctic_budgets: Callable[[Sequence[DraftRow], DraftConfig, Sequence[bool]], list[int]] = arctic_budgets
    arctic_drafts: Callable[[ArcticDrafter, Sequence[DraftRow], Sequence[int]], list[list[int]]] = arctic_drafts


INTENDED_RULES = DraftRules()


def update_suffix_cache(cache: SuffixDecodingCache, rows: Sequence[DraftRow]) -> None:
    """U1: rows with new tokens (re)start their request if needed and append them; U2: requests
    absent from this step's batch are stopped."""
    for row in rows:
        if not row.sampled:
            continue
        if row.req_id not in cache.active_requests:
            if row.req_id in cache.cached_requests:
                cache.evict_cached_response(row.req_id)
            cache.start_request(row.req_id, list(row.token_ids[: row.num_prompt_tokens]))
        cache.add_active_response(row.req_id, list(row.sampled))
    present = {row.req_id for row in rows}
    for req_id in [r for r in cache.active_requests if r not in present]:
        cache.stop_request(req_id)


@dataclass(slots=True, kw_only=True)
class DraftStats:
    """Which method each row used this step."""

    suffix_rows: int = 0
    arctic_rows: int = 0
    suffix_scores: list[float] = field(default_factory=list)


def propose_draft_token_ids(
    rows: Sequence[DraftRow],
    config: DraftConfig,
    *,
    suffix_cache: SuffixDecodingCache | None,
    arctic_drafter: ArcticDrafter | None,
    rules: DraftRules = INTENDED_RULES,
    stats: DraftStats | None = None,
) -> list[list[int]]:
    """Update the suffix cache (every step, also when the gate fires), then choose per row."""
    if config.uses_suffix:
        if suffix_cache is None:
            raise ValueError(f"method {config.method!r} with suffix decoding needs a suffix_cache")
        update_suffix_cache(suffix_cache, rows)
    if config.uses_arctic and arctic_drafter is None:
        raise ValueError(f"method {config.method!r} needs an arctic_drafter")
    if config.disable_by_batch_size and len(rows) > config.disable_by_batch_size:
        return [[] for _ in rows]  # D1
    suffix: list[SuffixDecodingDraft | None] = [None] * len(rows)
    if config.uses_suffix:
        assert suffix_cache is not None
        for i, row in enumerate(rows):
            query = rules.suffix_query(row, config) if row.sampled else None  # D2
            if query is not None:
                suffix[i] = suffix_cache.speculate(
                    row.req_id, query.pattern, query.max_spec_tokens, config.suffix_max_spec_factor,
                    query.max_spec_offset, config.suffix_min_token_prob,
                )  # fmt: skip
    threshold = rules.min_score(config)
    chosen = [d is not None and d.score >= threshold for d in suffix]
    if config.method == "suffix":
        chosen = [bool(row.sampled) for row in rows]
    out = [list(d.token_ids) if d is not None and took else [] for d, took in zip(suffix, chosen, strict=True)]
    if config.uses_arctic:
        assert arctic_drafter is not None
        model = rules.arctic_drafts(arctic_drafter, rows, rules.arctic_budgets(rows, config, chosen))
        out = [mine if mine else theirs for mine, theirs in zip(out, model, strict=True)]  # D7
    if stats is not None:
        stats.suffix_rows += sum(1 for d, took in zip(suffix, chosen, strict=True) if took and d is not None)
        stats.arctic_rows += sum(
            1 for d, took, row in zip(suffix, chosen, rows, strict=True) if not took and row.sampled
        )
        stats.suffix_scores.extend(d.score for d in suffix if d is not None)
    return out
