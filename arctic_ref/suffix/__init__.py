"""Suffix decoding: a pure-Python drop-in for ``arctic_inference.suffix_decoding`` (0.3.0)."""

from arctic_ref.suffix.cache import SuffixDecodingCache, SuffixDecodingDraft
from arctic_ref.suffix.draft import Draft
from arctic_ref.suffix.tree import SuffixTree
from arctic_ref.suffix.validate import SuffixInputError

__all__ = ["Draft", "SuffixDecodingCache", "SuffixDecodingDraft", "SuffixInputError", "SuffixTree"]
