"""A stage's wait for eligibility stores its reasons as the codes eligibility handed over
(issue 24, point 3), no sentence read back; no engine runs here (the activity is called
directly on the local record)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bees_cli.engine.activities import BeesActivities
from bees_cli.engine.models import CheckInput
from bees_cli.machine.computer import Computer
from bees_cli.record import reasons
from bees_cli.record.local import LocalRecord
from bees_cli.usecases.items import create_item
from tests.engine.conftest import Space
from tests.engine.test_eligibility import PROCESS


def test_the_waiting_fact_stores_eligibilitys_codes_as_they_are(
        space: Space, record: LocalRecord, monkeypatch: pytest.MonkeyPatch) -> None:
    space.agent("alpha", enabled=False)
    space.write("folders/notes.yaml", "description: notes\n")
    space.write("processes/p.yaml", PROCESS)
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    read: list[Any] = []  # every sentence read back (read_reason's regular expressions)
    real = reasons._coded
    monkeypatch.setattr(reasons, "_coded", lambda text: read.append(text) or real(text))

    digest = json.loads(record.item(item.id).input or "{}")["snapshot_digest"]
    found = BeesActivities(record).check_now(CheckInput(
        item_id=item.id, stage="Work", round=1, snapshot_digest=digest))

    assert found.ok is False
    assert read == []
    [waiting] = [e for e in record.events(item.id) if e.kind == "waiting"]
    assert waiting.data["reasons"] == [
        {"code": "folder_not_linked", "folder": "notes"},
        {"code": "no_agent", "stage": "Work",
         "skipped": [{"agent": "alpha", "why": "disabled"}]}]
    assert record.item(item.id).reason == (
        "folder notes: not linked on this computer (bees link notes PATH); "
        "no enabled agent for Work: alpha disabled")
