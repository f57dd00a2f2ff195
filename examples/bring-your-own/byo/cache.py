"""A suffix cache over upstream's C++ extension (arctic-inference 0.3.0), as a serving system would
use it: the factory takes upstream's constructor arguments."""

from arctic_inference.suffix_decoding import SuffixDecodingCache


def make_cache(max_tree_depth: int = 64, max_cached_requests: int = -1) -> SuffixDecodingCache:
    return SuffixDecodingCache(max_tree_depth, max_cached_requests)
