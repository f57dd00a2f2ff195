"""Drafters the runner can use (docs/runner.md §2): none, suffix decoding, the Arctic speculator alone or
beside suffix decoding (adapters over ``arctic_ref.spec.drafts``, which holds every selection rule),
n-gram (vLLM 0.9.x), and two test drafters for ``check`` — an oracle that knows the baseline's tokens
and junk. Every drafter sees the same rows on every rank and makes no collective call."""

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, Protocol, Self, runtime_checkable

import torch
from jaxtyping import Float
from torch import Tensor

from arctic_ref.runner.speculator import ArcticSpeculator, select_hidden_rows
from arctic_ref.spec.drafts import (
    INTENDED_RULES,
    DraftConfig,
    DraftRow,
    DraftRules,
    DraftStats,
    batch_gate_fires,
    check_suffix_k,
    new_suffix_cache,
    propose_draft_token_ids,
    suffix_config,
)
from arctic_ref.spec.profile import MAX_SPEC_LEN
from arctic_ref.suffix.cache import SuffixDecodingCache


@runtime_checkable
class Drafter(Protocol):
    """Drafts for this step's rows (after their sampled tokens were appended); [] for a row means none."""

    def propose(self, rows: Sequence[DraftRow]) -> list[list[int]]: ...


@runtime_checkable
class HiddenStateDrafter(Protocol):
    """A drafter that also reads the target's hidden states: ``sample_hidden`` holds the rows at
    this step's logits indices (after the final norm); ``num_drafts`` the drafts each row verified."""

    def propose_with_hidden(
        self, rows: Sequence[DraftRow], sample_hidden: Tensor, num_drafts: Sequence[int]
    ) -> list[list[int]]: ...


@dataclass(frozen=True, slots=True)
class NoDrafter:
    def propose(self, rows: Sequence[DraftRow]) -> list[list[int]]:
        return [[] for _ in rows]


@dataclass(slots=True)
class SuffixDrafter:
    """Suffix decoding in the runner (docs/runner.md §2.1–2.2, §2.5 item 2): an adapter that owns the
    suffix cache (``new_suffix_cache``) and calls
    ``propose_draft_token_ids``, which holds every rule. ``rules`` injects a bug replay."""

    config: DraftConfig
    rules: DraftRules = INTENDED_RULES
    stats: DraftStats = field(default_factory=DraftStats)
    cache: SuffixDecodingCache = field(init=False)

    def __post_init__(self) -> None:
        if self.config.method != "suffix":
            raise ValueError(f"SuffixDrafter needs method 'suffix', got {self.config.method!r}")
        check_suffix_k(self.config)
        self.cache = new_suffix_cache(self.config)

    @classmethod
    def build(cls, max_model_len: int, num_spec_tokens: int = MAX_SPEC_LEN, rules: DraftRules = INTENDED_RULES) -> Self:
        """The runner's defaults (docs/runner.md §2.2): ``suffix_config(max_model_len, max_spec_tokens=...)``."""
        return cls(suffix_config(max_model_len, max_spec_tokens=num_spec_tokens), rules)

    def propose(self, rows: Sequence[DraftRow]) -> list[list[int]]:
        return propose_draft_token_ids(
            rows, self.config, suffix_cache=self.cache, arctic_drafter=None, rules=self.rules, stats=self.stats
        )


def ngram_draft(tokens: Sequence[int], k: int, min_n: int, max_n: int) -> list[int]:
    """vLLM 0.9.x: for n from max_n down to min_n, the leftmost j with tokens[j:j+n] == the last n
    tokens and j ≤ N − 2n (no overlap); the k tokens after it (may be fewer)."""
    size = len(tokens)
    if k < 1:
        return []
    for n in range(max_n, min_n - 1, -1):  # an n with 2n > N has no j: the inner range is empty
        suffix = list(tokens[size - n :])
        for j in range(0, size - 2 * n + 1):
            if list(tokens[j : j + n]) == suffix:
                return list(tokens[j + n : j + n + k])
    return []


def ngram_draft_longest(tokens: Sequence[int], k: int, min_n: int, max_n: int) -> list[int]:
    """vLLM ≥ 0.10.1: the longest n in [min_n, max_n] whose last-n tokens occur earlier (overlap
    with the suffix allowed: j ≤ N − n − 1), the earliest such occurrence; the k tokens after it."""
    size = len(tokens)
    if k < 1:
        return []
    for n in range(max_n, min_n - 1, -1):  # an n >= N has no j: the inner range is empty
        suffix = list(tokens[size - n :])
        for j in range(0, size - n):
            if list(tokens[j : j + n]) == suffix:
                return list(tokens[j + n : j + n + k])
    return []


