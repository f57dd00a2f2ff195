"""``brute_force_ngram``: the n-gram oracle, both vLLM rules by exhaustive search (docs/runner.md §2.3),
and ``check_ngram_rows``, which holds an n-gram drafter to it row by row."""

import random
from collections.abc import Sequence

from arctic_ref.runner.drafters import Drafter
from arctic_ref.spec.drafts import DraftRow
from arctic_ref.testing.check import Verdict


def brute_force_ngram(tokens: Sequence[int], k: int, min_n: int, max_n: int, *, overlap: bool) -> list[int]:
    """Both vLLM n-gram rules by exhaustive search: for n from max_n down to min_n, every start j
    whose n tokens equal the last n (j ≤ N − 2n without overlap, j ≤ N − n − 1 with it); the first
    start's k following tokens."""
    size = len(tokens)
    for n in range(max_n, min_n - 1, -1):
        if n >= size:
            continue
        limit = size - n if overlap else size - 2 * n + 1
        starts = [j for j in range(max(0, limit)) if list(tokens[j : j + n]) == list(tokens[size - n :])]
        if starts:
            return list(tokens[starts[0] + n : starts[0] + n + k])
    return []


def check_ngram_rows(
    drafter: Drafter, *, k: int, min_n: int, max_n: int, max_model_len: int, steps: int = 200, seed: int = 0
) -> Verdict:
    """A vLLM 0.9.x n-gram drafter (docs/runner.md §2.3) row by row against ``brute_force_ngram`` on
    seeded batches of 2-6 rows over a 3-token alphabet (so n-grams repeat), where about a third of
    the rows have no sample (partial prefills) and sit between rows that do: a row's draft is its own
    history's, [] without a sample, with k = min(``k``, M − N)."""
    rng = random.Random(seed)
    for step in range(steps):
        rows = []
        for r in range(rng.randint(2, 6)):
            tokens = [rng.randrange(3) for _ in range(rng.randint(1, max_model_len - 1))]
            sampled = tokens[-1:] if rng.random() < 0.65 else []
            rows.append(
                DraftRow(
                    req_id=f"r{r}", token_ids=tokens, num_prompt_tokens=len(tokens) - len(sampled), sampled=sampled
                )
            )
        drafts = drafter.propose(rows)
        expected = [
            brute_force_ngram(row.token_ids, min(k, max_model_len - row.num_tokens), min_n, max_n, overlap=False)
            if row.sampled
            else []
            for row in rows
        ]
        if drafts != expected:
            at = next((i for i, (a, b) in enumerate(zip(drafts, expected, strict=False)) if a != b), len(expected))
            return Verdict(
                passed=False,
                compared=f"n-gram drafts of {step + 1} seeded batches with the brute-force oracle",
                detail=f"step {step}, row {at} of {len(rows)} (sampled: {[bool(r.sampled) for r in rows]}): "
                f"drafts {drafts} vs the oracle's {expected}",
                replay=f"check_ngram_rows(drafter, seed={seed}), step {step}",
            )
    return Verdict(
        passed=True, compared=f"n-gram drafts of {steps} seeded batches with the brute-force oracle, row by row"
    )
