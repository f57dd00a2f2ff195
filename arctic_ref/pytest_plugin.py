"""The pytest plugin (entry point ``pytest11``): ``pytest --arctic-ref-suffix-cache=MODULE:FACTORY``
(and ``-suffix-tree``, ``-sampler``, ``-exchange``, ``-drafter``) collects arctic_ref's checks of
that implementation as ordinary items with stable ids, from any directory. The checks are the ones
``arctic-ref check --impl`` runs: ``arctic_ref.testing.front_door.component_checks``.

A ``pytest11`` plugin is imported in every pytest run of the environment, before any
``conftest.py``. So at import it loads only ``arctic_ref.check_options`` (the standard library); the
kit, and with it torch, is imported inside the hooks, and only when an ``--arctic-ref-*`` option
asks for a check. Importing the kit earlier would cost every unrelated run about two seconds, fail
where the ``testing`` extra is not installed, and import arctic_ref before a suite's own import
hooks (jaxtyping's runtime checks) are installed.
"""

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from arctic_ref.check_options import (
    BACKENDS,
    DEVICES,
    HYPOTHESIS_PROFILES,
    LEVELS,
    SAMPLER_CATEGORIES,
    SAMPLER_PROFILE_NAMES,
    TARGET_COMPONENTS,
    TARGET_HELP,
    CheckOptions,
    TargetComponent,
)

if TYPE_CHECKING:
    from _pytest._code.code import TracebackStyle

    from arctic_ref.suffix.cache import SuffixDecodingCache
    from arctic_ref.testing.check import Check
    from arctic_ref.testing.layouts.matrix import LayoutCase, LayoutOutcome
    from arctic_ref.testing.sampler.report import ConformanceReport


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("arctic-ref", "check your implementation against arctic_ref")
    for component in TARGET_COMPONENTS:
        group.addoption(
            f"--arctic-ref-{component}", action="append", default=[], metavar="MODULE:ATTR", help=TARGET_HELP[component]
        )
    group.addoption(
        "--arctic-ref-level",
        choices=LEVELS,
        default="quick",
        help="sampler kit level: quick (400 exact cases, 50,000 requests per statistical test) or full",
    )
    group.addoption("--arctic-ref-device", choices=DEVICES, default="cpu", help="device of the sampler kit")
    group.addoption(
        "--arctic-ref-profile",
        choices=SAMPLER_PROFILE_NAMES,
        default="intended",
        help="sampler profile: the intended numerics, or vLLM 0.9.2's, or vLLM 0.32's (its CPU build)",
    )
    group.addoption(
        "--arctic-ref-backend",
        choices=BACKENDS,
        default="gloo",
        help="the exchange's process groups: gloo on CPU, nccl with one GPU per rank",
    )
    group.addoption(
        "--arctic-ref-no-statistics",
        action="store_true",
        help="sampler: the exact checks only (S1-S5 pass untested); for a fast pre-commit run",
    )
    group.addoption(
        "--arctic-ref-leave-out",
        action="append",
        default=[],
        choices=SAMPLER_CATEGORIES,
        metavar="CATEGORY",
        help="sampler: report this category's checks as skipped (strict: arctic_ref's stricter input contract, "
        "E15-SHAPES, E15-FLAGS, E15-NAN); repeatable",
    )
    group.addoption(
        "--arctic-ref-strict",
        action="store_true",
        help="fail on documented upstream differences (X1-X7) too; they are reported either way",
    )
    group.addoption(
        "--arctic-ref-engine-model",
        metavar="DIR",
        default=None,
        help="engine: the Hugging Face Llama checkpoint every engine build serves (default: the kit's own, "
        "seeded random weights with head_dim 32)",
    )
    group.addoption(
        "--arctic-ref-engine-dtype", default="float32", metavar="DTYPE", help="engine: the dtype every build gets"
    )
    group.addoption(
        "--arctic-ref-drafter-config",
        metavar="JSON",
        default=None,
        help="drafter: the speculative_config (a JSON object of vLLM's keys) a vLLM proposer class is built with, "
        'over the defaults ({"method": "suffix"}; {"method": "ngram", "num_speculative_tokens": 4})',
    )
    group.addoption(
        "--arctic-ref-hypothesis-profile",
        choices=HYPOTHESIS_PROFILES,
        default="ci",
        help="Hypothesis profile of the state machines (ci: derandomized, the default)",
    )


def _requested(config: pytest.Config) -> list[tuple[TargetComponent, str]]:
    return [
        (component, value) for component in TARGET_COMPONENTS for value in config.getoption(f"--arctic-ref-{component}")
    ]


def _options(config: pytest.Config) -> CheckOptions:
    return CheckOptions(
        level=config.getoption("--arctic-ref-level"),
        device=config.getoption("--arctic-ref-device"),
        profile=config.getoption("--arctic-ref-profile"),
        strict=config.getoption("--arctic-ref-strict"),
        hypothesis_profile=config.getoption("--arctic-ref-hypothesis-profile"),
        statistics=not config.getoption("--arctic-ref-no-statistics"),
        backend=config.getoption("--arctic-ref-backend"),
        leave_out=tuple(config.getoption("--arctic-ref-leave-out")),
        engine_model=config.getoption("--arctic-ref-engine-model"),
        engine_dtype=config.getoption("--arctic-ref-engine-dtype"),
        drafter_config=config.getoption("--arctic-ref-drafter-config"),
    )


