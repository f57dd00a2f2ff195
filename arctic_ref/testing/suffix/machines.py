"""State machines that drive several suffix implementations side by side (docs/suffix-decoding.md §9).

Users test their own implementation by passing it in beside ours::

    from hypothesis.stateful import run_state_machine_as_test
    from arctic_ref.testing.suffix.machines import Implementation, SuffixTreeMachine, reference_trees

    impls = [*reference_trees(), Implementation(name="mine", make_tree=MyTree, rejects_bad_input=False)]
    run_state_machine_as_test(lambda: SuffixTreeMachine(impls))

Every ``speculate`` result is compared field for field (floats as float32 bytes), every
implementation's ``check_integrity()`` must return ``""``, and inspectable implementations (with
``count``/``children``/``dump``) must agree on every count and on sibling order.
"""

import struct
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from arctic_ref.suffix.cache import SuffixDecodingCache
from arctic_ref.suffix.draft import Draft
from arctic_ref.suffix.tree import SuffixTree
from arctic_ref.suffix.upstream import UPSTREAM_AVAILABLE, UpstreamSuffixDecodingCache, UpstreamSuffixTree
from arctic_ref.suffix.validate import SuffixInputError
from arctic_ref.testing.suffix.oracles import NaiveSuffixIndex
from arctic_ref.testing.suffix.strategies import (
    DEPTHS,
    SEQ_IDS,
    SpeculateArgs,
    bad_tokens,
    copied_tokens,
    speculate_args,
)


@runtime_checkable
class SuffixIndex(Protocol):
    """What every suffix structure under test offers (an opaque one offers no more)."""

    def extend(self, seq_id: int, tokens: Sequence[int]) -> None: ...
    def remove(self, seq_id: int) -> None: ...
    def speculate(
        self,
        context: Sequence[int],
        max_spec_tokens: int,
        max_spec_factor: float,
        max_spec_offset: float,
        min_token_prob: float,
        use_tree_spec: bool,
    ) -> Draft: ...
    def num_seqs(self) -> int: ...


@runtime_checkable
class SelfCheckingIndex(SuffixIndex, Protocol):
    """A suffix structure with upstream's self-check (``""`` when every invariant holds)."""

    def check_integrity(self) -> str: ...


@runtime_checkable
class InspectableIndex(SelfCheckingIndex, Protocol):
    """A suffix structure that also shows its counts and sibling order."""

    def count(self, tokens: Sequence[int]) -> int: ...
    def children(self, tokens: Sequence[int]) -> list[tuple[int, int]]: ...
    def dump(self) -> list[tuple[tuple[int, ...], int]]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Implementation:
    """One implementation under test."""

    name: str
    make_tree: Callable[[int], SuffixIndex]
    """Builds an empty tree of the given ``max_depth``."""
    rejects_bad_input: bool = True
    """Whether it must raise ``SuffixInputError`` (and change nothing) on the inputs of docs/suffix-decoding.md §2.2."""


def reference_trees(*, with_upstream: bool = True) -> list[Implementation]:
    """Ours and the naive oracle, and upstream's C++ tree when it is importable."""
    impls = [
        Implementation(name="arctic_ref", make_tree=SuffixTree),
        Implementation(name="naive", make_tree=NaiveSuffixIndex),
    ]
    if with_upstream and UPSTREAM_AVAILABLE:
        impls.append(Implementation(name="upstream", make_tree=UpstreamSuffixTree, rejects_bad_input=False))
    return impls


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


TREE_PROBE_MIN_PROBS = (0.0, 0.25, 0.5, 1.0)
"""``min_token_prob`` of the tree-mode probes: 0 keeps every branch; at 0.25, 0.5 and 1 equal counts
put q exactly on the cut, which keeps them (docs/suffix-decoding.md §3.4)."""


