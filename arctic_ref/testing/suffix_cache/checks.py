"""The suffix-cache component: checks of any object with arctic-inference 0.3.0's
``SuffixDecodingCache`` API, built by ``factory(max_tree_depth, max_cached_requests)`` or
``factory()``. Yours is compared with arctic_ref's cache; ours with upstream's C++ cache and with
brute-force invariants instead, since comparing ours with itself proves nothing."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import settings

from arctic_ref.check_options import CheckOptions
from arctic_ref.suffix.cache import SuffixDecodingCache
from arctic_ref.testing.check import Check
from arctic_ref.testing.loading import arity, build, load_target, require_callable, require_methods
from arctic_ref.testing.machine_verdict import machine_verdict
from arctic_ref.testing.profiles import register_profiles
from arctic_ref.testing.suffix_cache.cache_bad_input import cache_bad_input
from arctic_ref.testing.suffix_cache.cache_examples import CACHE_EXAMPLES, CacheFactory
from arctic_ref.testing.suffix_cache.cache_machine import CacheImplementation, SuffixCacheMachine, fixed_cache_machine
from arctic_ref.testing.suffix_cache.reference_runs import suffix_integrity, suffix_replay
from arctic_ref.testing.suffix_cache.replay_gate import cache_replay
from arctic_ref.testing.worked_examples import examples_verdict

CACHE_METHODS = ("start_request", "add_active_response", "stop_request", "evict_cached_response", "speculate")


@dataclass(frozen=True, slots=True)
class CacheTarget:
    """``make(max_tree_depth, max_cached_requests)``; ``fixed`` = (depth, limit) when the user's
    factory takes no arguments (it is then called as is, and the machine keeps to those values)."""

    make: CacheFactory
    fixed: tuple[int, int] | None = None


def load(value: str, options: CheckOptions, base_dir: Path | None) -> CacheTarget:
    option = options.option("suffix-cache")
    factory: Callable[..., Any] = require_callable(option, value, load_target(option, value, base_dir=base_dir))
    params = arity(option, value, factory, 2)
    probe = build(option, value, factory, *((64, -1)[:params]))
    require_methods(option, value, probe, CACHE_METHODS)
    if params:
        return CacheTarget(lambda depth, limit: factory(depth, limit))
    fixed = (int(getattr(probe, "max_tree_depth", 64)), int(getattr(probe, "max_cached_requests", -1)))
    return CacheTarget(lambda depth, limit: factory(), fixed)


def checks(target: CacheTarget | None, options: CheckOptions) -> list[Check]:
    """Yours: the state machine against arctic_ref's cache, the code-edit replay gate, the worked
    examples and the bad-input table. Ours (``None``): the code-edit replays against upstream (path
    and tree drafts), the invariants after eviction, the worked examples and the bad-input table."""
    register_profiles()
    profile = settings.get_profile(options.hypothesis_profile)
    if target is None:
        return [
            _replay_vs_upstream(tree=False, requests=60),
            _replay_vs_upstream(tree=True, requests=20),
            Check(
                component="suffix-cache",
                id="suffix-invariants",
                title="suffix tree invariants after replay with FIFO eviction",
                meaning="every invariant of docs/suffix-decoding.md §6.1 holds after a replay that evicts",
                run=suffix_integrity,
            ),
            _worked_examples(SuffixDecodingCache),
            _bad_input(SuffixDecodingCache),
        ]
    reference = CacheImplementation(name="arctic_ref", make_cache=SuffixDecodingCache)
    yours = CacheImplementation(name="yours", make_cache=target.make)
    machine_type = SuffixCacheMachine if target.fixed is None else fixed_cache_machine(*target.fixed)
    return [
        Check(
            component="suffix-cache",
            id="cache-machine",
            run=lambda: machine_verdict(
                lambda: machine_type([reference, yours]),
                profile,
                "start/stop/add/evict/speculate against arctic_ref's cache",
                "cache-machine",
            ),
            meaning="a state machine drives your cache and arctic_ref's side by side: same drafts, lists, errors",
        ),
        Check(
            component="suffix-cache",
            id="replay-gate",
            run=lambda: cache_replay(target.make),
            meaning="the built-in code-edit workload: every draft field for field, float32 bit for bit",
        ),
        _worked_examples(target.make),
        _bad_input(target.make),
    ]


def _worked_examples(make: CacheFactory) -> Check:
    return Check(
        component="suffix-cache",
        id="worked-examples",
        run=lambda: examples_verdict(CACHE_EXAMPLES, make),
        meaning="docs/suffix-decoding.md's worked examples: FIFO on restart (E15), eviction (E17), budget 0 (E18)",
    )


def _bad_input(make: CacheFactory) -> Check:
    return Check(
        component="suffix-cache",
        id="bad-input",
        run=lambda: cache_bad_input(make),
        meaning="rejected inputs raise and change nothing; speculate(max_spec_tokens=None) uses the depth (X1)",
    )


def _replay_vs_upstream(*, tree: bool, requests: int) -> Check:
    mode = "tree" if tree else "path"
    return Check(
        component="suffix-cache",
        id=f"suffix-replay-{mode}",
        title=f"suffix cache code-edit replay ({mode} drafts, {requests} requests)",
        meaning=f"the code-edit workload ({mode} drafts): arctic_ref's drafts equal upstream's, with speed ratios",
        run=lambda: suffix_replay(tree, requests),
    )
