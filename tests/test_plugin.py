"""The pytest plugin (``pytest --arctic-ref-…``) through ``pytester``: nothing changes without its
options; the example package of ``examples/bring-your-own`` passes; each of its broken variants
fails on a named check; bad options are usage errors in one line; the fixtures work."""

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from arctic_ref.check_options import SETTINGS, TARGET_COMPONENTS, CheckOptions, Setting
from arctic_ref.pytest_plugin import _options
from arctic_ref.suffix.upstream import UPSTREAM_AVAILABLE
from arctic_ref.testing import machine_verdict
from arctic_ref.testing.drafter import checks as drafter_checks  # noqa: F401
from arctic_ref.testing.exchange import checks as exchange_checks  # noqa: F401
from arctic_ref.testing.sampler import checks as sampler_checks  # noqa: F401
from arctic_ref.testing.suffix_cache import checks as suffix_cache_checks  # noqa: F401
from arctic_ref.testing.suffix_tree import checks as suffix_tree_checks  # noqa: F401

# The component modules (and with them torch, torch.distributed's functional collectives and the
# kit) are imported here, before any inline pytester run: a run's sys.modules snapshot then keeps
# them, where a module first imported inside a run is dropped after it and imported a second time
# by the next, which torch's operator registrations refuse.

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "bring-your-own"
FAST = ("-p", "no:cacheprovider", "-o", "addopts=", "--arctic-ref-hypothesis-profile=dev")


@pytest.fixture
def example(pytester: pytest.Pytester) -> pytest.Pytester:
    """A directory with no tests, the example package importable."""
    pytester.syspathinsert(EXAMPLE)
    return pytester


