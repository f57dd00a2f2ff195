"""Drafters the runner can use (runner.md §2): none, suffix decoding, n-gram (vLLM 0.9.x), and two
test drafters for ``check`` — an oracle that knows the baseline's tokens and junk. Every drafter
sees the same rows on every rank and makes no collective call."""

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

import numpy as np
import torch
from torch import Tensor

from arctic_ref.runner.speculator import ArcticSpeculator, select_hidden_rows
from arctic_ref.spec.drafts import DraftRow, update_suffix_cache
from arctic_ref.spec.profile import MAX_SPEC_LEN
from arctic_ref.suffix.cache import SuffixDecodingCache, SuffixDecodingDraft


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


def _gated(rows: Sequence[DraftRow], limit: int | None) -> bool:
    """``disable_by_batch_size``: more rows than the limit → no drafts this step."""
    return limit is not None and len(rows) > limit


def suffix_pattern(row: DraftRow, depth: int) -> list[int]:
    """The last min(N, D) tokens of prompt + output, each once (runner.md §2.2 item 2)."""
    n = row.num_tokens
    return list(row.token_ids[n - min(n, depth) :])


PatternRule = Callable[[DraftRow, int], list[int]]


@dataclass(slots=True)
class SuffixDrafter:
    """runner.md §2.1–2.2: maintain the cache every step, then one path draft per sampled row with
    pattern = the last min(N, D) tokens (each once: the seed's doubled samples, #132, are not
    reproduced) and max_spec = min(num_spec_tokens, 32, D, M − N − 1)."""

    max_model_len: int
    num_spec_tokens: int = 32
    max_depth: int = 64
    max_spec_factor: float = 1.0
    max_spec_offset: float = 0.0
    min_token_prob: float = 0.1
    disable_by_batch_size: int | None = 64
    pattern: PatternRule = suffix_pattern
    """Injectable for the bug replay of #132 (``arctic_ref.testing.runner_bugs``)."""
    cache: SuffixDecodingCache = field(init=False)

    def __post_init__(self) -> None:
        if not 1 <= self.num_spec_tokens <= MAX_SPEC_LEN:
            raise ValueError(f"num_spec_tokens({self.num_spec_tokens}) must be in [1, {MAX_SPEC_LEN}]")
        self.cache = SuffixDecodingCache(self.max_depth, 100_000)

    def propose(self, rows: Sequence[DraftRow]) -> list[list[int]]:
        update_suffix_cache(self.cache, rows)  # stage 8 runs whatever the batch size
        if _gated(rows, self.disable_by_batch_size):
            return [[] for _ in rows]
        return [self._row(row) for row in rows]

    def _row(self, row: DraftRow) -> list[int]:
        draft = self.speculate(row)
        return [] if draft is None else list(draft.token_ids)

    def speculate(self, row: DraftRow) -> SuffixDecodingDraft | None:
        """The row's suffix draft with its score, or None where it gets no call."""
        n = row.num_tokens
        if not row.sampled or n >= self.max_model_len:
            return None
        budget = min(self.num_spec_tokens, MAX_SPEC_LEN, self.max_depth, self.max_model_len - n - 1)
        if budget <= 0:
            return None
        pattern = np.asarray(self.pattern(row, self.max_depth), dtype=np.int32)
        return self.cache.speculate(row.req_id, pattern, budget, self.max_spec_factor, self.max_spec_offset,
                                    self.min_token_prob, use_tree_spec=False)  # fmt: skip


def ngram_draft(tokens: Sequence[int], k: int, min_n: int, max_n: int) -> list[int]:
    """vLLM 0.9.x: for n from max_n down to min_n, the leftmost j with tokens[j:j+n] == the last n
    tokens and j ≤ N − 2n (no overlap); the k tokens after it (may be fewer)."""
    size = len(tokens)
    if k <= 0:
        return []
    for n in range(max_n, min_n - 1, -1):
        if 2 * n > size:
            continue
        suffix = list(tokens[size - n :])
        for j in range(0, size - 2 * n + 1):
            if list(tokens[j : j + n]) == suffix:
                return list(tokens[j + n : j + n + k])
    return []


