"""Property tests P1–P12 of docs/suffix-decoding.md §6.2."""

import itertools
import json
import os
import subprocess
import sys
from collections import Counter

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from arctic_ref.suffix import SuffixInputError, SuffixTree
from arctic_ref.suffix.drafting import budget
from arctic_ref.suffix.validate import check_float, check_int32, f32
from arctic_ref.testing.suffix_strategies import DEPTHS, SpeculateArgs, bad_tokens, speculate_args, token_lists
from arctic_ref.testing.suffix_tree.naive_oracle import NaiveSuffixIndex

Op = tuple[str, int, list[int]]
ops = st.lists(
    st.one_of(
        st.tuples(st.just("extend"), st.integers(0, 3), token_lists(3, 7)),
        st.tuples(st.just("remove"), st.integers(0, 4), st.just([])),
    ),
    max_size=12,
)


def apply(tree: SuffixTree | NaiveSuffixIndex, operations: list[Op]) -> dict[int, list[int]]:
    live: dict[int, list[int]] = {}
    for kind, seq_id, tokens in operations:
        if kind == "extend":
            tree.extend(seq_id, tokens)
            if tokens:
                live.setdefault(seq_id, []).extend(tokens)
        else:
            tree.remove(seq_id)
            live.pop(seq_id, None)
    return live


def occurrences(live: dict[int, list[int]], p: tuple[int, ...]) -> int:
    return sum(1 for seq in live.values() for i in range(len(seq) - len(p) + 1) if tuple(seq[i : i + len(p)]) == p)


@given(st.sampled_from(DEPTHS), ops)
def test_p1_counts_are_occurrences(depth: int, operations: list[Op]) -> None:
    tree = SuffixTree(depth)
    live = apply(tree, operations)
    assert tree.check_integrity() == ""
    limit = 4 if depth < 0 else min(depth, 4)
    strings = {p for n in range(1, limit + 1) for p in itertools.product(range(3), repeat=n)}
    strings |= {tuple(seq[i:j]) for seq in live.values() for i in range(len(seq)) for j in range(i + 1, len(seq) + 1)}
    for p in strings:
        expected = occurrences(live, p) if depth != 0 and (depth < 0 or len(p) <= depth) else 0
        assert tree.count(list(p)) == expected, p


@given(st.sampled_from(DEPTHS), ops)
def test_p2_root_counts_live_tokens_and_empties(depth: int, operations: list[Op]) -> None:
    tree = SuffixTree(depth)
    live = apply(tree, operations)
    assert tree.count([]) == sum(map(len, live.values()))
    for seq_id in list(live):
        tree.remove(seq_id)
    assert (tree.count([]), tree.num_nodes(), tree.num_seqs(), tree.dump()) == (0, 0, 0, [((), 0)])


@given(st.sampled_from(DEPTHS), ops)
def test_p3_sibling_order_matches_oracle(depth: int, operations: list[Op]) -> None:
    tree, oracle = SuffixTree(depth), NaiveSuffixIndex(depth)
    apply(tree, operations)
    apply(oracle, operations)
    for string, _ in tree.dump():
        children = tree.children(list(string))
        counts = [c for _, c in children]
        assert counts == sorted(counts, reverse=True)
        assert children == oracle.children(list(string))


@given(st.sampled_from(DEPTHS), ops, token_lists(3, 8), token_lists(3, 8))
def test_p4_extend_splits_freely(depth: int, operations: list[Op], a: list[int], b: list[int]) -> None:
    one, two = SuffixTree(depth), SuffixTree(depth)
    apply(one, operations)
    apply(two, operations)
    one.extend(2, a + b)
    two.extend(2, a)
    two.extend(2, b)
    assert one.dump() == two.dump()


@given(st.sampled_from(DEPTHS), ops, token_lists(3, 8))
def test_p5_extend_then_remove_restores_counts(depth: int, operations: list[Op], extra: list[int]) -> None:
    tree = SuffixTree(depth)
    apply(tree, operations)
    before = sorted(tree.dump())
    tree.extend(99, extra)
    tree.remove(99)
    assert sorted(tree.dump()) == before
    assert tree.check_integrity() == ""


