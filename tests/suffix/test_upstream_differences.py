"""The deviations X1–X7 of docs/suffix-decoding.md §5.2: upstream's behaviour (each test skips when
upstream is absent) beside ours. Each upstream half is a bug-replay: it fails the day upstream fixes
the bug, which is the signal to revisit the deviation."""

import numpy as np
import pytest

from arctic_ref.suffix import SuffixDecodingCache, SuffixInputError, SuffixTree
from arctic_ref.suffix.upstream import UPSTREAM_AVAILABLE

needs_upstream = pytest.mark.skipif(not UPSTREAM_AVAILABLE, reason="arctic-inference 0.3.0 is not installed")

if UPSTREAM_AVAILABLE:
    from arctic_inference.suffix_decoding import SuffixDecodingCache as UpstreamCache
    from arctic_inference.suffix_decoding._C import SuffixTree as UpstreamTree

INT32_MIN = -(2**31)


class TestX1NoneSpecTokens:
    @pytest.mark.upstream
    @needs_upstream
    def test_upstream_raises_attribute_error(self) -> None:
        cache = UpstreamCache(8)
        cache.start_request("a", [1, 2, 3])
        with pytest.raises(AttributeError, match="max_depth"):
            cache.speculate("a", [1, 2])

    def test_ours_uses_the_depth(self) -> None:
        cache = SuffixDecodingCache(8)
        cache.start_request("a", [1, 2, 3])
        assert cache.speculate("a", [1, 2]) == cache.speculate("a", [1, 2], 8)


class TestX2ReservedTokenInExtend:
    @pytest.mark.upstream
    @needs_upstream
    def test_upstream_corrupts_its_tree(self) -> None:
        tree = UpstreamTree(8)
        tree.extend(0, [1, 2, 3])
        with pytest.raises(ValueError, match="invalid key"):
            tree.extend(0, [4, INT32_MIN])
        assert tree.check_integrity() != ""

    def test_ours_rejects_before_any_change(self) -> None:
        tree = SuffixTree(8)
        tree.extend(0, [1, 2, 3])
        before = tree.dump()
        with pytest.raises(SuffixInputError, match=r"tokens\[1\] = -2147483648 is reserved"):
            tree.extend(0, [4, INT32_MIN])
        assert tree.dump() == before and tree.check_integrity() == ""


class TestX3ReservedTokenInContext:
    @pytest.mark.upstream
    @needs_upstream
    def test_upstream_depends_on_where_it_is(self) -> None:
        tree = UpstreamTree(8)
        tree.extend(0, [5, 6, 7])
        assert list(tree.speculate([INT32_MIN, 6, 7], 8, 1.0, 0.0, 0.1, False).token_ids) == []
        with pytest.raises(ValueError, match="invalid key"):
            tree.speculate([6, INT32_MIN], 8, 1.0, 0.0, 0.1, False)

    @pytest.mark.parametrize("context", [[INT32_MIN, 6, 7], [6, INT32_MIN]], ids=["first", "last"])
    def test_ours_always_rejects(self, context: list[int]) -> None:
        tree = SuffixTree(8)
        tree.extend(0, [5, 6, 7])
        with pytest.raises(SuffixInputError, match="reserved"):
            tree.speculate(context, 8, 1.0, 0.0, 0.1, False)


class TestX4ReservedSeqId:
    @pytest.mark.upstream
    @needs_upstream
    def test_upstream_accepts_it_with_no_tokens(self) -> None:
        tree = UpstreamTree(8)
        tree.extend(INT32_MIN, [])
        with pytest.raises(ValueError, match="invalid key"):
            tree.extend(INT32_MIN, [1])

    def test_ours_always_rejects(self) -> None:
        tree = SuffixTree(8)
        with pytest.raises(SuffixInputError, match="seq_id = -2147483648 is reserved"):
            tree.extend(INT32_MIN, [])


class TestX5NonIntegers:
    @pytest.mark.upstream
    @needs_upstream
    def test_upstream_truncates_and_half_starts(self) -> None:
        tree = UpstreamTree(8)
        tree.extend(0, [np.float32(1.5)])
        tree.extend(1, [np.bool_(True)])
        assert tree.num_seqs() == 2
        cache = UpstreamCache(8)
        with pytest.raises(TypeError):
            cache.start_request("a", [1, 2**31])
        assert list(cache.active_requests) == ["a"]

    @pytest.mark.parametrize("bad", [np.float32(1.5), np.bool_(True), 1.5, 2**31, None, "x"], ids=repr)
    def test_ours_rejects(self, bad: object) -> None:
        tree = SuffixTree(8)
        with pytest.raises(SuffixInputError):
            tree.extend(0, [bad])  # type: ignore[list-item]
        cache = SuffixDecodingCache(8)
        with pytest.raises(SuffixInputError):
            cache.start_request("a", [1, bad])  # type: ignore[list-item]
        assert tree.num_seqs() == 0 and not cache.active_requests


class TestX6CheckIntegrityMutates:
    @pytest.mark.upstream
    @needs_upstream
    def test_upstream_inserts_sequences_and_fails_at_depth_zero(self) -> None:
        tree = UpstreamTree(8)
        tree.extend(2, [1])
        assert tree.check_integrity() == ""
        assert tree.num_seqs() == 3
        flat = UpstreamTree(0)
        flat.extend(0, [1, 2])
        assert flat.check_integrity() != ""

    def test_ours_is_read_only(self) -> None:
        tree = SuffixTree(8)
        tree.extend(2, [1])
        tree.extend(-5, [1, 2])
        assert tree.check_integrity() == "" and tree.num_seqs() == 2
        flat = SuffixTree(0)
        flat.extend(0, [1, 2])
        assert flat.check_integrity() == ""


class TestX7EstimateMemory:
    @pytest.mark.upstream
    @needs_upstream
    def test_upstream_figure_beside_ours(self) -> None:
        """Not compared: each is a figure of its own implementation. Both grow with the tokens."""
        for n in (10, 100, 1000):
            theirs, ours = UpstreamTree(64), SuffixTree(64)
            theirs.extend(0, list(range(n)))
            ours.extend(0, list(range(n)))
            assert theirs.estimate_memory() > 0 and ours.estimate_memory() > 0

    def test_ours_is_deterministic_and_grows(self) -> None:
        sizes = []
        for n in (10, 100, 1000):
            tree = SuffixTree(64)
            tree.extend(0, list(range(n)))
            assert tree.estimate_memory() == tree.estimate_memory()
            sizes.append(tree.estimate_memory())
        assert sizes == sorted(sizes) and sizes[2] > 10 * 8 * 100
