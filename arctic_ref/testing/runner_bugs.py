"""Seed bugs of the runner's drafting path, reintroduced as injectable values (never patches), so
the tests can prove they catch them (runner.md §2.6)."""

from arctic_ref.spec.drafts import DraftRow


def doubled_samples_pattern(row: DraftRow, depth: int) -> list[int]:
    """Seed #132 (fixed upstream by #162): the samples were written again after stage 7 had already
    appended them, so the pattern ended with s1..sk, s1..sk."""
    tokens = [*row.token_ids, *row.sampled]
    n = len(tokens)
    return tokens[n - min(n, depth) :]