def ngram_draft_longest(tokens: Sequence[int], k: int, min_n: int, max_n: int) -> list[int]:
    """vLLM ≥ 0.10.1: the longest n in [min_n, max_n] whose last-n tokens occur earlier (overlap
    with the suffix allowed: j ≤ N − n − 1), the earliest such occurrence; the k tokens after it."""
    size = len(tokens)
    if k <= 0:
        return []
    for n in range(min(max_n, size - 1), min_n - 1, -1):
        suffix = list(tokens[size - n :])
        for j in range(0, size - n):
            if list(tokens[j : j + n]) == suffix:
                return list(tokens[j + n : j + n + k])
    return []


NgramRule = Literal["vllm-0.9", "vllm-0.10.1"]


@dataclass(frozen=True, slots=True)
class NgramDrafter:
    """vLLM's ``NgramProposer``, rule 0.9.x (default, runner.md §2.3) or ≥ 0.10.1;
    k = min(num_spec_tokens, M − N)."""

    max_model_len: int
    num_spec_tokens: int = 3
    min_n: int = 5
    max_n: int = 5
    disable_by_batch_size: int | None = None
    rule: NgramRule = "vllm-0.9"

    def __post_init__(self) -> None:
        if not 1 <= self.min_n <= self.max_n or not 1 <= self.num_spec_tokens <= MAX_SPEC_LEN:
            raise ValueError(
                f"need 1 <= min_n({self.min_n}) <= max_n({self.max_n}) and num_spec_tokens({self.num_spec_tokens}) in [1, 32]"
            )

    def propose(self, rows: Sequence[DraftRow]) -> list[list[int]]:
        if _gated(rows, self.disable_by_batch_size):
            return [[] for _ in rows]
        return [
            ngram_draft(
                row.token_ids, min(self.num_spec_tokens, self.max_model_len - row.num_tokens), self.min_n, self.max_n
            )
            if row.sampled
            else []
            for row in rows
        ]


def _prompt_index(req_id: object) -> int:
    return int(str(req_id).rsplit("-", 1)[-1])


@dataclass(frozen=True, slots=True)
class OracleDrafter:
    """``a`` correct tokens from a reference run's outputs, then one wrong token: acceptance is
    exactly known, which makes greedy losslessness sharp (check's "oracle" drafter)."""

    reference: tuple[tuple[int, ...], ...]  # per prompt index, the baseline's output tokens
    correct: int
    vocab_size: int
    max_model_len: int

    def propose(self, rows: Sequence[DraftRow]) -> list[list[int]]:
        out: list[list[int]] = []
        for row in rows:
            expected = self.reference[_prompt_index(row.req_id)]
            done = row.num_tokens - row.num_prompt_tokens
            room = self.max_model_len - row.num_tokens - 1
            if not row.sampled or room <= 0:
                out.append([])
                continue
            draft = list(expected[done : done + self.correct])
            if done + len(draft) < len(expected):
                draft.append((expected[done + len(draft)] + 1) % self.vocab_size)  # one wrong token
            out.append(draft[:room])
        return out


@dataclass(slots=True)
class JunkDrafter:
    """``k`` uniformly random token ids per row (seeded): drafts that are almost always rejected."""

    vocab_size: int
    max_model_len: int
    k: int = 4
    seed: int = 0
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def propose(self, rows: Sequence[DraftRow]) -> list[list[int]]:
        return [
            [self.rng.randrange(self.vocab_size) for _ in range(min(self.k, self.max_model_len - row.num_tokens - 1))]
            if row.sampled
            else []
            for row in rows
        ]


def per_row_lengths(rows: Sequence[DraftRow], k: int, max_model_len: int) -> list[int]:
    """Each row's chain cut to max(0, M − N − 1)."""
    return [max(0, min(k, max_model_len - row.num_tokens - 1)) for row in rows]


