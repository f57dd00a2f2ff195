"""``brute_force_ngram``: the n-gram oracle, both vLLM rules by exhaustive search (runner.md §2.3)."""

from collections.abc import Sequence


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