def test_without_options_the_plugin_adds_nothing_and_imports_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    pytester.makeconftest(
        "import sys\n"
        "def pytest_sessionfinish(session):\n"
        "    heavy = ('arctic_ref.testing', 'arctic_ref.spec', 'arctic_ref.model', 'arctic_ref.runner', 'torch')\n"
        "    loaded = sorted(m for m in sys.modules if m.startswith(heavy))\n"
        "    open('loaded.txt', 'w').write(repr(loaded))\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "arctic-ref: checking" not in result.stdout.str()
    assert (pytester.path / "loaded.txt").read_text() == "[]"  # neither the kit nor torch


@pytest.mark.skipif(not UPSTREAM_AVAILABLE, reason="the example's cache wraps arctic-inference 0.3.0")
def test_the_example_package_passes_with_stable_ids_and_junit(example: pytest.Pytester) -> None:
    result = example.runpytest(
        *FAST,
        "--arctic-ref-suffix-cache=byo.cache:make_cache",
        "--arctic-ref-suffix-tree=byo.tree:make_tree",
        "--arctic-ref-sampler=byo.sampler:rejection_sample",
        "--arctic-ref-drafter=byo.drafter:make_drafter",
        "--arctic-ref-exchange=byo.exchange:make_exchange",
        "--arctic-ref-no-statistics",
        "--junitxml=report.xml",
        "-k",
        "not layout or layout-L2 or layout-L8",  # the world-2 layouts (conformance/ runs the matrix)
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes["passed"] >= 25, result.stdout.str()[-3000:]
    cases = {
        c.get("classname", "") + "::" + c.get("name", "")
        for c in ET.parse(example.path / "report.xml").iter("testcase")
    }
    assert any(c.endswith("::replay-gate") for c in cases) and any(c.endswith("::E8") for c in cases), cases
    assert any(c.endswith("::layout-L8") for c in cases), cases


BROKEN = {
    "exchange": ("byo.broken:make_exchange_permuting_heads", "layout-L2"),
    "suffix-cache": ("byo.broken:make_cache_dropping_a_token", "replay-gate"),
    "suffix-tree": ("byo.broken:make_tree_wrong_tie_break", "differential"),
    "sampler": ("byo.broken:rejection_sample_recovering_from_p", "E8"),
    "drafter": ("byo.broken:make_drafter_too_long", "bounds"),
}


def test_each_broken_variant_fails_on_a_named_check(example: pytest.Pytester) -> None:
    options = [f"--arctic-ref-{component}={value}" for component, (value, _) in BROKEN.items()]
    result = example.runpytest(*FAST, *options, "--arctic-ref-no-statistics", "-rf", "-k", "not layout or layout-L2")
    failed = {r.nodeid for r in result.reprec.getreports("pytest_runtest_logreport") if r.failed}  # type: ignore[attr-defined]
    for component, (value, check) in BROKEN.items():
        assert f"arctic-ref/{component}/{value}::{check}" in failed, (component, sorted(failed))
    text = result.stdout.str()
    assert "first difference: step" in text  # the replay gate names the step and the field
    assert "compared:" in text and "replay:" in text


@pytest.mark.parametrize(
    ("option", "check"),
    [
        ("--arctic-ref-suffix-cache=byo.broken:make_cache_lru", "cache-machine"),
        ("--arctic-ref-suffix-tree=byo.broken:make_tree_counting_removed_tail", "tree-machine"),
    ],
    ids=["lru-instead-of-fifo", "count-off-by-one-on-removal"],
)
def test_the_slow_failures_fail_their_state_machine_with_its_steps(
    example: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, option: str, check: str
) -> None:
    """Derandomized (profile ci), so the failure is found every run; shrinking cut to 5 s here."""
    monkeypatch.setattr(machine_verdict, "SHRINK_SECONDS", 5.0)
    result = example.runpytest("-p", "no:cacheprovider", "-o", "addopts=", option, "-k", check)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*first difference: raised AssertionError*", "*state.start*"])


def test_k_selects_and_a_passing_check_reports_what_it_compared(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*FAST, "--arctic-ref-suffix-tree=arctic_ref.suffix:SuffixTree", "-k", "bad-input", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*arctic-ref/suffix-tree/arctic_ref.suffix:SuffixTree::bad-input PASSED*"])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("nomodule_xyz:make", "--arctic-ref-suffix-cache=nomodule_xyz:make: module 'nomodule_xyz' does not import"),
        (
            "arctic_ref.suffix:Nope",
            "--arctic-ref-suffix-cache=arctic_ref.suffix:Nope: 'arctic_ref.suffix' has no attribute 'Nope'",
        ),
        (
            "arctic_ref.spec.profile:MAX_SPEC_LEN",
            "--arctic-ref-suffix-cache=arctic_ref.spec.profile:MAX_SPEC_LEN: int object is not callable",
        ),
        ("arctic_ref.suffix", "--arctic-ref-suffix-cache=arctic_ref.suffix: expected MODULE:ATTR"),
        ("byo.drafter:LookupDrafter", "the LookupDrafter it returns lacks start_request"),
        ("byo.broken:_DroppingCache.speculate", "raised TypeError"),
    ],
    ids=["no-module", "no-attribute", "not-callable", "no-colon", "wrong-surface", "factory-raises"],
)
def test_bad_options_are_one_line_usage_errors(example: pytest.Pytester, value: str, message: str) -> None:
    result = example.runpytest("-p", "no:cacheprovider", f"--arctic-ref-suffix-cache={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1 and message in errors[0], result.stderr.str()


def test_fixtures_serve_a_test_of_ones_own(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_mine="""
from arctic_ref.spec import rejection_sample
from arctic_ref.testing import LAYOUTS, compare

def test_cache(arctic_ref_suffix_cache):
    cache = arctic_ref_suffix_cache(8)
    cache.start_request("a", [1, 2, 3, 1, 2])
    assert list(cache.speculate("a", [1, 2], 4).token_ids)[:1] == [3]

def test_kit(arctic_ref_rejection_kit):
    report = arctic_ref_rejection_kit(rejection_sample, level="quick", statistics=False)
    assert report.ok, report.failed()

def test_layout(arctic_ref_layout_runner):
    base = arctic_ref_layout_runner(LAYOUTS[0])
    assert compare(base, arctic_ref_layout_runner(LAYOUTS[0])).identical_tokens
"""
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=3)


@pytest.mark.skipif(not UPSTREAM_AVAILABLE, reason="the example's cache wraps arctic-inference 0.3.0")
def test_upstream_differences_are_reported_and_fail_only_when_strict(example: pytest.Pytester) -> None:
    """Upstream's C++ cache differs from the reference on X1, X2 and X5 (docs/suffix-decoding.md §5.2):
    reported as known differences, a failure only under --arctic-ref-strict."""
    base = ("-p", "no:cacheprovider", "--arctic-ref-suffix-cache=byo.cache:make_cache", "-k", "bad-input")
    example.runpytest(*base).assert_outcomes(passed=1)
    strict = example.runpytest(*base, "--arctic-ref-strict")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(["*known upstream difference X1, X2, X5 (fails only with --arctic-ref-strict)*"])


def test_a_clone_of_arctic_ref_below_the_run_is_not_collected(pytester: pytest.Pytester) -> None:
    """The collection trap: run from a folder holding a checkout of arctic_ref, pytest would collect
    its suite, whose non-top-level conftest declares ``pytest_plugins`` and stops the session."""
    clone = pytester.path / "clone"
    (clone / "arctic_ref").mkdir(parents=True)
    (clone / "arctic_ref" / "pytest_plugin.py").write_text("")
    (clone / "tests").mkdir()
    (clone / "tests" / "conftest.py").write_text("pytest_plugins = ['pytester']\n")
    (clone / "tests" / "test_theirs.py").write_text("def test_theirs():\n    assert False\n")
    args = (*FAST, "--arctic-ref-suffix-tree=arctic_ref.suffix:SuffixTree", "-k", "bad-input")
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*its state machines run Hypothesis profile 'dev'*"])
    plain = pytester.runpytest("-p", "no:cacheprovider", "-o", "addopts=")  # no options: the plugin stays out
    assert plain.ret != pytest.ExitCode.OK


GUIDE = Path(__file__).resolve().parents[1] / "docs" / "user-guide.md"


def guide_table(heading: str) -> dict[str, str]:
    """The first column's option (its first backticked word, up to ``=``) → the second column, of
    the table right under ``heading`` in docs/user-guide.md."""
    after = GUIDE.read_text(encoding="utf-8").split(f"\n{heading}\n", 1)[1]
    table = after.lstrip("\n").split("\n\n", 1)[0].splitlines()
    lines = table[2:]  # the rows, under the header and its rule
    cells = [[cell.strip() for cell in line.strip().strip("|").split(" | ")] for line in lines]
    return {row[0].split("`")[1].split("=")[0].split(" ")[0]: row[1] for row in cells}


def values_cell(setting: Setting) -> str:
    """What the guide's "values (default)" column says of ``setting``: its choices and its default."""
    if setting.kind in ("flag", "off-flag"):
        return "flag"
    shown = ", ".join(f"`{choice}`" for choice in setting.choices) if setting.choices else f"`{setting.metavar}`"
    if setting.kind == "repeatable":
        return f"{shown} (none); repeatable"
    return f"{shown} ({'none' if setting.default is None else f'`{setting.default}`'})"


def test_the_user_guides_option_table_is_the_declared_options() -> None:
    """docs/user-guide.md's plugin options are exactly the plugin's: each component option, and each
    setting of ``SETTINGS`` with its choices and default, none missing and none extra."""
    table = guide_table("### Options")
    expected = {f"--arctic-ref-{component}": "repeatable" for component in TARGET_COMPONENTS}
    expected |= {setting.flag("--arctic-ref-"): values_cell(setting) for setting in SETTINGS}
    assert table == expected


def test_the_plugin_declares_the_settings_with_checkoptions_defaults(pytester: pytest.Pytester) -> None:
    """``pytest`` with no option gives ``CheckOptions()``, as ``arctic-ref check`` does."""
    config = pytester.parseconfig()
    assert _options(config) == CheckOptions()
