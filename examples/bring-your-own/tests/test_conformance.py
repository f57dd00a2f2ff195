"""The CI gate of this package: the plugin's checks come from the options in pyproject.toml
(``pytest`` alone runs them); the fixtures let a test of one's own use the same kit."""

from byo.cache import make_cache
from byo.sampler import rejection_sample


def test_sampler_passes_the_exact_checks(arctic_ref_rejection_kit) -> None:  # type: ignore[no-untyped-def]
    report = arctic_ref_rejection_kit(rejection_sample, level="quick", statistics=False)
    assert report.ok, report.failed()


def test_cache_starts_like_the_reference(arctic_ref_suffix_cache) -> None:  # type: ignore[no-untyped-def]
    ours, theirs = arctic_ref_suffix_cache(8), make_cache(8)
    for cache in (ours, theirs):
        cache.start_request("a", [1, 2, 3, 1, 2])
    assert list(ours.speculate("a", [1, 2], 4).token_ids) == list(theirs.speculate("a", [1, 2], 4).token_ids)