@given(st.sampled_from(DEPTHS), st.lists(token_lists(3, 6), min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_p6_insertion_order_does_not_change_counts(depth: int, seqs: list[list[int]], rng: object) -> None:
    pieces = [(i, seq[k : k + 2]) for i, seq in enumerate(seqs) for k in range(0, len(seq), 2)]
    in_order, shuffled = SuffixTree(depth), SuffixTree(depth)
    for i, seq in enumerate(seqs):
        in_order.extend(i, seq)
    # Interleave pieces across sequences while keeping each sequence's own order.
    queues = {i: [p for j, p in pieces if j == i] for i in range(len(seqs))}
    while any(queues.values()):
        i = rng.choice([i for i, q in queues.items() if q])  # type: ignore[attr-defined]
        shuffled.extend(i, queues[i].pop(0))
    assert Counter(dict(in_order.dump())) == Counter(dict(shuffled.dump()))


@given(st.sampled_from(DEPTHS), ops, st.lists(st.integers(0, 2), max_size=10), speculate_args())
def test_p7_drafts_are_well_formed(depth: int, operations: list[Op], context: list[int], args: SpeculateArgs) -> None:
    tree = SuffixTree(depth)
    apply(tree, operations)
    d = tree.speculate(context, *args.positional())
    n = len(d.token_ids)
    assert len(d.parents) == n == len(d.probs)
    score = np.float32(0.0)
    for i, (parent, prob) in enumerate(zip(d.parents, d.probs, strict=True)):
        assert -1 <= parent < i
        if not args.use_tree_spec:
            assert parent == i - 1
        if parent >= 0:
            assert prob <= d.probs[parent]
        score = np.float32(score + np.float32(prob))
        assert float(np.float32(prob)) == prob
    assert float(score) == d.score
    assert d.match_len <= max(len(context) - 1, 0)
    reachable = len(context) >= 2 and depth != 0 and tree.count(context[-1:]) > 0
    assert (d.match_len >= 1) == reachable
    if d.match_len:
        limit = budget(d.match_len, f32(args.max_spec_factor), f32(args.max_spec_offset), args.max_spec_tokens)
        assert n <= limit
        if depth >= 0 and not args.use_tree_spec:
            assert n <= depth - d.match_len
    matched = context[len(context) - d.match_len :]
    for i in range(n):
        chain = []
        k = i
        while k >= 0:
            chain.append(d.token_ids[k])
            k = d.parents[k]
        assert tree.count(matched + chain[::-1]) > 0
        if depth >= 0:  # a tree draft is bounded in depth, not in size (docs/suffix-decoding.md P7 says len for paths)
            assert len(chain) <= depth - d.match_len
        p = args.min_token_prob
        if p == p and d.probs[i] != 1.0:
            assert d.probs[i] >= f32(p)


@given(st.sampled_from(DEPTHS), ops, token_lists(3, 4), st.integers(0, 40), speculate_args())
def test_the_tail_hint_changes_no_draft(
    depth: int, operations: list[Op], head: list[int], shared: int, args: SpeculateArgs
) -> None:
    """``_speculate_checked(tail_of=s)`` reads the open suffixes of ``s`` for the context suffixes the two
    share (what the cache passes: the request's own sequence); the drafts must be those of a walk from
    the root, for every live sequence named, one that is not live, and contexts sharing any tail length."""
    tree = SuffixTree(depth)
    live = apply(tree, operations)
    validated = (
        check_int32("max_spec_tokens", args.max_spec_tokens),
        check_float("max_spec_factor", args.max_spec_factor),
        check_float("max_spec_offset", args.max_spec_offset),
        check_float("min_token_prob", args.min_token_prob),
        args.use_tree_spec,
    )
    for seq_id in [*live, 99]:
        tail = live.get(seq_id, [])
        context = head + tail[max(len(tail) - shared, 0) :]
        plain = tree.speculate(context, *args.positional())
        assert tree._speculate_checked(context, *validated, tail_of=seq_id) == plain, (seq_id, context)
    assert tree.check_integrity() == ""


@given(st.sampled_from(DEPTHS), ops, st.lists(st.integers(0, 2), max_size=10), speculate_args())
def test_p8_queries_are_read_only(depth: int, operations: list[Op], context: list[int], args: SpeculateArgs) -> None:
    tree = SuffixTree(depth)
    apply(tree, operations)
    before = tree.dump()
    tree.speculate(context, *args.positional())
    tree.check_integrity()
    tree.estimate_memory()
    tree.num_nodes()
    tree.count(context)
    tree.children(context)
    assert tree.dump() == before


@given(st.sampled_from(DEPTHS), ops, bad_tokens())
def test_p9_rejected_input_changes_nothing(depth: int, operations: list[Op], bad: object) -> None:
    tree = SuffixTree(depth)
    apply(tree, operations)
    before = tree.dump()
    for call in (lambda: tree.extend(1, bad), lambda: tree.speculate(bad, 4, 1.0, 0.0, 0.1, False)):  # type: ignore[arg-type]
        try:
            call()
        except SuffixInputError:
            pass
        else:
            raise AssertionError(f"accepted {bad!r}")
        assert tree.dump() == before


@given(st.sampled_from(DEPTHS), ops)
def test_p10_node_count_is_linear(depth: int, operations: list[Op]) -> None:
    tree = SuffixTree(depth)
    for op in operations:
        apply(tree, [op])
        assert tree.num_nodes() <= 2 * tree.count([])


_DETERMINISM_SCRIPT = """
import json
from arctic_ref.suffix import SuffixDecodingCache
from arctic_ref.suffix.simulate import SimulationConfig, replay
from arctic_ref.suffix.workload import code_edit_trace, TraceRequest
trace = [TraceRequest(req_id=f"r{r.req_id}", prompt_token_ids=r.prompt_token_ids, response_token_ids=r.response_token_ids)
         for r in code_edit_trace(requests=6, seed=3)]
result = replay(SuffixDecodingCache(), trace, SimulationConfig(use_tree_spec=True), keep_drafts=True)
print(json.dumps([[list(d[0]), list(d[1]), d[2].hex(), d[3].hex(), d[4]] for d in result.drafts]))
"""


def test_p12_drafts_do_not_depend_on_hash_seed() -> None:
    outputs = []
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run(
            [sys.executable, "-c", _DETERMINISM_SCRIPT], env=env, capture_output=True, text=True, check=True
        )
        outputs.append(json.loads(run.stdout))
    assert outputs[0] == outputs[1] and len(outputs[0]) > 10
