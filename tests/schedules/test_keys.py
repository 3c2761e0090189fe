"""The held-key calls over a cloud client that has them, and one that does not yet (issue 11)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bees_cli.cloud import wire
from bees_cli.schedules.keys import CloudKeys
from tests.e2e.conftest import make_computer

AT = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)


class NewClient:
    """The two calls of branch cloud-faults, recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def report_key_item(self, report: Any) -> None:
        self.calls.append(("report", report.model_dump()))

    async def held_keys(self, machine_id: str, *, without_item: bool = False) -> list[Any]:
        self.calls.append(("held", (machine_id, without_item)))
        return [SimpleNamespace(schedule_id="monday-report", scheduled_time=AT)]


async def test_a_client_with_the_calls_reports_and_lists(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    class KeyItem(wire.Wire):  # the wire model of branch cloud-faults
        schedule_id: str
        scheduled_time: datetime
        machine_id: str
        item_id: str

    monkeypatch.setattr(wire, "KeyItem", KeyItem, raising=False)
    laptop = make_computer(tmp_path, "maya-laptop", "maya@example.com")
    client = NewClient()
    keys = CloudKeys(client, laptop)  # type: ignore[arg-type]
    await keys.report_item("monday-report", AT, "ITEM1")
    assert await keys.without_item() == [("monday-report", AT)]
    assert client.calls == [
        ("report", {"schedule_id": "monday-report", "scheduled_time": AT,
                    "machine_id": laptop.machine_id, "item_id": "ITEM1"}),
        ("held", (laptop.machine_id, True)),
    ]


async def test_a_client_without_them_does_nothing(tmp_path: Path) -> None:
    keys = CloudKeys(object(), make_computer(tmp_path, "maya-laptop", None))  # type: ignore[arg-type]
    await keys.report_item("monday-report", AT, "ITEM1")
    assert await keys.without_item() == []
