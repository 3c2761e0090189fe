"""The held-key calls over the real cloud client, and over one without them (issue 11)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import httpx

from bees_cli.cloud import wire
from bees_cli.cloud.async_client import AsyncCloudClient
from bees_cli.cloud.server.app import asgi
from bees_cli.cloud.server.storage import Storage
from bees_cli.schedules.keys import CloudKeys
from tests.e2e.conftest import make_computer

AT = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)


async def test_a_client_with_the_calls_reports_and_lists(tmp_path: Path) -> None:
    """The real client and the real ``wire.KeyItem``, against the real Bees Cloud app in
    this process: the held key is listed until its item is reported, then no more."""
    storage = Storage(f"sqlite:///{tmp_path / 'cloud.db'}")
    storage.add_team("acme")
    token = storage.add_person("maya@example.com", "acme")
    laptop = make_computer(tmp_path, "maya-laptop", "maya@example.com")
    try:
        async with AsyncCloudClient("http://cloud", token, retries=0,
                                    transport=httpx.ASGITransport(app=asgi(storage))) as client:
            claimed = await client.claim_key(wire.KeyClaim(
                schedule_id="monday-report", scheduled_time=AT,
                machine_id=laptop.machine_id, computer_name="maya-laptop"))
            assert claimed.status == "granted"
            keys = CloudKeys(client, laptop)
            assert await keys.without_item() == [("monday-report", AT)]
            await keys.report_item("monday-report", AT, "ITEM1")
            assert await keys.without_item() == []
            [held] = await client.held_keys(laptop.machine_id)
            assert (held.schedule_id, held.scheduled_time, held.item_id) == (
                "monday-report", AT, "ITEM1")
    finally:
        storage.close()


async def test_a_client_without_them_does_nothing(tmp_path: Path) -> None:
    keys = CloudKeys(object(), make_computer(tmp_path, "maya-laptop", None))  # type: ignore[arg-type]
    await keys.report_item("monday-report", AT, "ITEM1")
    assert await keys.without_item() == []
