"""``bees item show``'s use case returns typed rows, not dicts (issue 24, point 5)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from bees_cli.cli.json_models import ItemShowOut
from bees_cli.machine.computer import Computer
from bees_cli.record.events import EventBase
from bees_cli.record.local import LocalRecord
from bees_cli.record.pieces import Piece
from bees_cli.record.states import Status, WaitKind
from bees_cli.record.views import ItemView, ModelUsage
from bees_cli.usecases import Bees
from tests.usecases.item_fixture import ITEM, fill


def _details(bees_home: Path):  # type: ignore[no-untyped-def]  # noqa: ANN202
    computer = Computer.load(bees_home)
    run_folder = computer.data_dir / "runs" / "show"
    fill(LocalRecord(computer.record_path), run_folder)
    return asyncio.run(Bees(computer).item_details(ITEM)), run_folder


def test_the_details_of_an_item_are_typed_rows(bees_home: Path) -> None:
    details, run_folder = _details(bees_home)
    assert isinstance(details.item, ItemView)
    assert (details.item.item_id, details.item.status, details.item.wait) == (
        ITEM, Status.WAITING_FOR_APPROVAL, WaitKind.ENGINE_NOT_RUNNING)
    assert details.item.created_on == Computer.load(bees_home).computer
    assert [(d.decision, d.request_id, d.who) for d in details.item.queued_decisions] == [
        ("approved", 1, "maya")]
    assert all(isinstance(event, EventBase) for event in details.history)
    assert [event.kind for event in details.history] == [
        "created", "pick", "stage_finished", "stage_failed"]
    assert [(p.piece, p.agent, p.pick_reason) for p in details.pieces] == [
        ("r1-a1-p1", "alpha", "caller")]
    assert all(isinstance(p, Piece) for p in details.pieces)
    assert all(isinstance(m, ModelUsage) for m in details.models)
    assert details.logs == ["/l/a.stdout", "/l/a.stderr"] + [
        str(run_folder / ".bees" / "logs" / f"Send-r1-a1.{s}") for s in ("stdout", "stderr")]
    assert [(r["id"], r["status"], r["delivered"]) for r in details.approvals] == [
        (1, "approved", False)]
    assert [j["action"] for j in details.journal] == ["mail.read"]


def test_item_show_json_reads_the_typed_details_back_unchanged(bees_home: Path) -> None:
    """What ``bees item show --json`` prints is the details' JSON read back as its schema's
    model: reading it again changes nothing."""
    details, _ = _details(bees_home)
    shown = ItemShowOut.of(details.to_json()).to_json()
    again = ItemShowOut.of({**shown, "since_human": "x"}).to_json()
    assert json.dumps(again, sort_keys=True) == json.dumps(shown, sort_keys=True)
    assert shown["item"]["item_id"] == ITEM and "id" not in shown["item"]
