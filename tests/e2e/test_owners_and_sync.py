"""Owner claims that cannot reach the cloud, last-writer-wins of the team table, the sync loop
surviving failures, and a repeated hour firing once per computer."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bees_cli.cloud import client as cloud_client
from bees_cli.cloud import wire
from bees_cli.engine.models import ItemInput
from bees_cli.engine.snapshot import EngineSnapshot, ProcessView, StageView
from bees_cli.record.aio import AsyncRecord
from bees_cli.record.fires import FireLog
from bees_cli.record.sync import SharedRecord, Syncer
from bees_cli.schedules.owners import UNREACHABLE_REASON, ready_to_start, startable
from bees_cli.usecases.run import start_pending
from tests.e2e.conftest import FixedClock, Team, closed_url, make_computer, record_of, service
from tests.support import wait
from tests.support.engines import TakesEveryStart

T0 = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)


def add_pending(computer, item_id: str) -> None:  # type: ignore[no-untyped-def]  # noqa: ANN001
    record_of(computer).add_item(id=item_id, process="p", title="t", workspace="/ws",
                                 run_folder="/runs", input="{}", stage="Draft")


async def test_unreachable_claim_waits_and_retries_every_15_s(tmp_path: Path,
                                                              team: Team) -> None:
    offline = make_computer(tmp_path, "maya-laptop", team.maya, url=closed_url(), token="x")
    add_pending(offline, "01ITEMWAITSFORCLAIM0000000")
    record = record_of(offline)
    clock = FixedClock(T0)
    row = record.item("01ITEMWAITSFORCLAIM0000000")
    assert await ready_to_start(record, row, computer=offline, clock=clock) is False
    row = record.item(row.id)
    assert (row.status, row.status_text) == ("waiting", f"waiting: {UNREACHABLE_REASON}")
    assert [r.id for r in startable(record)] == [row.id]
    clock.advance(14.9)  # too soon: not tried again
    assert await ready_to_start(record, row, computer=offline, clock=clock) is False
    claim = FireLog(offline.record_path).claim(row.id)
    assert claim is not None and (claim.status, claim.tried) == (
        "unreachable", "2025-01-06T08:00:00.000000Z")
    online = dataclasses.replace(offline, login=dataclasses.replace(
        offline.login, url=team.cloud.url, token=team.tokens[team.maya]))  # type: ignore[arg-type]
    clock.advance(0.2)
    assert await ready_to_start(record, row, computer=online, clock=clock) is True
    assert record.item(row.id).status == "pending"
    claim = FireLog(offline.record_path).claim(row.id)
    assert claim is not None and (claim.status, claim.computer) == ("owner", "maya-laptop")


def add_startable(computer, item_id: str) -> None:  # type: ignore[no-untyped-def]  # noqa: ANN001
    snapshot = EngineSnapshot(process_name="p", workspace_root="/ws", process=ProcessView(
        stages=[StageView(name="Draft", kind="work"), StageView(name="Done", kind="done")]))
    record_of(computer).add_item(
        id=item_id, process="p", title="t", workspace="/ws", run_folder="/runs", stage="Draft",
        input=ItemInput(item_id=item_id, title="t", run_folder="/runs",
                        snapshot=snapshot).model_dump_json())


async def test_starting_three_items_claims_them_through_one_client(
        tmp_path: Path, team: Team, monkeypatch: pytest.MonkeyPatch) -> None:
    laptop = make_computer(tmp_path, "maya-laptop", team.maya, url=team.cloud.url,
                           token=team.tokens[team.maya])
    ids = [f"01ITEMONECLIENT{n:011d}" for n in range(3)]
    for item_id in ids:
        add_startable(laptop, item_id)
    made: list[cloud_client.AsyncCloudClient] = []

    class Counted(cloud_client.AsyncCloudClient):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            made.append(self)

    monkeypatch.setattr(cloud_client, "AsyncCloudClient", Counted)
    engine = TakesEveryStart()
    assert await start_pending(engine, AsyncRecord(record_of(laptop)), laptop) == 3  # type: ignore[arg-type]
    assert engine.started == ids
    assert [FireLog(laptop.record_path).claim(i).status for i in ids] == ["owner"] * 3  # type: ignore[union-attr]
    assert len(made) == 1 and made[0]._http.is_closed  # made for the call, closed after it


async def test_an_item_owned_elsewhere_never_starts_here(tmp_path: Path, team: Team) -> None:
    url, token = team.cloud.url, team.tokens[team.maya]
    laptop = make_computer(tmp_path, "maya-laptop", team.maya, url=url, token=token)
    desktop = make_computer(tmp_path, "maya-desktop", team.maya, url=url, token=token)
    add_pending(laptop, "01ITEMOWNEDBYLAPTOP0000000")
    add_pending(desktop, "01ITEMOWNEDBYLAPTOP0000000")  # e.g. a copy of the record
    assert await ready_to_start(record_of(laptop), record_of(laptop).items()[0],
                                computer=laptop) is True
    row = record_of(desktop).items()[0]
    assert await ready_to_start(record_of(desktop), row, computer=desktop) is False
    assert record_of(desktop).item(row.id).status_text == "waiting: owned by maya-laptop"
    assert startable(record_of(desktop)) == []


def entry(item: str, fields: dict[str, object], at: datetime, machine: str,
          seq: int) -> wire.RecordEntry:
    return wire.RecordEntry(item_id=item, fields=fields, origin_time=at, machine_id=machine,  # type: ignore[arg-type]
                            person="maya@example.com", seq=seq)


def test_team_table_last_writer_wins_in_any_order(tmp_path: Path) -> None:
    older = entry("A", {"stage": "Draft"}, T0, "m2", 1)
    newer = entry("A", {"stage": "Review"}, T0 + timedelta(seconds=1), "m1", 2)
    tie_low = entry("B", {"stage": "Draft"}, T0, "m1", 3)
    tie_high = entry("B", {"stage": "Done"}, T0, "m2", 4)
    finals = []
    for order in ([older, newer, tie_low, tie_high], [tie_high, newer, tie_low, older]):
        shared = SharedRecord(tmp_path / f"r{len(finals)}.db")
        for one in order:
            shared.apply([one], one.seq)
        finals.append({t.item_id: t.fields["stage"] for t in shared.team()})
        assert shared.cursor == 4
    assert finals == [{"A": "Review", "B": "Done"}] * 2


async def test_sync_loop_survives_an_unreachable_cloud(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    offline = make_computer(tmp_path, "maya-laptop", "maya@example.com", url=closed_url(),
                            token="x")
    said: list[str] = []
    stop = asyncio.Event()
    task = asyncio.create_task(Syncer(offline, interval=0.01).run(stop, said.append))
    await wait.until(lambda: SharedRecord(offline.record_path).meta("error"),
                     "the sync never failed", every=0.02)
    stop.set()
    await asyncio.wait_for(task, 10)
    assert len(said) == 1 and said[0].startswith("shared record: sync failed: cannot reach")
    assert SharedRecord(offline.record_path).meta("error") is not None
    # said once, not also as a warning in another wording on the same console
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_repeated_hour_fires_once_per_computer(tmp_path: Path) -> None:
    from tests.e2e.conftest import write_workspace

    workspace = write_workspace(tmp_path / "ws", "maya@example.com", log=tmp_path / "a.log")
    (workspace / "schedules" / "night.yaml").write_text(
        "process: weekly-report\nowner: maya@example.com\ncron: '30 2 * * *'\n"
        "timezone: Europe/Paris\n", encoding="utf-8")
    alone = make_computer(tmp_path, "maya-laptop", "maya@example.com")
    first = datetime(2025, 10, 26, 0, 30, tzinfo=UTC)   # 02:30 CEST
    second = datetime(2025, 10, 26, 1, 30, tzinfo=UTC)  # 02:30 CET, the same wall time
    one = await service(alone, workspace, first).fire("night", first)
    two = await service(alone, workspace, second).fire("night", second)
    assert (one.outcome, two.outcome, two.text) == ("ran_here", "already_fired",
                                                    "already fired here")
    assert one.key == two.key == "night@2025-10-26T02:30"
    assert len(record_of(alone).items()) == 1