class SuffixTreeMachine(RuleBasedStateMachine):
    """Random extend/remove/speculate/bad-input sequences applied to every implementation at once."""

    def __init__(self, implementations: Sequence[Implementation]) -> None:
        super().__init__()
        self.compared = 0
        """``speculate`` calls compared across the implementations (a coverage figure)."""
        self.tree_probes = 0
        """Tree-mode probes of ``probe_sibling_order`` compared (not in ``compared``)."""
        if len(implementations) < 2:
            raise ValueError(f"need at least two implementations to compare, got {len(implementations)}")
        self.implementations = list(implementations)
        self.trees: list[SuffixIndex] = []
        self.seqs: dict[int, list[int]] = {}
        self.vocab = 4

    @initialize(depth=st.sampled_from(DEPTHS), vocab=st.integers(2, 6))
    def start(self, depth: int, vocab: int) -> None:
        note(f"max_depth={depth} vocab={vocab}")
        self.trees = [impl.make_tree(depth) for impl in self.implementations]
        self.vocab = vocab

    @rule(data=st.data())
    def extend(self, data: st.DataObject) -> None:
        seq_id = data.draw(st.sampled_from(SEQ_IDS), label="seq_id")
        tokens = data.draw(copied_tokens(list(self.seqs.values()), self.vocab), label="tokens")
        note(f"extend({seq_id}, {tokens})")
        for tree in self.trees:
            tree.extend(seq_id, tokens)
        if tokens:
            self.seqs.setdefault(seq_id, []).extend(tokens)

    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        seq_id = data.draw(st.sampled_from([*sorted(self.seqs), 7]), label="seq_id")
        note(f"remove({seq_id})")
        for tree in self.trees:
            tree.remove(seq_id)
        self.seqs.pop(seq_id, None)

    @rule(data=st.data(), args=speculate_args())
    def speculate(self, data: st.DataObject, args: SpeculateArgs) -> None:
        context = data.draw(copied_tokens(list(self.seqs.values()), self.vocab, max_size=12), label="context")
        note(f"speculate({context}, {args.positional()})")
        results = [pack(tree.speculate(context, *args.positional())) for tree in self.trees]
        self.compared += 1
        for impl, result in zip(self.implementations[1:], results[1:], strict=True):
            assert result == results[0], f"{impl.name} drafts {result}, {self.implementations[0].name} {results[0]}"

    @rule()
    def probe_sibling_order(self) -> None:
        """Path drafts from every one- and two-token pattern over the vocabulary, budgets wide open:
        a path draft follows the first child at each node, so an opaque tree's sibling order (ties
        included) shows here, where only ``speculate`` is visible. A token outside the vocabulary
        leads each context, since the full context is never matched (E2).

        Then tree drafts from every one-token pattern at each of ``TREE_PROBE_MIN_PROBS``: every
        branch's parent index and the cut at q = min_token_prob (kept: the cut is q < P) show here
        (counted in ``tree_probes``, not in ``compared``)."""
        patterns = [[a] for a in range(self.vocab)] + [[a, b] for a in range(self.vocab) for b in range(self.vocab)]
        for pattern in patterns:
            context = [self.vocab + 1, *pattern]
            results = [pack(tree.speculate(context, 8, 10.0, 0.0, 0.0, False)) for tree in self.trees]
            self.compared += 1
            for impl, result in zip(self.implementations[1:], results[1:], strict=True):
                assert result == results[0], (
                    f"sibling order under {pattern}: {impl.name} drafts {result}, {self.implementations[0].name} {results[0]}"
                )
        for token in range(self.vocab):
            context = [self.vocab + 1, token]
            for min_prob in TREE_PROBE_MIN_PROBS:
                results = [pack(tree.speculate(context, 8, 10.0, 0.0, min_prob, True)) for tree in self.trees]
                self.tree_probes += 1
                for impl, result in zip(self.implementations[1:], results[1:], strict=True):
                    assert result == results[0], (
                        f"tree draft under [{token}] at min_token_prob {min_prob}: {impl.name} drafts {result}, "
                        f"{self.implementations[0].name} {results[0]}"
                    )

    @rule(data=st.data())
    def bad_input(self, data: st.DataObject) -> None:
        operation = data.draw(st.sampled_from(["extend", "speculate", "seq_id"]), label="operation")
        bad = data.draw(bad_tokens(), label="bad")
        note(f"bad {operation}: {bad!r}")
        for impl, tree in zip(self.implementations, self.trees, strict=True):
            if not impl.rejects_bad_input:
                continue
            before = _snapshot(tree)
            try:
                if operation == "extend":
                    tree.extend(0, bad)  # type: ignore[arg-type]
                elif operation == "speculate":
                    tree.speculate(bad, 8, 1.0, 0.0, 0.1, False)  # type: ignore[arg-type]
                else:
                    tree.extend(-(2**31), [1])
            except SuffixInputError:
                pass
            else:
                raise AssertionError(f"{impl.name} accepted {operation} {bad!r}")
            assert _snapshot(tree) == before, f"{impl.name} changed state on rejected input"

    @invariant()
    def agree(self) -> None:
        dumps = []
        for impl, tree in zip(self.implementations, self.trees, strict=True):
            problem = tree.check_integrity() if isinstance(tree, SelfCheckingIndex) else ""
            assert problem == "", f"{impl.name}: {problem}"
            assert tree.num_seqs() == len(self.seqs), f"{impl.name}: num_seqs {tree.num_seqs()} != {len(self.seqs)}"
            if isinstance(tree, InspectableIndex):
                dumps.append((impl.name, tree.dump()))
            if isinstance(tree, SuffixTree):
                live = tree.count([])
                assert tree.num_nodes() <= 2 * live, f"{tree.num_nodes()} nodes for {live} live tokens (P10)"
        for name, dump in dumps[1:]:
            assert dump == dumps[0][1], first_dump_difference(dumps[0][0], dumps[0][1], name, dump)


def first_dump_difference(
    name_a: str, a: list[tuple[tuple[int, ...], int]], name_b: str, b: list[tuple[tuple[int, ...], int]]
) -> str:
    """Where two dumps (nodes as (path, count) in walk order) first differ, by node path."""
    for (path_a, count_a), (path_b, count_b) in zip(a, b, strict=False):
        if (path_a, count_a) != (path_b, count_b):
            parent = path_a[:-1] if path_a[:-1] == path_b[:-1] else None
            where = f"under node {list(parent)}" if parent is not None else "in the walk"
            return (
                f"{name_b} and {name_a} disagree on counts or sibling order {where}: {name_a} visits "
                f"{list(path_a)} (count {count_a}), {name_b} visits {list(path_b)} (count {count_b})"
            )
    return f"{name_b} has {len(b)} nodes, {name_a} {len(a)}"


def _snapshot(tree: SuffixIndex) -> object:
    return tree.dump() if isinstance(tree, InspectableIndex) else tree.num_seqs()


# --------------------------------------------------------------------------- the cache


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
