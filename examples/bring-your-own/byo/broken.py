"""Broken variants, each with one plausible bug; the plugin must fail each on a named check:

- ``make_cache_dropping_a_token``: drops the last token of every non-empty draft (replay-gate, cache-machine);
- ``make_tree_wrong_tie_break``: a promoted child goes after its equal-count siblings (tree-machine, differential);
- ``rejection_sample_recovering_from_p``: recovers from p instead of the residual (E8, S3);
- ``make_drafter_too_long``: ignores max_model_len near the end of a request (bounds);
- ``make_exchange_permuting_heads``: an all-to-all that permutes head groups (layout-L2, -L3, -L4);
- ``make_cache_lru``: evicts the least recently extended cached response, not the first in (cache-machine);
- ``make_tree_counting_removed_tail``: after a removal, the removed sequence's last token is still
  counted once (tree-machine).

The last two, with the wrong tie-break, are the cases whose failing state machines used to shrink
for minutes (docs/performance.md, "Failing checks").
"""

from collections.abc import Sequence
from typing import Any

from torch import Tensor

from arctic_ref.spec import SamplingMetadata, draw_noise
from arctic_ref.spec.drafts import DraftRow
from arctic_ref.suffix import SuffixDecodingCache, SuffixTree
from arctic_ref.suffix.node import Node
from arctic_ref.testing.sampler.mutants import MutantLoop
from byo.drafter import LookupDrafter
from byo.exchange import MyExchange
from byo.tree import OpaqueTree


class _DroppingCache(SuffixDecodingCache):
    def speculate(self, *args: Any, **kwargs: Any) -> Any:
        draft = super().speculate(*args, **kwargs)
        if draft.token_ids:
            draft.token_ids, draft.parents, draft.probs = draft.token_ids[:-1], draft.parents[:-1], draft.probs[:-1]
        return draft


def make_cache_dropping_a_token(max_tree_depth: int = 64, max_cached_requests: int = -1) -> SuffixDecodingCache:
    return _DroppingCache(max_tree_depth, max_cached_requests)


def _promote_after_equals(order: list[Node], i: int, old: int) -> None:
    node = order.pop(i)
    j = 0
    while j < len(order) and order[j].count >= node.count:
        j += 1
    order.insert(j, node)


class _WrongTieTree(SuffixTree):
    _promote = staticmethod(_promote_after_equals)


def make_tree_wrong_tie_break(max_depth: int) -> OpaqueTree:
    return OpaqueTree(_WrongTieTree(max_depth))


def rejection_sample_recovering_from_p(
    draft_token_ids: Tensor,
    num_draft_tokens: list[int],
    max_spec_len: int,
    cu_num_draft_tokens: Tensor,
    draft_probs: Tensor | None,
    target_logits: Tensor,
    bonus_token_ids: Tensor,
    sampling_metadata: SamplingMetadata,
) -> Tensor:
    noise = draw_noise(num_draft_tokens, target_logits.shape[-1], sampling_metadata)
    return MutantLoop("recover_from_p")(
        draft_token_ids,
        num_draft_tokens,
        max_spec_len,
        cu_num_draft_tokens,
        draft_probs,
        target_logits,
        bonus_token_ids,
        sampling_metadata,
        noise,
    )


class _TooLongDrafter(LookupDrafter):
    def propose(self, rows: Sequence[DraftRow]) -> list[list[int]]:
        return [list(row.token_ids[-5:]) if row.sampled else [] for row in rows]


def make_drafter_too_long(max_model_len: int) -> LookupDrafter:
    return _TooLongDrafter(max_model_len)


class _PermutingExchange(MyExchange):
    """Sends head group size-1-i to member i: every rank attends with another rank's heads."""

    def head_order(self, size: int) -> list[int]:
        return list(reversed(range(size)))


def make_exchange_permuting_heads() -> MyExchange:
    return _PermutingExchange()


class _LruCache(SuffixDecodingCache):
    """Moves a cached request to the end of the eviction order whenever its response grows."""

    def add_active_response(self, req_id: Any, token_ids: Any) -> None:
        super().add_active_response(req_id, token_ids)
        if req_id in self._req_to_seq_id:
            self._req_to_seq_id[req_id] = self._req_to_seq_id.pop(req_id)


def make_cache_lru(max_tree_depth: int = 64, max_cached_requests: int = -1) -> SuffixDecodingCache:
    return _LruCache(max_tree_depth, max_cached_requests)


class _TailCountingTree(OpaqueTree):
    """Removing a sequence leaves its last token counted once (as a hidden one-token sequence)."""

    HIDDEN_FROM = 2_000_000_000

    def __init__(self, max_depth: int) -> None:
        super().__init__(SuffixTree(max_depth))
        self._tails: dict[int, int] = {}
        self._hidden = 0

    def extend(self, seq_id: int, tokens: Sequence[int]) -> None:
        super().extend(seq_id, tokens)
        if len(tokens):
            self._tails[seq_id] = int(tokens[-1])

    def remove(self, seq_id: int) -> None:
        super().remove(seq_id)
        tail = self._tails.pop(seq_id, None)
        if tail is not None:
            self._hidden += 1
            super().extend(self.HIDDEN_FROM + self._hidden, [tail])

    def num_seqs(self) -> int:
        return super().num_seqs() - self._hidden


def make_tree_counting_removed_tail(max_depth: int) -> OpaqueTree:
    return _TailCountingTree(max_depth)
