"""The README's "Where each rule of the post lives" names a real place for every rule.

Each row of that table names ``module:attribute`` (dotted attributes allowed); the test
imports the module and walks the attributes, so a rename or a move that leaves the table
behind fails here. The rules of DESIGN.md each have one row.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
HEADING = "### Where each rule of the post lives"
ROW = re.compile(r"^\| (?P<rule>[^|]+?) \| `(?P<place>bees_cli[\w.]*:[\w.]+)` \|$")


def _rows() -> list[tuple[str, str]]:
    text = README.read_text(encoding="utf-8")
    section = text.split(HEADING, 1)[1].split("\n\n", 3)[2]  # the table after the intro
    return [(m["rule"], m["place"]) for line in section.splitlines()
            if (m := ROW.match(line))]


def test_the_table_has_one_row_per_rule_and_each_line_is_a_row() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split(HEADING, 1)[1].split("\n\n", 3)[2]
    body = section.splitlines()[2:]  # after the header and the |---| line
    assert [line for line in body if not ROW.match(line)] == []
    assert len(_rows()) == 31  # 26 of the post, 5 of the runners (issue 27)


@pytest.mark.parametrize(("rule", "place"), _rows(), ids=[p for _, p in _rows()])
def test_each_named_place_exists(rule: str, place: str) -> None:
    module_name, _, attributes = place.partition(":")
    found: object = importlib.import_module(module_name)
    for name in attributes.split("."):
        assert hasattr(found, name), f"{rule}: {place} names no {name!r}"
        found = getattr(found, name)
    assert found is not None
