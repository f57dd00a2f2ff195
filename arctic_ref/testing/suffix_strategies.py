"""Hypothesis strategies for suffix-decoding tests (docs/suffix-decoding.md §9).

Small vocabularies make ties in sibling order common; the parameter values are docs/suffix-decoding.md's, chosen
to hit every edge of the budget and probability rules (NaN, inf, negative, > 1).
"""

import math
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from arctic_ref.suffix.validate import INT32_MAX, INT32_MIN

DEPTHS = (0, 1, 2, 3, 4, 8, 64, -1)
SEQ_IDS = (0, 1, 2, 3, -3, INT32_MAX)
MAX_SPEC_TOKENS = (-1, 0, 1, 3, 32, 100)
FACTORS = (0.0, 0.5, 1.0, 2.0, 4.0, 1e10, math.nan)
OFFSETS = (0.0, 1.0, -1.0, -1e-6, 2.5)
MIN_PROBS = (-1.0, 0.0, 0.1, 0.25, 1 / 3, 0.5, 1.0, 1.5, math.nan)


@dataclass(frozen=True, slots=True, kw_only=True)
class SpeculateArgs:
    """The scalar arguments of one ``speculate`` call, positional order as upstream."""

    max_spec_tokens: int
    max_spec_factor: float
    max_spec_offset: float
    min_token_prob: float
    use_tree_spec: bool

    def positional(self) -> tuple[int, float, float, float, bool]:
        return (
            self.max_spec_tokens,
            self.max_spec_factor,
            self.max_spec_offset,
            self.min_token_prob,
            self.use_tree_spec,
        )


def speculate_args() -> st.SearchStrategy[SpeculateArgs]:
    return st.builds(
        SpeculateArgs,
        max_spec_tokens=st.sampled_from(MAX_SPEC_TOKENS),
        max_spec_factor=st.sampled_from(FACTORS),
        max_spec_offset=st.sampled_from(OFFSETS),
        min_token_prob=st.sampled_from(MIN_PROBS),
        use_tree_spec=st.booleans(),
    )


def token_lists(vocab: int = 4, max_size: int = 8) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(0, vocab - 1), max_size=max_size)


@st.composite
def copied_tokens(draw: Any, sources: list[list[int]], vocab: int = 4, max_size: int = 8) -> list[int]:
    """Tokens that mostly copy a substring of one of ``sources`` (so paths are shared), with noise;
    now and then a periodic run (a pattern of 1-3 tokens repeated), where open suffixes nest."""
    live = [s for s in sources if s]
    kind = draw(st.integers(0, 4))
    if kind == 1:
        pattern = draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=3))
        size = draw(st.integers(0, max_size))
        return [pattern[i % len(pattern)] for i in range(size)]
    if not live or kind == 0:
        fresh: list[int] = draw(token_lists(vocab, max_size))
        return fresh
    source = draw(st.sampled_from(live))
    start = draw(st.integers(0, len(source) - 1))
    stop = draw(st.integers(start, min(len(source), start + max_size)))
    out = list(source[start:stop])
    if out and draw(st.booleans()):
        out[draw(st.integers(0, len(out) - 1))] = draw(st.integers(0, vocab - 1))
    return out


def bad_tokens() -> st.SearchStrategy[object]:
    """Token sequences every implementation must reject (docs/suffix-decoding.md §2.2): reserved, out of int32,
    non-integer, strings and wrongly shaped inputs."""
    bad_element = st.sampled_from([INT32_MIN, INT32_MIN + 1, INT32_MAX + 1, -(2**40), 1.5, "x", None])
    return st.one_of(
        st.builds(lambda head, bad, tail: [*head, bad, *tail], token_lists(), bad_element, token_lists()),
        st.sampled_from(["abc", b"ab", 7, {1, 2}]),
    )
