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
    TARGET_COMPONENTS,
    TARGET_HELP,
    CheckOptions,
    TargetComponent,
    add_settings,
    check_options,
)

if TYPE_CHECKING:
    from _pytest._code.code import TracebackStyle

    from arctic_ref.suffix.cache import SuffixDecodingCache
    from arctic_ref.testing.check import Check
    from arctic_ref.testing.layout_matrix import LayoutCase, LayoutOutcome
    from arctic_ref.testing.sampler.report import ConformanceReport


PREFIX = "--arctic-ref-"
"""Every option of the plugin starts so: ``--arctic-ref-<component>`` and ``--arctic-ref-<setting>``."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("arctic-ref", "check your implementation against arctic_ref")
    for component in TARGET_COMPONENTS:
        group.addoption(
            f"{PREFIX}{component}", action="append", default=[], metavar="MODULE:ATTR", help=TARGET_HELP[component]
        )
    add_settings(group.addoption, PREFIX)


def _requested(config: pytest.Config) -> list[tuple[TargetComponent, str]]:
    return [(component, value) for component in TARGET_COMPONENTS for value in config.getoption(f"{PREFIX}{component}")]


def _options(config: pytest.Config) -> CheckOptions:
    return check_options(config.option, PREFIX, option_prefix=PREFIX, setting_prefix=PREFIX)


_CHECKS = pytest.StashKey[list[tuple[str, list["Check"]]]]()
_STRICT = pytest.StashKey[bool]()


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
    config.stash[_STRICT] = options.strict


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
        from arctic_ref.testing.check import failure_text, run_and_settle  # loaded already by pytest_configure

        verdict = run_and_settle(self.check, strict=self.config.stash[_STRICT])
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
    from arctic_ref.testing.layout_matrix import run_layout  # lazy: see the module docstring

    return run_layout


def pytest_report_header(config: pytest.Config) -> str | None:
    requested = _requested(config)
    if not requested:
        return None
    profile = _options(config).hypothesis_profile
    return (
        "arctic-ref: checking "
        + ", ".join(f"{c}={v}" for c, v in requested)
        + f"; its state machines run Hypothesis profile {profile!r}, whatever the session's default profile is"
    )
