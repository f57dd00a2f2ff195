"""A suffix draft as a comparable value, and where two such values first differ: what the tree and
cache state machines, the code-edit replay gate and the bad-input tables compare."""

import struct
from typing import Any, NamedTuple


class PackedDraft(NamedTuple):
    """A draft as a comparable value: floats as float32 bytes, so NaN and -0.0 compare exactly.
    Its repr labels the fields and prints floats as decimals with their float32 bits beside them."""

    token_ids: list[int]
    parents: list[int]
    probs: bytes
    score: bytes
    match_len: int

    def __repr__(self) -> str:
        probs = ", ".join(_decimal_and_bits(self.probs[i : i + 4]) for i in range(0, len(self.probs), 4))
        return (
            f"draft(token_ids={self.token_ids}, parents={self.parents}, probs=[{probs}], "
            f"score={_decimal_and_bits(self.score)}, match_len={self.match_len})"
        )


def _decimal_and_bits(four: bytes) -> str:
    return f"{struct.unpack('f', four)[0]!r} (0x{struct.unpack('<I', four)[0]:08x})"


def pack(draft: Any) -> PackedDraft:
    """``draft`` (any object with upstream's draft fields) as a ``PackedDraft``."""
    return PackedDraft(
        list(draft.token_ids),
        list(draft.parents),
        struct.pack(f"{len(draft.probs)}f", *draft.probs),
        struct.pack("f", draft.score),
        draft.match_len,
    )


def first_field_difference(ours: PackedDraft, theirs: PackedDraft) -> str:
    """The first field where two packed drafts differ (floats as float32 bits), or ""; float
    fields show both drafts whole, labelled, with decimals beside their bits."""
    for name, mine, other in zip(PackedDraft._fields, ours, theirs, strict=True):
        if mine != other:
            if isinstance(mine, bytes):
                return f"{name}: arctic_ref {ours!r} vs yours {theirs!r}"
            return f"{name}: arctic_ref {mine} vs yours {other}"
    return ""
