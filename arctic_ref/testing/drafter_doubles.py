"""Two test drafters whose acceptance is known in advance, for the layout matrix's spec-lossless
case and the runner's tests: ``OracleDrafter`` drafts ``correct`` tokens of a reference run, then one
wrong one; ``JunkDrafter`` drafts seeded random ids, almost always rejected."""

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from arctic_ref.spec.drafts import DraftRow


@dataclass(frozen=True, slots=True)
class OracleDrafter:
    """``a`` correct tokens from a reference run's outputs, then one wrong token: acceptance is
    exactly known, which makes greedy losslessness sharp (check's "oracle" drafter)."""

    reference: Mapping[tuple[int, ...], tuple[int, ...]]
    """prompt → the baseline's greedy output (which depends on the prompt alone)."""
    correct: int
    vocab_size: int
    max_model_len: int

    def propose(self, rows: Sequence[DraftRow]) -> list[list[int]]:
        out: list[list[int]] = []
        for row in rows:
            expected = self.reference[tuple(row.token_ids[: row.num_prompt_tokens])]
            done = row.num_tokens - row.num_prompt_tokens
            room = self.max_model_len - row.num_tokens - 1
            if not row.sampled or room < 1:
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