NgramRule = Literal["vllm-0.9", "vllm-0.10.1"]
NGRAM_RULES: Final[dict[NgramRule, Callable[[Sequence[int], int, int, int], list[int]]]] = {
    "vllm-0.9": ngram_draft,
    "vllm-0.10.1": ngram_draft_longest,
}
"""The matching rule of each ``NgramDrafter.rule``."""


@dataclass(frozen=True, slots=True)
class NgramDrafter:
    """vLLM's ``NgramProposer``, rule 0.9.x (default, docs/runner.md §2.3) or ≥ 0.10.1;
    k = min(num_spec_tokens, M − N). ``arctic_ref.runner.vllm_drafting`` builds vLLM 0.32's n-gram
    drafter from a ``speculative_config`` dict instead."""

    max_model_len: int
    num_spec_tokens: int = 3
    """The runner's k (vLLM has no default: ``num_speculative_tokens`` is required for "ngram")."""
    min_n: int = 5
    max_n: int = 5
    """vLLM's ``prompt_lookup_min`` / ``prompt_lookup_max`` when neither is given (5 and 5)."""
    disable_by_batch_size: int | None = None
    """Off, as in vLLM: 0.9.x's ``SpeculativeConfig.disable_by_batch_size`` defaults to None and its V1
    n-gram proposer never reads it (vLLM PR #15361); 0.32 has no such key. An opt-in gate of ours."""
    rule: NgramRule = "vllm-0.9"

    def __post_init__(self) -> None:
        if not 1 <= self.min_n <= self.max_n or not 1 <= self.num_spec_tokens <= MAX_SPEC_LEN:
            raise ValueError(
                f"need 1 <= min_n({self.min_n}) <= max_n({self.max_n}) and num_spec_tokens({self.num_spec_tokens}) in [1, 32]"
            )

    def propose(self, rows: Sequence[DraftRow]) -> list[list[int]]:
        if batch_gate_fires(len(rows), self.disable_by_batch_size):
            return [[] for _ in rows]
        draft = NGRAM_RULES[self.rule]
        return [
            draft(row.token_ids, min(self.num_spec_tokens, self.max_model_len - row.num_tokens), self.min_n, self.max_n)
            if row.sampled
            else []
            for row in rows
        ]


@dataclass(frozen=True, slots=True)
class HiddenRowProposer:
    """The speculator forward over one step's hidden rows (docs/runner.md §2.4): an ``ArcticProposer``
    for ``propose_draft_token_ids``. Row r's chain starts from ``sample_hidden[picks[req_id]]`` (the
    row that produced its last emitted token) and that token; at most ``n_predict`` tokens."""

    speculator: ArcticSpeculator
    sample_hidden: Float[Tensor, "num_logits hidden"]
    picks: dict[Hashable, int]

    def propose(self, rows: Sequence[DraftRow], num_predict: int) -> list[list[int]]:
        k = min(num_predict, self.speculator.config.n_predict)
        if k < 1:
            return [[] for _ in rows]
        dtype = next(iter(self.speculator.weights.values())).dtype
        hidden = self.sample_hidden[[self.picks[row.req_id] for row in rows]].to(dtype)
        device = self.sample_hidden.device
        tokens = torch.tensor([row.sampled[-1] for row in rows], dtype=torch.int64, device=device)
        chains: list[list[int]] = self.speculator.propose(hidden, tokens, k).tolist()
        return chains


@dataclass(slots=True)
class SpeculatorDrafter:
    """The Arctic speculator in the runner, alone (``config.method`` "arctic") or beside suffix
    decoding (``config.enable_suffix_decoding``: the hybrid of docs/runner.md §2.5 item 4). An adapter:
    it owns the speculator, the hidden-row selection and (hybrid) the suffix cache, and calls
    ``propose_draft_token_ids`` for every rule. ``rules`` injects a bug replay."""

    config: DraftConfig
    speculator: ArcticSpeculator
    rules: DraftRules = INTENDED_RULES
    stats: DraftStats = field(default_factory=DraftStats)
    cache: SuffixDecodingCache | None = field(init=False)

    def __post_init__(self) -> None:
        if not self.config.uses_arctic:
            raise ValueError(f"SpeculatorDrafter needs an Arctic method, got {self.config.method!r}")
        self.cache = new_suffix_cache(self.config) if self.config.uses_suffix else None

    def propose_with_hidden(
        self, rows: Sequence[DraftRow], sample_hidden: Tensor, num_drafts: Sequence[int]
    ) -> list[list[int]]:
        picks = select_hidden_rows(sample_hidden, num_drafts, [row.sampled for row in rows])
        proposer = HiddenRowProposer(
            self.speculator, sample_hidden, {row.req_id: picks[i] for i, row in enumerate(rows)}
        )
        return propose_draft_token_ids(
            rows, self.config, suffix_cache=self.cache, arctic_drafter=proposer, rules=self.rules, stats=self.stats
        )
