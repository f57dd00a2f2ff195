"""Adapters over upstream ``arctic_inference.suffix_decoding`` (PyPI ``arctic-inference`` 0.3.0).

Importable without upstream: ``UPSTREAM_AVAILABLE`` says whether the C++ extension is there. The
adapter never does what would break upstream's tree (docs/suffix-decoding.md §9): it calls ``speculate`` positionally
and runs upstream's ``check_integrity`` only when that is safe (D > 0 and live ids exactly
0 … n−1), because upstream's check inserts sequences and never returns for a negative id (X6).
"""

from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from arctic_ref.suffix.draft import Draft

__all__ = ["UPSTREAM_AVAILABLE", "UpstreamSuffixDecodingCache", "UpstreamSuffixTree"]

try:
    from arctic_inference.suffix_decoding import SuffixDecodingCache as UpstreamSuffixDecodingCache
    from arctic_inference.suffix_decoding._C import SuffixTree as _UpstreamTree

    UPSTREAM_AVAILABLE: Final = True
except ImportError:  # pragma: no cover - depends on the environment
    UpstreamSuffixDecodingCache = None
    _UpstreamTree = None
    UPSTREAM_AVAILABLE = False  # type: ignore[misc]


class UpstreamSuffixTree:
    """Upstream's C++ ``SuffixTree`` behind the ``SuffixIndex`` surface."""

    def __init__(self, max_depth: int) -> None:
        if _UpstreamTree is None:
            raise RuntimeError(
                "arctic-inference is not installed: pip install --no-build-isolation arctic-inference==0.3.0"
            )
        self._max_depth = max_depth
        self._tree: Any = _UpstreamTree(max_depth)
        self._live: set[int] = set()

    def extend(self, seq_id: int, tokens: Sequence[int] | np.ndarray) -> None:
        self._tree.extend(seq_id, list(tokens))
        if len(tokens):
            self._live.add(seq_id)

    def remove(self, seq_id: int) -> None:
        self._tree.remove(seq_id)
        self._live.discard(seq_id)

    def speculate(
        self,
        context: Sequence[int] | np.ndarray,
        max_spec_tokens: int,
        max_spec_factor: float,
        max_spec_offset: float,
        min_token_prob: float,
        use_tree_spec: bool,
    ) -> Draft:
        native = self._tree.speculate(
            list(context), max_spec_tokens, max_spec_factor, max_spec_offset, min_token_prob, use_tree_spec
        )
        return Draft(
            token_ids=list(native.token_ids),
            parents=list(native.parents),
            probs=list(native.probs),
            score=native.score,
            match_len=native.match_len,
        )

    def num_seqs(self) -> int:
        return int(self._tree.num_seqs())

    def check_integrity(self) -> str:
        if self._max_depth <= 0 or self._live != set(range(len(self._live))):
            return ""
        return str(self._tree.check_integrity())

    def estimate_memory(self) -> int:
        return int(self._tree.estimate_memory())
