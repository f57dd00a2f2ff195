"""``SuffixDecodingCache``: per-request prompt trees plus one global tree of cached responses.

A drop-in for ``arctic_inference.suffix_decoding.SuffixDecodingCache`` (0.3.0); the attribute names
are upstream's so differential tests can read and set both (docs/suffix-decoding.md §4). Every
check runs before any state changes. Deviations from upstream (docs/suffix-decoding.md §5.2): ``max_spec_tokens=None``
means ``max_tree_depth`` (upstream raises ``AttributeError``); bad tokens raise before anything is
changed (upstream leaves a half-started request or a corrupted tree behind).
"""

from collections.abc import Hashable, KeysView, Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from arctic_ref.suffix.draft import Draft
from arctic_ref.suffix.tree import SuffixTree
from arctic_ref.suffix.validate import (
    INT32_MAX,
    check_bool,
    check_float,
    check_int32,
    check_sequence_type,
    check_tokens,
)

_SEQ_ID_MODULUS: Final = 2**31


@dataclass
class SuffixDecodingDraft:
    """A speculation result: ``Draft``'s fields (token tree, joint probabilities, score, match length)."""

    token_ids: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    probs: list[float] = field(default_factory=list)
    score: float = 0.0
    match_len: int = 0

    @staticmethod
    def from_native(draft: Draft) -> "SuffixDecodingDraft":
        return SuffixDecodingDraft(
            token_ids=list(draft.token_ids),
            parents=list(draft.parents),
            probs=list(draft.probs),
            score=draft.score,
            match_len=draft.match_len,
        )


def _validate_ndarray(arr: np.ndarray) -> None:
    """Upstream's ``_validate_ndarray``, in its order."""
    if arr.ndim != 1:
        raise ValueError(f"ndarray input must have ndim=1, got ndim={arr.ndim}")
    if arr.dtype != np.int32:
        raise ValueError(f"ndarray input must have dtype=int32, got dtype={arr.dtype.name}")
    if not arr.flags["C_CONTIGUOUS"]:
        raise ValueError("ndarray input must be contiguous")


def _checked_tokens(name: str, tokens: Sequence[int] | np.ndarray) -> list[int]:
    if isinstance(tokens, np.ndarray):
        _validate_ndarray(tokens)
    return check_tokens(name, tokens)


