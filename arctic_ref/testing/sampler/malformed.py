"""``malformed_output``: what is wrong with a sampler's output, named by row, before the kit reads it
(a malformed output is a failed check, never a crash of the kit)."""

from collections.abc import Sequence

import torch
from torch import Tensor

from arctic_ref.spec.profile import PLACEHOLDER_TOKEN_ID


class MalformedOutput(ValueError):
    """A sampler returned output the kit cannot read; the message names the offending row."""


def malformed_output(out: object, num_draft_tokens: Sequence[int], vocab: int) -> str:
    """The empty string when ``out`` is an int32 tensor ``[B, max(n)+1]`` (or wider) whose every row emits 1..nᵢ + 1
    ids in [0, V) followed only by −1 padding; else the first problem found."""
    if not isinstance(out, Tensor):
        return f"output is a {type(out).__name__}, not a tensor"
    rows = len(num_draft_tokens)
    if out.dim() != 2 or out.shape[0] != rows or out.shape[1] < max(num_draft_tokens, default=0) + 1:
        return f"output shape {tuple(out.shape)}, expected [{rows}, max_spec_len + 1]"
    if out.dtype != torch.int32:
        return f"output dtype {out.dtype}, expected torch.int32"
    for i, (row, n) in enumerate(zip(out.tolist(), num_draft_tokens, strict=True)):
        length = next((k for k, t in enumerate(row) if t == PLACEHOLDER_TOKEN_ID), len(row))
        if any(t != PLACEHOLDER_TOKEN_ID for t in row[length:]):
            return f"row {i}: a hole before the -1 padding: {row}"
        if not 1 <= length <= n + 1:
            return f"row {i} with {n} drafts emits {length} tokens (expected 1..{n + 1}): {row}"
        bad = [t for t in row[:length] if not 0 <= t < vocab]
        if bad:
            return f"row {i}: token ids {bad} outside [0, {vocab}): {row}"
    return ""


def require_well_formed(out: object, num_draft_tokens: Sequence[int], vocab: int) -> Tensor:
    """``out`` if well formed, else ``MalformedOutput``."""
    problem = malformed_output(out, num_draft_tokens, vocab)
    if problem:
        raise MalformedOutput(problem)
    assert isinstance(out, Tensor)
    return out