LengthRule = Callable[[Sequence[DraftRow], int, int], list[int]]


def per_row_choice(
    suffix: Sequence[SuffixDecodingDraft | None], model: Sequence[list[int]], threshold: float
) -> list[list[int]]:
    """Row i: its suffix draft iff non-empty with score ≥ threshold, else its Arctic draft."""
    return [
        list(d.token_ids) if d is not None and d.token_ids and d.score >= threshold else mine
        for d, mine in zip(suffix, model, strict=True)
    ]


ChoiceRule = Callable[[Sequence[SuffixDecodingDraft | None], Sequence[list[int]], float], list[list[int]]]


@dataclass(frozen=True, slots=True)
class ArcticDrafter:
    """runner.md §2.4: k = min(num_spec_tokens, n_predict) for the batch; each row's chain starts
    from the hidden row that produced its last emitted token and that token, and is cut to
    max(0, M − N − 1) per row (the seed used one batch-wide minimum). Rows without a sample
    (partial prefills) get no draft (the seed drafted them and threw the drafts away)."""

    speculator: ArcticSpeculator
    max_model_len: int
    num_spec_tokens: int = 3
    disable_by_batch_size: int | None = 64
    lengths: LengthRule = per_row_lengths
    """Injectable for the bug replay of the seed's batch-wide cut (``arctic_ref.testing.runner_bugs``)."""

    def propose_with_hidden(
        self, rows: Sequence[DraftRow], sample_hidden: Tensor, num_drafts: Sequence[int]
    ) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in rows]
        if _gated(rows, self.disable_by_batch_size):
            return out
        k = min(self.num_spec_tokens, self.speculator.config.n_predict)
        picks = select_hidden_rows(sample_hidden, num_drafts, [row.sampled for row in rows])
        sampled = [i for i, row in enumerate(rows) if row.sampled]
        lengths = self.lengths([rows[i] for i in sampled], k, self.max_model_len)
        live = [(i, n) for i, n in zip(sampled, lengths, strict=True) if n > 0]
        if not live or k == 0:
            return out
        hidden = sample_hidden[[picks[i] for i, _ in live]].to(next(iter(self.speculator.weights.values())).dtype)
        tokens = torch.tensor([rows[i].sampled[-1] for i, _ in live], dtype=torch.int64, device=sample_hidden.device)
        chains = self.speculator.propose(hidden, tokens, k).tolist()
        for (i, n), chain in zip(live, chains, strict=True):
            out[i] = chain[:n]
        return out


@dataclass(slots=True)
class HybridDrafter:
    """runner.md §2.5 item 4: row i takes its suffix draft iff its score ≥ num_spec_tokens and it is
    non-empty, else its Arctic draft — per row only (the seed blanked every Arctic draft of the
    step when one row was empty). The suffix cache is maintained every step."""

    suffix: SuffixDrafter
    arctic: ArcticDrafter
    choose: ChoiceRule = per_row_choice
    """Injectable for the bug replay of the seed's step-wide blanking (``arctic_ref.testing.runner_bugs``)."""
    suffix_rows: int = 0
    arctic_rows: int = 0

    def propose_with_hidden(
        self, rows: Sequence[DraftRow], sample_hidden: Tensor, num_drafts: Sequence[int]
    ) -> list[list[int]]:
        update_suffix_cache(self.suffix.cache, rows)
        if _gated(rows, self.suffix.disable_by_batch_size):
            return [[] for _ in rows]
        threshold = self.arctic.num_spec_tokens
        suffix = [self.suffix.speculate(row) for row in rows]
        model = self.arctic.propose_with_hidden(rows, sample_hidden, num_drafts)
        out = self.choose(suffix, model, threshold)
        for draft, chosen in zip(suffix, out, strict=True):
            took_suffix = draft is not None and bool(chosen) and list(draft.token_ids) == chosen
            self.suffix_rows += int(took_suffix)
            self.arctic_rows += int(bool(chosen) and not took_suffix)
        return out
