"""The cache state machine: start/stop/add/evict/speculate on several ``SuffixDecodingCache``-like
implementations side by side (docs/suffix-decoding.md §9), and its variant at one fixed
(max_tree_depth, max_cached_requests) for a user's zero-argument factory."""

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from arctic_ref.suffix.cache import SuffixDecodingCache
from arctic_ref.suffix.upstream import UpstreamSuffixDecodingCache
from arctic_ref.testing.packed_draft import pack
from arctic_ref.testing.suffix_strategies import SpeculateArgs, bad_tokens, copied_tokens, speculate_args


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheImplementation:
    """One ``SuffixDecodingCache``-like implementation under test."""

    name: str
    make_cache: Callable[[int, int], Any]
    """Builds a cache from ``(max_tree_depth, max_cached_requests)``."""


def reference_caches(*, with_upstream: bool = True) -> list[CacheImplementation]:
    impls = [CacheImplementation(name="arctic_ref", make_cache=SuffixDecodingCache)]
    if with_upstream and UpstreamSuffixDecodingCache is not None:
        impls.append(CacheImplementation(name="upstream", make_cache=UpstreamSuffixDecodingCache))
    return impls


REQUEST_IDS = ("a", "b", 3, ("t", 1), "e")


class SuffixCacheMachine(RuleBasedStateMachine):
    """start/stop/add/evict/speculate, error cases included, on every cache at once. Invariants: the
    same exceptions, the same active and cached lists in order, the same seq ids, the same drafts,
    and FIFO bounds (P11). With a single implementation only the bounds are checked."""

    def __init__(self, implementations: Sequence[CacheImplementation]) -> None:
        super().__init__()
        self.compared = 0
        """``speculate`` calls compared across the implementations."""
        self.implementations = list(implementations)
        self.caches: list[Any] = []
        self.limit = -1
        self.responses: dict[Hashable, list[int]] = {}
        self.vocab = 4

    @initialize(
        depth=st.sampled_from((0, 1, 2, 4, 8, 64, -1)),
        limit=st.sampled_from((-1, 0, 1, 2, 3)),
        wrap=st.booleans(),
        vocab=st.integers(2, 5),
    )
    def start(self, depth: int, limit: int, wrap: bool, vocab: int) -> None:
        note(f"SuffixDecodingCache({depth}, {limit}) wrap={wrap}")
        self.caches = [impl.make_cache(depth, limit) for impl in self.implementations]
        self.limit = limit
        self.vocab = vocab
        if wrap:
            for cache in self.caches:
                cache._next_seq_id = 2**31 - 2

    def _all(self, label: str, call: Callable[[Any], Any]) -> list[Any]:
        outcomes = []
        for cache in self.caches:
            try:
                outcomes.append(("ok", call(cache)))
            except (ValueError, TypeError, KeyError) as error:
                outcomes.append(("raised", type(error).__name__))
        for impl, outcome in zip(self.implementations[1:], outcomes[1:], strict=True):
            assert outcome[0] == outcomes[0][0], f"{label}: {impl.name} {outcome} vs {outcomes[0]}"
        return outcomes

    @rule(req=st.sampled_from(REQUEST_IDS), data=st.data())
    def start_request(self, req: Hashable, data: st.DataObject) -> None:
        prompt = data.draw(copied_tokens(list(self.responses.values()), self.vocab, max_size=10), label="prompt")
        note(f"start_request({req!r}, {prompt})")
        outcomes = self._all("start_request", lambda c: c.start_request(req, prompt))
        if outcomes[0][0] == "ok":
            self.responses[req] = list(prompt)
            if self.limit > 0:
                assert req in self.caches[0].cached_requests, "the request just started is cached (P11)"

    @rule(req=st.sampled_from(REQUEST_IDS))
    def stop_request(self, req: Hashable) -> None:
        note(f"stop_request({req!r})")
        self._all("stop_request", lambda c: c.stop_request(req))

    @rule(req=st.sampled_from(REQUEST_IDS), data=st.data())
    def add_active_response(self, req: Hashable, data: st.DataObject) -> None:
        tokens = data.draw(copied_tokens(list(self.responses.values()), self.vocab, max_size=6), label="tokens")
        note(f"add_active_response({req!r}, {tokens})")
        self._all("add_active_response", lambda c: c.add_active_response(req, tokens))
        self.responses.setdefault(req, []).extend(tokens)

    @rule(req=st.sampled_from(REQUEST_IDS))
    def evict_cached_response(self, req: Hashable) -> None:
        note(f"evict_cached_response({req!r})")
        self._all("evict_cached_response", lambda c: c.evict_cached_response(req))

    @rule(req=st.sampled_from(REQUEST_IDS), data=st.data(), args=speculate_args())
    def speculate(self, req: Hashable, data: st.DataObject, args: SpeculateArgs) -> None:
        context = data.draw(copied_tokens(list(self.responses.values()), self.vocab, max_size=12), label="context")
        note(f"speculate({req!r}, {context}, {args.positional()})")
        outcomes = self._all("speculate", lambda c: pack(c.speculate(req, context, *args.positional())))
        self.compared += 1
        for impl, outcome in zip(self.implementations[1:], outcomes[1:], strict=True):
            assert outcome == outcomes[0], f"speculate: {impl.name} {outcome} vs {outcomes[0]}"

    @rule(data=st.data())
    def bad_tokens_change_nothing(self, data: st.DataObject) -> None:
        """X2/X5 on our cache only (upstream corrupts its state on these)."""
        ours = self.caches[0]
        if not isinstance(ours, SuffixDecodingCache):
            return
        req = data.draw(st.sampled_from(REQUEST_IDS), label="req")
        bad = data.draw(bad_tokens(), label="bad")
        before = (_cache_state(ours), _cache_dumps(ours))
        for call in (ours.start_request, ours.add_active_response):
            try:
                call(req, bad)  # type: ignore[arg-type]
            except (ValueError, TypeError):
                pass
            else:
                raise AssertionError(f"{call.__name__}({req!r}, {bad!r}) was accepted")
            assert (_cache_state(ours), _cache_dumps(ours)) == before, (
                f"{call.__name__} changed state on rejected input"
            )

    @invariant()
    def agree(self) -> None:
        states = [_cache_state(cache) for cache in self.caches]
        for impl, state in zip(self.implementations[1:], states[1:], strict=True):
            assert state == states[0], f"{impl.name} state {state} vs {states[0]}"
        if self.caches and self.limit > 0:
            assert len(self.caches[0].cached_requests) <= self.limit
        if self.caches and self.limit == 0:
            assert not self.caches[0].cached_requests


def _cache_state(cache: Any) -> tuple[object, ...]:
    return (
        list(cache.active_requests),
        list(cache.cached_requests),
        dict(cache._req_to_seq_id),
        cache._next_seq_id,
        cache._global_tree.num_seqs(),
    )


def _cache_dumps(cache: SuffixDecodingCache) -> tuple[object, ...]:
    return (cache._global_tree.dump(), [(req, tree.dump()) for req, tree in cache._local_trees.items()])


def fixed_cache_machine(depth: int, limit: int) -> type[SuffixCacheMachine]:
    """The cache machine at one (max_tree_depth, max_cached_requests), for a zero-argument factory."""

    class FixedCacheMachine(SuffixCacheMachine):
        @initialize(wrap=st.booleans(), vocab=st.integers(2, 5))
        def start(self, wrap: bool, vocab: int) -> None:
            SuffixCacheMachine.start(self, depth, limit, wrap, vocab)

    return FixedCacheMachine