_CHECKS = pytest.StashKey[list[tuple[str, list["Check"]]]]()


def pytest_configure(config: pytest.Config) -> None:
    """Build every requested check now, so a bad option is a usage error (exit status 4) before
    collection, in one line that names the option, the value and what was wrong."""
    config.addinivalue_line("markers", "arctic_ref: a check of your implementation added by --arctic-ref-* options")
    requested = _requested(config)
    if not requested:
        return
    # Lazy on purpose: the kit (and torch) loads only when a check was asked for (module docstring).
    from arctic_ref.testing.front_door import component_checks
    from arctic_ref.testing.loading import TargetError

    options = _options(config)
    checks = []
    for component, value in requested:
        try:
            checks.append((value, component_checks(component, value, options, base_dir=config.invocation_params.dir)))
        except TargetError as error:
            raise pytest.UsageError(str(error)) from None
    config.stash[_CHECKS] = checks


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With ``--arctic-ref-*`` options, never collect a checkout of arctic_ref itself found below
    the invocation directory (a clone beside your code): its own suite's conftest would stop the
    run ("Defining 'pytest_plugins' in a non-top-level conftest") before any check runs."""
    if not _requested(config) or not collection_path.is_dir():
        return None
    is_clone = (collection_path / "arctic_ref" / "pytest_plugin.py").is_file()
    return True if is_clone and collection_path != config.invocation_params.dir else None


class ArcticRefItem(pytest.Item):
    """One check of the user's implementation; its id is ``arctic-ref/<component>/<value>::<check>``."""

    check: "Check"
    """Set by ``ArcticRefCollector.collect`` right after ``from_parent``."""

    def runtest(self) -> None:
        from arctic_ref.testing.check import failure_text, run_check  # loaded already by pytest_configure

        verdict = run_check(self.check)
        if verdict.skipped:
            pytest.skip(verdict.skipped)
        if verdict.known_difference and verdict.passed:
            self.user_properties.append(("known_difference", verdict.known_difference))
        if not verdict.passed:
            raise CheckFailed(failure_text(self.check, verdict))
        self.user_properties.append(("compared", verdict.compared))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: "TracebackStyle | None" = None) -> str:
        if isinstance(excinfo.value, CheckFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.check.component} {self.check.id}: {self.check.meaning}"


class CheckFailed(Exception):
    """A check's verdict was a failure; the message is the verdict, not a traceback."""


class ArcticRefCollector(pytest.Collector):
    """The checks of one ``--arctic-ref-<component>=VALUE``."""

    checks: list["Check"]
    """Set by ``pytest_collection_modifyitems`` right after ``from_parent``."""

    def collect(self) -> Iterator[pytest.Item]:
        for check in self.checks:
            item = ArcticRefItem.from_parent(self, name=check.id)
            item.check = check
            item.add_marker(pytest.mark.arctic_ref)
            yield item


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Append the requested checks before -k, -m, --lf and friends see the items (tryfirst)."""
    for value, checks in config.stash.get(_CHECKS, []):
        component = checks[0].component if checks else "none"
        name = f"arctic-ref/{component}/{value}"
        collector = ArcticRefCollector.from_parent(session, name=name, nodeid=name)
        collector.checks = checks
        items.extend(collector.collect())


@pytest.fixture
def arctic_ref_suffix_cache() -> "type[SuffixDecodingCache]":
    """A factory of arctic_ref's reference ``SuffixDecodingCache`` (upstream 0.3.0's signature)."""
    from arctic_ref.suffix.cache import SuffixDecodingCache  # lazy: see the module docstring

    return SuffixDecodingCache


@pytest.fixture
def arctic_ref_rejection_kit() -> "Callable[..., ConformanceReport]":
    """``check_rejection_sampler``: call it on your sampler, assert ``report.ok``."""
    from arctic_ref.testing.sampler.kit import check_rejection_sampler  # lazy: see the module docstring

    return check_rejection_sampler


@pytest.fixture
def arctic_ref_layout_runner() -> "Callable[[LayoutCase], LayoutOutcome]":
    """``run_layout(case)``: one ``LayoutCase`` (``LAYOUTS[i]``, or one changed with
    ``dataclasses.replace``) run on its world size over gloo; returns rank 0's ``LayoutOutcome``,
    to ``compare`` with ``run_layout(LAYOUTS[0])``."""
    from arctic_ref.testing.layouts.matrix import run_layout  # lazy: see the module docstring

    return run_layout


def pytest_report_header(config: pytest.Config) -> str | None:
    requested = _requested(config)
    if not requested:
        return None
    profile = config.getoption("--arctic-ref-hypothesis-profile")
    return (
        "arctic-ref: checking "
        + ", ".join(f"{c}={v}" for c, v in requested)
        + f"; its state machines run Hypothesis profile {profile!r}, whatever the session's default profile is"
    )
