"""State machines that drive several suffix implementations side by side (docs/suffix-decoding.md §9).

Users test their own implementation by passing it in beside ours::

    from hypothesis.stateful import run_state_machine_as_test
    from arctic_ref.testing import Implementation, SuffixTreeMachine, reference_trees

    impls = [*reference_trees(), Implementation(name="mine", make_tree=MyTree, rejects_bad_input=False)]
    run_state_machine_as_test(lambda: SuffixTreeMachine(impls))

Every ``speculate`` result is compared field for field (floats as float32 bytes), every
implementation's ``check_integrity()`` must return ``""``, and inspectable implementations (with
``count``/``children``/``dump``) must agree on every count and on sibling order.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from arctic_ref.suffix.draft import Draft
from arctic_ref.suffix.tree import SuffixTree
from arctic_ref.suffix.upstream import UPSTREAM_AVAILABLE, UpstreamSuffixTree
from arctic_ref.suffix.validate import SuffixInputError
from arctic_ref.testing.packed_draft import pack
from arctic_ref.testing.suffix_strategies import (
    DEPTHS,
    SEQ_IDS,
    SpeculateArgs,
    bad_tokens,
    copied_tokens,
    speculate_args,
)
from arctic_ref.testing.suffix_tree.naive_oracle import NaiveSuffixIndex


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
