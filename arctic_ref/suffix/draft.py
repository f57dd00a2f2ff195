"""``Draft``: the result of one speculation, the shape upstream's ``_C.Draft`` has."""

from dataclasses import dataclass, field


@dataclass
class Draft:
    """A speculated token tree.

    ``token_ids[i]`` hangs below ``token_ids[parents[i]]`` (−1: below the matched context), with the
    estimated joint probability ``probs[i]`` (a float32 value held in a Python float). ``score`` is
    the sequential float32 sum of ``probs``; ``match_len`` is the length of the context suffix the
    draft continues. Unlike upstream's ``_C.Draft``, it can be constructed.
    """

    token_ids: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    probs: list[float] = field(default_factory=list)
    score: float = 0.0
    match_len: int = 0
