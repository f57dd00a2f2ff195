"""The pytest plugin (entry point ``pytest11``): ``pytest --arctic-ref-suffix-cache=MODULE:FACTORY``
(and ``-suffix-tree``, ``-sampler``, ``-drafter``) collects arctic_ref's checks of that implementation
as ordinary items with stable ids, from any directory. Without an ``--arctic-ref-*`` option it adds
no items and imports neither the kit nor torch (only ``arctic_ref``'s pure-Python top level).

The kit is imported inside the hooks, by name, on purpose: a ``pytest11`` plugin is imported in
every pytest run of the environment, before any ``conftest.py``. Importing the kit at plugin import
would cost every unrelated run about two seconds, and would import arctic_ref before a suite's own
import hooks (jaxtyping's runtime checks) are installed.
"""

import importlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

COMPONENT_OPTIONS = {
    "suffix-cache": "MODULE:FACTORY returning an object with arctic-inference 0.3.0's SuffixDecodingCache API; "
    "the factory takes no arguments or (max_tree_depth, max_cached_requests)",
    "suffix-tree": "MODULE:FACTORY returning an object with arctic-inference 0.3.0's SuffixTree API; "
    "the factory takes no arguments or (max_depth)",
    "sampler": "MODULE:FUNCTION with vLLM's rejection_sample argument list (arctic_ref.spec.rejection_sample)",
    "exchange": "MODULE:FACTORY returning a Ulysses exchange (seq_to_heads(x, comm), heads_to_seq(y, comm)), "
    "built on every rank and run inside the reference forward over the layout matrix",
    "drafter": "MODULE:FACTORY returning a drafter with propose(rows) or propose_with_hidden(rows, hidden, "
    "num_drafts); the factory takes no arguments or (max_model_len)",
}
KIT = "arctic_ref.testing.targets"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("arctic-ref", "check your implementation against arctic_ref")
    for component, meaning in COMPONENT_OPTIONS.items():
        group.addoption(f"--arctic-ref-{component}", action="append", default=[], metavar="MODULE:ATTR", help=meaning)
    group.addoption(
        "--arctic-ref-level",
        choices=("quick", "full"),
        default="quick",
        help="sampler kit level: quick (400 exact cases, 50,000 requests per statistical test) or full",
    )
    group.addoption("--arctic-ref-device", choices=("cpu", "cuda"), default="cpu", help="device of the sampler kit")
    group.addoption(
        "--arctic-ref-profile",
        choices=("intended", "vllm-0.9.2"),
        default="intended",
        help="sampler profile: the intended numerics, or vLLM 0.9.2's",
    )
    group.addoption(
        "--arctic-ref-backend",
        choices=("gloo", "nccl"),
        default="gloo",
        help="the exchange's process groups: gloo on CPU, nccl with one GPU per rank",
    )
    group.addoption(
        "--arctic-ref-no-statistics",
        action="store_true",
        help="sampler: the exact checks only (S1-S5 pass untested); for a fast pre-commit run",
    )
    group.addoption(
        "--arctic-ref-strict",
        action="store_true",
        help="fail on documented upstream differences (X1-X7) too; they are reported either way",
    )
    group.addoption(
        "--arctic-ref-hypothesis-profile",
        choices=("dev", "ci", "nightly"),
        default="ci",
        help="Hypothesis profile of the state machines (ci: derandomized, the default)",
    )


def _requested(config: pytest.Config) -> list[tuple[str, str]]:
    return [
        (component, value) for component in COMPONENT_OPTIONS for value in config.getoption(f"--arctic-ref-{component}")
    ]