class SuffixDecodingCache:
    """Suffix-decoding state of a serving engine.

    *Active* requests (``start_request`` … ``stop_request``) each own a local tree holding prompt +
    response so far (seq id 0). *Cached* requests own one sequence of the global tree holding their
    response only, until evicted — explicitly, by FIFO pressure (``max_cached_requests``), by a
    seq-id collision after wrap-around, or when the same ``req_id`` starts again.
    """

    def __init__(self, max_tree_depth: int = 64, max_cached_requests: int = -1) -> None:
        depth = check_int32("max_tree_depth", max_tree_depth)
        if isinstance(max_cached_requests, (int, np.integer)) and max_cached_requests > INT32_MAX:
            raise ValueError("max_cached_requests must be at most 2^31")
        limit = check_int32("max_cached_requests", max_cached_requests)
        self._max_tree_depth = depth
        self._max_cached_requests = limit
        self._global_tree = SuffixTree(depth)
        self._local_trees: dict[Hashable, SuffixTree] = {}
        self._req_to_seq_id: dict[Hashable, int] = {}
        self._seq_to_req_id: dict[int, Hashable] = {}
        self._next_seq_id = 0

    @property
    def max_tree_depth(self) -> int:
        return self._max_tree_depth

    @property
    def max_cached_requests(self) -> int:
        return self._max_cached_requests

    @property
    def active_requests(self) -> KeysView[Hashable]:
        """The active request ids, in start order (a live view)."""
        return self._local_trees.keys()

    @property
    def cached_requests(self) -> KeysView[Hashable]:
        """The request ids whose responses are in the global tree, in FIFO order (a live view)."""
        return self._req_to_seq_id.keys()

    def start_request(self, req_id: Hashable, prompt_token_ids: Sequence[int] | np.ndarray) -> None:
        """Make ``req_id`` active with its prompt; allocate it a global slot unless caching is off."""
        if req_id in self._local_trees:
            raise ValueError(f"Request '{req_id}' is already active")
        prompt = _checked_tokens("prompt_token_ids", prompt_token_ids)
        tree = SuffixTree(self._max_tree_depth)
        tree.extend(0, prompt)
        self._local_trees[req_id] = tree
        if self._max_cached_requests != 0:
            if req_id in self._req_to_seq_id:
                self.evict_cached_response(req_id)
            self._allocate_seq_id(req_id)

    def stop_request(self, req_id: Hashable) -> None:
        """Drop the request's local tree; its cached response stays."""
        if req_id not in self._local_trees:
            raise ValueError(f"Request '{req_id}' is not active")
        del self._local_trees[req_id]

    def add_active_response(self, req_id: Hashable, token_ids: Sequence[int] | np.ndarray) -> None:
        """Append response tokens to the local tree, and to the global one while still cached."""
        if req_id not in self._local_trees:
            raise ValueError(f"Request '{req_id}' is not active")
        tokens = _checked_tokens("token_ids", token_ids)
        self._local_trees[req_id].extend(0, tokens)
        seq_id = self._req_to_seq_id.get(req_id)
        if seq_id is not None:
            self._global_tree.extend(seq_id, tokens)

    def evict_cached_response(self, req_id: Hashable) -> None:
        """Remove the request's response from the global tree (active or not)."""
        if req_id not in self._req_to_seq_id:
            raise ValueError(f"Request '{req_id}' is not cached")
        seq_id = self._req_to_seq_id.pop(req_id)
        del self._seq_to_req_id[seq_id]
        self._global_tree.remove(seq_id)

    def speculate(
        self,
        req_id: Hashable,
        context: Sequence[int] | np.ndarray,
        max_spec_tokens: int | None = None,
        max_spec_factor: float = 1.0,
        max_spec_offset: float = 0.0,
        min_token_prob: float = 0.1,
        use_tree_spec: bool = False,
    ) -> SuffixDecodingDraft:
        """The better of the local and global drafts for the context's suffix; a tie goes local."""
        if req_id not in self._local_trees:
            raise ValueError(f"Request '{req_id}' is not active")
        check_sequence_type("context", context)
        if isinstance(context, np.ndarray):
            _validate_ndarray(context)
        args = (
            check_int32("max_spec_tokens", self._max_tree_depth if max_spec_tokens is None else max_spec_tokens),
            check_float("max_spec_factor", max_spec_factor),
            check_float("max_spec_offset", max_spec_offset),
            check_float("min_token_prob", min_token_prob),
            check_bool("use_tree_spec", use_tree_spec),
        )
        if len(context) > self._max_tree_depth:
            context = context[-self._max_tree_depth :]
        tokens = check_tokens("context", context)
        # Hints: the local tree's sequence 0 is the request itself, and so is its global sequence.
        local = self._local_trees[req_id]._speculate_checked(tokens, *args, tail_of=0)
        glob = self._global_tree._speculate_checked(tokens, *args, tail_of=self._req_to_seq_id.get(req_id))
        return SuffixDecodingDraft.from_native(local if local.score >= glob.score else glob)

    def _allocate_seq_id(self, req_id: Hashable) -> int:
        """The next id not held by an active request (docs/suffix-decoding.md §4.3); a wrap-around collision with an
        inactive cached request evicts it. Then FIFO eviction down to ``max_cached_requests``."""
        while True:
            seq_id = self._next_seq_id
            self._next_seq_id = (seq_id + 1) % _SEQ_ID_MODULUS
            owner = self._seq_to_req_id.get(seq_id, _FREE)
            if owner is _FREE or owner not in self._local_trees:
                break
        if owner is not _FREE:
            del self._req_to_seq_id[owner]
            del self._seq_to_req_id[seq_id]
            self._global_tree.remove(seq_id)
        self._req_to_seq_id[req_id] = seq_id
        self._seq_to_req_id[seq_id] = req_id
        if self._max_cached_requests > 0:
            while len(self._req_to_seq_id) > self._max_cached_requests:
                victim = next(r for r, s in self._req_to_seq_id.items() if s != seq_id)
                self.evict_cached_response(victim)
        return seq_id


_FREE: Final = object()
