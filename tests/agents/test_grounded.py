"""Grounded arguments (issue 26, point 6): an action's input schema takes a property's allowed
values from a folder (``enum_from``), resolved before the call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bees_cli.agents.grounded import folder_finder, ground_schema
from bees_cli.errors import UserError
from bees_cli.usecases.action_input import check_input

SCHEMA = {"type": "object", "required": ["bug"], "properties": {
    "bug": {"type": "string", "description": "the bug to file",
            "enum_from": {"folder": "bug-reports", "glob": "*.md", "field": "id"}},
    "note": {"type": "string"}}}


def reports(run: Path) -> Path:
    """A run folder whose ``bug-reports`` holds two .md reports with front matter, one .md
    without, a hidden one and a .json (not matched by ``*.md``)."""
    folder = run / "bug-reports"
    folder.mkdir(parents=True)
    (folder / "b.md").write_text("---\nid: BUG-2\ntitle: crash\n---\nIt crashes.\n")
    (folder / "a.md").write_text("---\nid: BUG-1\n---\nSlow.\n")
    (folder / "plain.md").write_text("no front matter\n")
    (folder / ".hidden.md").write_text("---\nid: BUG-0\n---\n")
    (folder / "c.json").write_text(json.dumps({"id": "BUG-3"}))
    return folder


def test_front_matter_ids_become_the_enum_sorted_and_enum_from_is_stripped(
        tmp_path: Path) -> None:
    reports(tmp_path)
    grounded = ground_schema(SCHEMA, folder_finder(tmp_path, {}))
    assert grounded["properties"]["bug"] == {"type": "string", "description": "the bug to file",
                                             "enum": ["BUG-1", "BUG-2"]}
    assert grounded["properties"]["note"] == {"type": "string"}
    assert "enum" not in SCHEMA["properties"]["bug"]  # the declared schema is not changed


@pytest.mark.parametrize(("glob", "field", "values"), [
    ("*.json", "id", ["BUG-3"]),
    ("*", "name", ["a", "b", "c", "plain"]),
    ("*.md", "title", ["crash"]),
])
def test_json_keys_and_file_names_give_values_too(tmp_path: Path, glob: str, field: str,
                                                  values: list[str]) -> None:
    reports(tmp_path)
    schema = {"type": "object", "properties": {"x": {"type": "string", "enum_from": {
        "folder": "bug-reports", "glob": glob, "field": field}}}}
    assert ground_schema(schema, folder_finder(tmp_path, {}))["properties"]["x"] == {
        "type": "string", "enum": values}


def test_a_linked_folder_of_that_name_comes_before_the_run_folder(tmp_path: Path) -> None:
    linked = reports(tmp_path / "shared")
    (tmp_path / "run").mkdir()
    grounded = ground_schema(SCHEMA, folder_finder(tmp_path / "run",
                                                   {"bug-reports": str(linked)}))
    assert grounded["properties"]["bug"]["enum"] == ["BUG-1", "BUG-2"]


def test_a_missing_folder_gives_an_empty_enum(tmp_path: Path) -> None:
    grounded = ground_schema(SCHEMA, folder_finder(tmp_path, {}))
    assert grounded["properties"]["bug"]["enum"] == []


def test_an_id_not_in_the_folder_is_refused_with_the_ids_there(tmp_path: Path) -> None:
    reports(tmp_path)
    where = folder_finder(tmp_path, {})
    check_input("tracker.file", SCHEMA, {"bug": "BUG-2"}, folder_of=where)
    with pytest.raises(UserError) as caught:
        check_input("tracker.file", SCHEMA, {"bug": "BUG-9"}, folder_of=where)
    assert caught.value.message == ("tracker.file: bug 'BUG-9' is not among "
                                    "bug-reports/*.md: BUG-1, BUG-2")


def test_an_empty_folder_refuses_every_value_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "bug-reports").mkdir()
    with pytest.raises(UserError) as caught:
        check_input("tracker.file", SCHEMA, {"bug": "BUG-1"},
                    folder_of=folder_finder(tmp_path, {}))
    assert caught.value.message == ("tracker.file: bug 'BUG-1' is not among "
                                    "bug-reports/*.md: there are none")