def pytest_configure(config: pytest.Config) -> None:
    """Build every requested check now, so a bad option is a usage error (exit status 4) before
    collection, in one line that names the option, the value and what was wrong."""
    config.addinivalue_line("markers", "arctic_ref: a check of your implementation added by --arctic-ref-* options")
    requested = _requested(config)
    if not requested:
        return
    targets = importlib.import_module(f"{KIT}.registry")
    loading = importlib.import_module(f"{KIT}.loading")
    importlib.import_module("arctic_ref.testing.profiles").register_profiles()
    options = targets.TargetOptions(
        level=config.getoption("--arctic-ref-level"),
        device=config.getoption("--arctic-ref-device"),
        profile=config.getoption("--arctic-ref-profile"),
        strict=config.getoption("--arctic-ref-strict"),
        hypothesis_profile=config.getoption("--arctic-ref-hypothesis-profile"),
        statistics=not config.getoption("--arctic-ref-no-statistics"),
        backend=config.getoption("--arctic-ref-backend"),
    )
    checks = []
    for component, value in requested:
        try:
            checks.append(
                (value, targets.target_checks(component, value, options, base_dir=config.invocation_params.dir))
            )
        except loading.TargetError as error:
            raise pytest.UsageError(str(error)) from None
    config.stash[_CHECKS] = checks


_CHECKS = pytest.StashKey[list[tuple[str, list[Any]]]]()


class ArcticRefItem(pytest.Item):
    """One check of the user's implementation; its id is ``arctic-ref/<component>/<value>::<check>``."""

    def __init__(self, *, check: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check = check
        self.add_marker(pytest.mark.arctic_ref)

    def runtest(self) -> None:
        verdict_module = importlib.import_module(f"{KIT}.verdict")
        verdict = verdict_module.run_check(self.check)
        if verdict.skipped:
            pytest.skip(verdict.skipped)
        if verdict.known_difference and verdict.passed:
            self.user_properties.append(("known_difference", verdict.known_difference))
        if not verdict.passed:
            raise CheckFailed(verdict_module.failure_text(self.check, verdict))
        self.user_properties.append(("compared", verdict.compared))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CheckFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.check.component} {self.check.id}: {self.check.meaning}"


class CheckFailed(Exception):
    """A check's verdict was a failure; the message is the verdict, not a traceback."""


class ArcticRefCollector(pytest.Collector):
    """The checks of one ``--arctic-ref-<component>=VALUE``."""

    def __init__(self, *, checks: list[Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.checks = checks

    def collect(self) -> Iterator[pytest.Item]:
        for check in self.checks:
            yield ArcticRefItem.from_parent(self, name=check.id, check=check)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Append the requested checks before -k, -m, --lf and friends see the items (tryfirst)."""
    for value, checks in config.stash.get(_CHECKS, []):
        component = checks[0].component if checks else "none"
        name = f"arctic-ref/{component}/{value}"
        collector = ArcticRefCollector.from_parent(session, name=name, nodeid=name, checks=checks)
        items.extend(collector.collect())


@pytest.fixture
def arctic_ref_suffix_cache() -> Callable[..., Any]:
    """A factory of arctic_ref's reference ``SuffixDecodingCache`` (upstream 0.3.0's signature)."""
    return importlib.import_module("arctic_ref.suffix").SuffixDecodingCache  # type: ignore[no-any-return]


@pytest.fixture
def arctic_ref_rejection_kit() -> Callable[..., Any]:
    """``check_rejection_sampler``: call it on your sampler, assert ``report.ok``."""
    return importlib.import_module("arctic_ref.testing").check_rejection_sampler  # type: ignore[no-any-return]


@pytest.fixture
def arctic_ref_layout_runner() -> Callable[..., Any]:
    """``run_layout(case)``: one ``LayoutCase`` (``LAYOUTS[i]``, or one changed with
    ``dataclasses.replace``) run on its world size over gloo; returns rank 0's ``LayoutOutcome``,
    to ``compare`` with ``run_layout(LAYOUTS[0])``."""
    return importlib.import_module("arctic_ref.testing.layouts.matrix").run_layout  # type: ignore[no-any-return]


def pytest_report_header(config: pytest.Config) -> str | None:
    requested = _requested(config)
    if not requested:
        return None
    return "arctic-ref: checking " + ", ".join(f"{c}={v}" for c, v in requested)
