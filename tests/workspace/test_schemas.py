"""``schemas/*.json`` are current and accept the example, the starter and the corpus base."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bees_cli.workspace.schemas import SCHEMA_FOR_KIND, generate
from bees_cli.workspace.starter import starter_files
from bees_cli.workspace.yamlio import Document, read_document
from tests.conftest import EXAMPLE, REPO
from tests.workspace.corpus_cases import BASE

SCHEMAS = REPO / "schemas"


def _schema_name(rel: str) -> str:
    return "workspace.json" if rel == "bees.yaml" else SCHEMA_FOR_KIND[rel.split("/")[0]]


def _validator(name: str) -> Any:
    schema = json.loads((SCHEMAS / name).read_text("utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _yaml_files(root: Path) -> list[Path]:
    return sorted(
        [root / "bees.yaml", *(p for k in SCHEMA_FOR_KIND for p in (root / k).glob("*.yaml"))]
    )


def test_schema_files_are_current() -> None:
    on_disk = {p.name: p.read_text("utf-8") for p in SCHEMAS.glob("*.json")}
    assert on_disk == generate(), "run: python -m bees_cli.workspace.schemas"


@pytest.mark.parametrize("root", [EXAMPLE, BASE], ids=["example", "corpus-base"])
def test_schemas_accept_workspace(root: Path) -> None:
    files = _yaml_files(root)
    assert len(files) >= 6
    for path in files:
        rel = path.relative_to(root).as_posix()
        document = read_document(path, rel)
        assert isinstance(document, Document), document
        errors = list(_validator(_schema_name(rel)).iter_errors(document.data))
        assert errors == [], rel


def test_example_points_at_the_schemas() -> None:
    for path in _yaml_files(EXAMPLE):
        first = path.read_text("utf-8").splitlines()[0]
        rel = path.relative_to(EXAMPLE).as_posix()
        target = (path.parent / first.removeprefix("# yaml-language-server: $schema=")).resolve()
        assert target == SCHEMAS / _schema_name(rel)


def test_schemas_accept_starter(tmp_path: Path) -> None:
    for rel, text in starter_files("demo").items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
        document = read_document(path, rel)
        assert isinstance(document, Document)
        assert list(_validator(_schema_name(rel)).iter_errors(document.data)) == [], rel


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        (
            "agent.json",
            {"runner": {"command": ["x"]}, "enabeld": True},
            "Additional properties are not allowed ('enabeld' was unexpected)",
        ),
        (
            "process.json",
            {"stages": [{"name": "A", "kind": "wrok"}]},
            "'wrok' is not one of ['work', 'review', 'done']",
        ),
        (
            "schedule.json",
            {"process": "p", "owner": "a@b", "timezone": "UTC"},
            "{'process': 'p', 'owner': 'a@b', 'timezone': 'UTC'} "
            "is not valid under any of the given schemas",
        ),
    ],
)
def test_schemas_reject(name: str, data: dict[str, Any], message: str) -> None:
    assert [e.message for e in _validator(name).iter_errors(data)] == [message]
