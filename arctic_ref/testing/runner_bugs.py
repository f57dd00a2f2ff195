"""Seed bugs of the runner's drafting path, reintroduced as injectable values (never patches), so
the tests can prove they catch them (runner.md §2.6)."""

from collections.abc import Sequence

from arctic_ref.spec.drafts import DraftRow
from arctic_ref.suffix.cache import SuffixDecodingDraft


def doubled_samples_pattern(row: DraftRow, depth: int) -> list[int]:
    """Seed #132 (fixed upstream by #162): the samples were written again after stage 7 had already
    appended them, so the pattern ended with s1..sk, s1..sk."""
    tokens = [*row.token_ids, *row.sampled]
    n = len(tokens)
    return tokens[n - min(n, depth) :]


def batch_min_lengths(rows: Sequence[DraftRow], k: int, max_model_len: int) -> list[int]:
    """The seed's Arctic length: one batch-wide minimum of M − N − 1, so a single row near
    max_model_len shortens (or empties) every row's draft."""
    shortest = min((max_model_len - row.num_tokens - 1 for row in rows), default=k)
    return [max(0, min(k, shortest)) for _ in rows]


def step_wide_blanking(
    suffix: Sequence[SuffixDecodingDraft | None], model: Sequence[list[int]], threshold: float
) -> list[list[int]]:
    """The seed's hybrid quirk: when any row's Arctic draft is empty (a row that chose suffix, or a
    partial prefill), every Arctic draft of the step is blanked."""
    chosen = [d is not None and bool(d.token_ids) and d.score >= threshold for d in suffix]
    blank = any(not m for m, took in zip(model, chosen, strict=True)) or any(chosen)
    return [
        list(d.token_ids) if took and d is not None else ([] if blank else m)
        for d, m, took in zip(suffix, model, chosen, strict=True)
    ]
