"""Facts are written as models: every kind round-trips write → read as itself (issue 24, 3)."""

from __future__ import annotations

import ast
import functools
import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bees_cli.record.events import KINDS, ActionRan, EventBase, UnknownEvent, parse_event
from bees_cli.record.local import LocalRecord
from tests.record.test_events import SAMPLES

ITEM = "01JH2Q0000000000000000FACT"

REASON_KINDS = frozenset({
    "pick", "waiting", "busy", "stage_failed", "stage_interrupted", "lost", "piece_picked",
    "piece_waiting", "piece_finished", "piece_failed", "piece_stopped"})
"""Kinds whose stored reasons (sentences, pick words) a typed writer stores as codes."""


@pytest.fixture
def record(tmp_path: Path) -> LocalRecord:
    record = LocalRecord(tmp_path / "record.db")
    record.add_item(id=ITEM, process="report", title="Week 2", workspace="/ws",
                    run_folder="/runs/X", input="{}", stage="Draft")
    return record


def _stored_keys(event: EventBase) -> set[str]:
    """The stored keys the model read (by alias: ``from``)."""
    fields = type(event).model_fields
    keys = {fields[name].serialization_alias or name for name in event.model_fields_set}
    # a piece's wait stored its reasons as one sentence, ``reason``
    return keys | {"reason"} if event.kind == "piece_waiting" and "reasons" in keys else keys


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_every_stored_key_is_a_field_of_its_model(kind: str) -> None:
    """A field renamed in a model leaves the rows written under the old key unread: caught."""
    data, stage, round_, _ = SAMPLES[kind]
    event = parse_event(kind, data, at="2025-01-06T09:00:00Z", stage=stage, round=round_)
    assert not isinstance(event, UnknownEvent), f"{kind} read back as unknown"
    assert set(data) <= _stored_keys(event), f"{kind}: keys no field reads"


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_every_kind_round_trips_through_the_typed_writer(kind: str,
                                                         record: LocalRecord) -> None:
    data, stage, round_, _ = SAMPLES[kind]
    fact = parse_event(kind, data, at="", stage=stage, round=round_)
    record.add_fact(ITEM, fact, key=f"test:{kind}")
    stored = record.events(ITEM)[-1]
    back = stored.typed()
    assert type(back) is type(fact)
    assert (stored.kind, stored.stage, stored.round) == (kind, stage, round_)
    assert back.model_dump(exclude={"at"}) == fact.model_dump(exclude={"at"})
    if kind not in REASON_KINDS:
        # byte-compatible: the same data object the string-and-dict writer stored
        assert json.dumps(stored.data) == json.dumps(data)


def test_a_model_written_by_a_writer_stores_the_keys_it_set(record: LocalRecord) -> None:
    """What a writer sets is what is stored: the exact row the old writer wrote."""
    record.add_fact(ITEM, ActionRan(stage="Send", round=1, action="mail.send",
                                    action_kind="send", digest="d", attempt=1, exit_code=0,
                                    request=None), key="ran")
    stored = record.events(ITEM)[-1]
    assert stored.data == {"action": "mail.send", "action_kind": "send", "digest": "d",
                           "attempt": 1, "exit_code": 0, "request": None}
    assert stored.typed() == ActionRan(at=stored.at, stage="Send", round=1,
                                       action="mail.send", action_kind="send", digest="d",
                                       attempt=1, exit_code=0, request=None)


def test_an_unknown_fact_is_relayed_whole(record: LocalRecord) -> None:
    data: dict[str, Any] = {"piece": "p-2", "nested": {"a": [1]}}
    record.add_fact(ITEM, UnknownEvent(kind="piece_merged", data=data), key="new")
    stored = record.events(ITEM)[-1]
    assert (stored.kind, stored.data) == ("piece_merged", data)
    assert "piece_merged" not in KINDS


PACKAGE = Path(__file__).resolve().parents[2] / "bees_cli"
RELAYS = {"engine/activities.py", "engine/piece_activities.py"}
"""The two activities that store a fact a workflow already serialized (``relay_fact``)."""


@functools.cache
def _package_texts() -> list[tuple[str, str]]:
    """Each module of the package (its path under it) with its text NFKC-normalized, as
    Python reads a non-ASCII identifier: a module whose text lacks a name has no node of it."""
    return [(path.relative_to(PACKAGE).as_posix(),
             unicodedata.normalize("NFKC", path.read_text("utf-8")))
            for path in sorted(PACKAGE.rglob("*.py"))]


@functools.cache
def _nodes(where: str) -> list[ast.AST]:
    """Every node of the module at ``where`` (under the package), parsed once."""
    return list(ast.walk(ast.parse((PACKAGE / where).read_text("utf-8"))))


def _package_nodes(*needed: tuple[str, ...]) -> Iterator[tuple[str, list[ast.AST]]]:
    """Each module of the package (its path under it) with every node of its tree, skipping
    only a module whose text lacks every name of one of the ``needed`` groups (no node of
    it can name one): parsing the whole package again per question cost seconds."""
    for where, text in _package_texts():
        if all(any(name in text for name in group) for group in needed):
            yield where, _nodes(where)


def _calls(name: str) -> list[str]:
    """Every ``….NAME(`` call (or ``NAME`` passed on, as to ``asyncio.to_thread``) in the
    package outside ``record/``: ``path:line``."""
    found = []
    for where, nodes in _package_nodes((name,)):
        if where.startswith("record/"):
            continue
        for node in nodes:
            if isinstance(node, ast.Attribute) and node.attr == name:
                found.append(f"{where}:{node.lineno}")
    return found


def test_no_writer_outside_the_record_stores_a_kind_and_a_dict() -> None:
    assert _calls("add_event") == []
    assert _calls("_add_event") == []
    assert {c.split(":")[0] for c in _calls("relay_fact")} <= RELAYS


RECORD_INPUTS = {"RecordInput", "PieceRecordInput"}
"""The inputs of ``bees.record`` and ``bees.piece_record``: a workflow's facts, as ``kind``
and ``data``."""


def _record_inputs_given_a_kind() -> list[str]:
    """Every ``RecordInput(…)`` or ``PieceRecordInput(…)`` built in the package with a
    ``kind=`` other than its fact's (``fact.kind``, in their ``of``): ``path:line``."""
    found = []
    for where, nodes in _package_nodes(("kind",), (*RECORD_INPUTS, "cls")):
        for node in nodes:
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(
                node.func, "attr", None)
            if name not in RECORD_INPUTS and name != "cls":
                continue
            for given in node.keywords:
                if given.arg == "kind" and ast.unparse(given.value) != "fact.kind":
                    found.append(f"{where}:{node.lineno}")
    return found


def test_workflow_facts_are_built_as_models() -> None:
    """A workflow writes a fact as its model through ``RecordInput.of`` /
    ``PieceRecordInput.of`` (issue 24, point 3): no kind string and dict anywhere."""
    assert _record_inputs_given_a_kind() == []
