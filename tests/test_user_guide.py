"""docs/user-guide.md's lists of check ids are the code's: each component's checks on ours and on
yours, the earlier battery ids, and the sampler kit's ids in the table's order. A check added,
renamed or removed without the guide fails here."""

import re
import sys
from pathlib import Path

import pytest

from arctic_ref.check_options import COMPONENTS, CheckOptions
from arctic_ref.testing.front_door import component_checks
from arctic_ref.testing.sampler.table import MEANINGS

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "user-guide.md").read_text(encoding="utf-8")
BYO = ROOT / "examples" / "bring-your-own"
YOURS = {
    "suffix-tree": "byo.tree:make_tree",
    "suffix-cache": "byo.cache:make_cache",
    "drafter": "byo.drafter:make_drafter",
    "exchange": "byo.exchange:make_exchange",
}
"""The bring-your-own example's implementations, standing for a user's."""

SECTIONS = {"exchange": ("### Exchange", "layout |"), "drafter": ("### Drafter", "what passing proves |")}
"""Components whose section of the guide has a table of ids: (heading, the header's second column)."""

ID = re.compile(r"`((?:[a-z0-9]+|[A-Z0-9]+)(?:-[A-Za-z0-9]+)*)`")
"""A backticked check id: words joined by dashes, the first all lower or all upper case (not a
class name, a path or a command)."""


def _rows(header: str, below: str = "\n") -> list[list[str]]:
    """The cells of the first table whose header line is ``header``, after the text ``below``."""
    after = GUIDE.split(below, 1)[1].split(f"\n{header}\n", 1)[1]
    lines = after.split("\n\n", 1)[0].splitlines()[1:]  # under the rule
    return [[cell.strip() for cell in line.strip().strip("|").split(" | ")] for line in lines]


def _component_table() -> dict[str, tuple[str, str]]:
    rows = _rows("| component | on yours | on ours (`arctic-ref check`) |")
    return {row[0].replace(" ", "-"): (row[1], row[2]) for row in rows}


def _ids(cell: str) -> list[str]:
    """The check ids ``cell`` names, each once, in order."""
    return list(dict.fromkeys(ID.findall(cell)))


def _ours(component: str) -> list[str]:
    return [check.id for check in component_checks(component, None, CheckOptions())]  # type: ignore[arg-type]


def test_the_component_table_names_every_component() -> None:
    assert sorted(_component_table()) == sorted(COMPONENTS)


@pytest.mark.parametrize("component", COMPONENTS)
def test_the_checks_on_ours_are_the_guides(component: str) -> None:
    """The "on ours" column names exactly the checks ``arctic-ref check`` runs; the sampler row
    names its summary row and points at the kit's table for the rest."""
    ours, documented = _ours(component), _ids(_component_table()[component][1])
    if component == "sampler":
        assert documented == ["rejection-kit"] and ours == ["rejection-kit", *MEANINGS]
    elif component == "engine":  # "the same five": the "on yours" column's
        assert ours == _ids(_component_table()[component][0])
    elif component == "exchange":
        assert ours == [] and _component_table()[component][1].startswith("none of its own")
    else:
        assert documented == ours


@pytest.mark.parametrize("component", sorted(YOURS))
def test_the_checks_on_yours_are_the_guides(component: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The "on yours" column, and the component's own table where it has one, name exactly the
    checks run on an implementation of yours (the bring-your-own example's)."""
    monkeypatch.syspath_prepend(str(BYO))
    yours = [check.id for check in component_checks(component, YOURS[component], CheckOptions())]  # type: ignore[arg-type]
    assert yours == _ids(_component_table()[component][0])
    if component in SECTIONS:  # and the component's own table of ids
        assert yours == [_ids(row[0])[0] for row in _rows("| id | " + SECTIONS[component][1], SECTIONS[component][0])]
    for module in [name for name in sys.modules if name == "byo" or name.startswith("byo.")]:
        monkeypatch.delitem(sys.modules, module)


def test_the_earlier_battery_ids_are_checks_on_ours() -> None:
    rows = _rows("| id | what it checks |")
    documented = [check_id for row in rows for check_id in _ids(row[0])]
    ours = {check_id for component in COMPONENTS for check_id in _ours(component)}
    assert documented and not set(documented) - ours, set(documented) - ours


def test_the_sampler_table_is_the_kits_table_in_order() -> None:
    rows = _rows("| id | what passing proves |", "The ids and their meanings are")
    assert [_ids(row[0])[0] for row in rows] == list(MEANINGS)
