"""Reading one YAML file: YAML 1.2 semantics, positions, limits."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from bees_cli.workspace import yamlio
from bees_cli.workspace.problems import Problem
from bees_cli.workspace.yamlio import Document, describe, read_document


def _read(tmp_path: Path, text: str | bytes) -> Document | Problem:
    path = tmp_path / "f.yaml"
    if isinstance(text, str):
        path.write_text(text, "utf-8")
    else:
        path.write_bytes(text)
    return read_document(path, "agents/f.yaml")


def test_yaml_1_2_words_stay_text(tmp_path: Path) -> None:
    document = _read(tmp_path, "a: no\nb: on\nc: off\nd: yes\ne: 9:00\nf: true\ng: 010\n")
    assert isinstance(document, Document)
    assert document.data == {
        "a": "no",
        "b": "on",
        "c": "off",
        "d": "yes",
        "e": "9:00",
        "f": True,
        "g": 10,
    }


def test_scalars_become_plain_python(tmp_path: Path) -> None:
    document = _read(tmp_path, "a: 0x10\nb: 1.5\nc: 2024-01-02\nd: 'x'\n")
    assert isinstance(document, Document)
    assert document.data == {"a": 16, "b": 1.5, "c": datetime.date(2024, 1, 2), "d": "x"}
    assert [type(v) for v in document.data.values()] == [int, float, datetime.date, str]


def test_positions_of_keys_values_and_items(tmp_path: Path) -> None:
    text = "# comment\nname: x\nstages:\n  - name: A\n    agents: [w, v]\n"
    document = _read(tmp_path, text)
    assert isinstance(document, Document)
    positions = document.positions
    assert positions.key(("name",)) == (2, 1)
    assert positions.value(("name",)) == (2, 7)
    assert positions.value(("stages", 0)) == (4, 5)
    assert positions.value(("stages", 0, "agents", 1)) == (5, 17)
    assert positions.value(("stages", 0, "missing", 3)) == (4, 5)


def test_merge_keys_are_read(tmp_path: Path) -> None:
    document = _read(tmp_path, "base: &b {k: 1}\nm:\n  <<: *b\n  q: 2\n")
    assert isinstance(document, Document)
    assert document.data["m"] == {"q": 2, "k": 1}
    assert document.positions.key(("m", "k")) == (3, 3)


def test_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    document = _read(tmp_path, "\ufeffname: x\n".encode())
    assert isinstance(document, Document)
    assert document.data == {"name": "x"}


def test_yaml_1_2_directive_is_accepted(tmp_path: Path) -> None:
    document = _read(tmp_path, "%YAML 1.2\n---\na: no\n")
    assert isinstance(document, Document)
    assert document.data == {"a": "no"}


def test_node_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlio, "MAX_NODES", 5)
    problem = _read(tmp_path, "a: &a [1, 2]\nb: [*a, *a]\n")
    assert problem == Problem(
        "agents/f.yaml",
        1,
        1,
        "",
        "too many values (more than 5 once aliases are expanded); is an alias repeated too often?",
    )


def test_depth_limit(tmp_path: Path) -> None:
    text = "a: " + "[" * 60 + "]" * 60 + "\n"
    problem = _read(tmp_path, text)
    assert isinstance(problem, Problem)
    assert problem.message == "nesting is too deep (the limit is 50 levels)"


def test_unreadable_file(tmp_path: Path) -> None:
    problem = read_document(tmp_path / "absent.yaml", "agents/absent.yaml")
    assert problem == Problem(
        "agents/absent.yaml", 1, 1, "", "cannot read the file: No such file or directory"
    )


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "an empty value"),
        (True, "true"),
        ("yes", "'yes'"),
        ("it's", '"it\'s"'),
        (3, "3"),
        ([1], "a list"),
        ({"a": 1}, "a mapping"),
        (datetime.date(2024, 1, 2), "a date (2024-01-02)"),
        ("x" * 50, "'" + "x" * 37 + "...'"),
    ],
)
def test_describe(value: object, shown: str) -> None:
    assert describe(value) == shown


def test_problem_format_and_json() -> None:
    problem = Problem("a.yaml", 3, 7, "stages[0].kind", "bad")
    assert problem.format() == "a.yaml:3:7  stages[0].kind  bad"
    assert Problem("a.yaml", 1, 1, "", "empty").format() == "a.yaml:1:1  empty"
    assert Problem("x/", 1, 1, "", "hm", "warning").format() == "x/:1:1  warning: hm"
    assert problem.to_json() == {
        "file": "a.yaml",
        "line": 3,
        "column": 7,
        "field": "stages[0].kind",
        "message": "bad",
        "severity": "error",
    }


def test_a_mapping_used_as_a_key_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    assert _read(tmp_path, "? : a: 1\n") == Problem(
        "agents/f.yaml", 1, 1, "", "a key must be plain text, not a mapping or list"
    )


@pytest.mark.parametrize("key", ["? [a, b]\n: 2\n", "? {x: 1}\n: 2\n", "? - a\n  - b\n: 2\n"])
def test_a_list_or_mapping_key_is_reported_at_its_position(tmp_path: Path, key: str) -> None:
    assert _read(tmp_path, "enabled: true\n" + key) == Problem(
        "agents/f.yaml", 2, 3, "", "a key must be plain text, not a mapping or list"
    )
