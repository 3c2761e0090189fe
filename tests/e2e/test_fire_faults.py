"""A won key becomes exactly one item, and every fire leaves a row (issue 11, points 1 and 2).

Against one real Bees Cloud over HTTP (SQLite). Lost answers are made by a transport that
sends each key request to the real server, lets it answer, then raises a read timeout, as a
slow network would; a crash between the grant and the making is the item maker cancelled
(what stopping ``bees run`` does); no test sleeps for a time rule (clocks are injected).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from bees_cli.engine.schedules import fire_service, make_fire_item
from bees_cli.machine.computer import Computer
from bees_cli.record.fires import FireLog
from bees_cli.schedules.fires import KEY_TIMEOUT
from bees_cli.schedules.times import fire_times
from bees_cli.workspace.loader import load_workspace
from tests.e2e.conftest import (
    FixedClock,
    Sleeps,
    Team,
    closed_url,
    make_computer,
    record_of,
    service,
    write_workspace,
)

FIRST = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
"""Monday 6 January 2025, 9:00 in Paris."""
MISSED_TEXT = "missed (this computer was asleep or bees run was down)"


def mondays(workspace: Path, count: int) -> list[datetime]:
    """The schedule's next ``count`` instants after 2025-01-05 (UTC)."""
    schedule = load_workspace(workspace).schedules["monday-report"]
    fires = fire_times(schedule, "monday-report", after=FIRST - timedelta(days=1), count=count)
    return [fire.utc for fire in fires]


class LosingTransport(httpx.AsyncBaseTransport):
    """Sends every request to the real server; the answers of the first ``lose`` key
    requests are lost after the server answered (a read timeout), as on a slow network."""

    def __init__(self, lose: int) -> None:
        self.real = httpx.AsyncHTTPTransport()
        self.lose = lose
        self.key_requests = 0
        self.read_timeouts: list[float] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.real.handle_async_request(request)
        if request.url.path.endswith("/keys/claim"):
            self.key_requests += 1
            self.read_timeouts.append(request.extensions["timeout"]["read"])
            if self.key_requests <= self.lose:
                await response.aread()
                await response.aclose()
                raise httpx.ReadTimeout("answer lost", request=request)
        return response

    async def aclose(self) -> None:
        await self.real.aclose()


class DownTransport(LosingTransport):
    """Every key claim's answer is lost (the proxy); while ``down``, no request reaches
    the cloud at all. Counts the held-key listings that were asked."""

    def __init__(self) -> None:
        super().__init__(lose=10**6)
        self.down = False
        self.listings = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and request.url.path.endswith("/v1/keys"):
            self.listings += 1
        if self.down:
            raise httpx.ConnectError("cloud unreachable", request=request)
        return await super().handle_async_request(request)


def maya(tmp_path: Path, team: Team, name: str = "maya-laptop", **extra: Any) -> Computer:
    computer = make_computer(tmp_path, name, team.maya, url=team.cloud.url,
                             token=team.tokens[team.maya])
    return replace(computer, **extra) if extra else computer


async def test_a_key_granted_while_the_answers_are_lost_makes_one_item(tmp_path: Path,
                                                                       team: Team) -> None:
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "agents.log")
    lossy = LosingTransport(lose=2)
    laptop = maya(tmp_path, team, transport=lossy)
    at = mondays(workspace, 1)[0]
    row = await service(laptop, workspace, at + timedelta(seconds=2),
                        sleep=Sleeps()).fire("monday-report", at)
    [item] = record_of(laptop).items()
    # the first try was granted, its answer lost; the third got "granted again"
    assert (row.outcome, row.text, row.tries) == ("ran_here", f"ran here ({item.id})", 3)
    assert lossy.key_requests == 3  # requests that left the computer: no retries inside
    assert lossy.read_timeouts == [KEY_TIMEOUT] * 3 == [10.0] * 3
    # a Temporal retry of the same fire, two minutes later, finds the item made
    again = await service(laptop, workspace, at + timedelta(minutes=2)).fire("monday-report", at)
    assert again == row
    assert [i.id for i in record_of(laptop).items()] == [item.id]
    # the other computer asking on time is told the key is taken
    desktop = maya(tmp_path, team, "maya-desktop")
    taken = await service(desktop, workspace, at + timedelta(seconds=3)).fire("monday-report", at)
    assert (taken.outcome, taken.text) == ("taken", "taken by maya-laptop")


async def test_every_answer_lost_is_five_requests_then_gave_up(tmp_path: Path,
                                                               team: Team) -> None:
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "agents.log")
    lossy = LosingTransport(lose=99)
    laptop = maya(tmp_path, team, transport=lossy)
    at = mondays(workspace, 1)[0]
    sleeps = Sleeps()
    row = await service(laptop, workspace, at + timedelta(seconds=2),
                        sleep=sleeps).fire("monday-report", at)
    assert (row.outcome, row.text, row.tries) == (
        "gave_up", "gave up (cloud unreachable after 5 tries)", 5)
    assert lossy.key_requests == 5
    assert sleeps.waits == [0.5, 1.0, 2.0, 4.0]


async def test_stopped_right_after_the_grant_the_item_is_made_on_the_next_start(
        tmp_path: Path, team: Team) -> None:
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "agents.log")
    laptop = maya(tmp_path, team)
    at = mondays(workspace, 1)[0]

    def killed(*_args: object) -> None:
        raise asyncio.CancelledError  # bees run stopped between the grant and the making

    crashing = service(laptop, workspace, at + timedelta(seconds=1))
    crashing.make = killed
    with pytest.raises(asyncio.CancelledError):
        await crashing.fire("monday-report", at)
    assert record_of(laptop).items() == []
    assert FireLog(laptop.record_path).fires() == []
    # the next start, an hour later: the held key is made into its item, pending for bees run
    later = at + timedelta(hours=1)
    rows = await service(laptop, workspace, later).recover()
    [item] = record_of(laptop).items()
    assert [(r.outcome, r.text, r.local) for r in rows] == [
        ("ran_here", f"ran here ({item.id})", "2025-01-06T09:00")]
    assert (item.title, item.status) == ("Weekly report 2025-01-06", "pending")
    assert FireLog(laptop.record_path).claim(item.id).status == "owner"  # type: ignore[union-attr]
    # a second start, and the late delivery of the same time, do nothing
    assert await service(laptop, workspace, later).recover() == []
    again = await service(laptop, workspace, later).fire("monday-report", at)
    assert again == rows[0]
    assert [i.id for i in record_of(laptop).items()] == [item.id]


async def test_the_same_time_delivered_twice_at_once_makes_one_item(tmp_path: Path,
                                                                    team: Team) -> None:
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "agents.log")
    laptop = maya(tmp_path, team)
    at = mondays(workspace, 1)[0]
    first, second = await asyncio.gather(
        service(laptop, workspace, at + timedelta(seconds=1)).fire("monday-report", at),
        service(laptop, workspace, at + timedelta(seconds=1)).fire("monday-report", at))
    [item] = record_of(laptop).items()
    assert first.text == second.text == f"ran here ({item.id})"
    assert [r.text for r in FireLog(laptop.record_path).fires()] == [f"ran here ({item.id})"]


async def test_making_twice_with_one_id_makes_one_item(tmp_path: Path) -> None:
    workspace = write_workspace(tmp_path / "ws", "maya@example.com", log=tmp_path / "a.log")
    alone = make_computer(tmp_path, "maya-laptop", "maya@example.com")
    loaded = load_workspace(workspace)
    from bees_cli.schedules.fires import fire_snapshot

    snapshot, _stage = fire_snapshot(loaded, "monday-report")
    item_id = "01JDXAMPXE0000000000000000"
    for _ in range(2):
        make_fire_item(alone, loaded, "monday-report", snapshot, "Weekly", item_id)
    assert [i.id for i in record_of(alone).items()] == [item_id]


async def test_every_outcome_leaves_its_row(tmp_path: Path, team: Team) -> None:
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "agents.log")
    laptop = maya(tmp_path, team)
    desktop = maya(tmp_path, team, "maya-desktop")
    away = make_computer(tmp_path, "maya-away", team.maya, url=closed_url(), token="t")
    first, second, third, fourth, fifth = mondays(workspace, 5)
    ran = await service(laptop, workspace, first).fire("monday-report", first)
    taken = await service(desktop, workspace, first).fire("monday-report", first)
    skipped = await service(desktop, workspace, second + timedelta(seconds=61)).fire(
        "monday-report", second)
    gave_up = await service(away, workspace, first, sleep=Sleeps()).fire("monday-report", first)

    def broken(*_args: object) -> None:
        raise OSError("No space left on device\nsecond line")

    failing = service(laptop, workspace, third)
    failing.make = broken
    failed = await failing.fire("monday-report", third)
    assert [(r.outcome, r.text, r.tries) for r in (taken, skipped, gave_up, failed)] == [
        ("taken", "taken by maya-laptop", 1),
        ("skipped", "skipped (late by 61 s)", 0),
        ("gave_up", "gave up (cloud unreachable after 5 tries)", 5),
        ("failed", "failed (OSError: No space left on device)", 1),
    ]
    # bees run was down for the fourth and fifth Mondays: found at the next start, which
    # also makes the item of the third Monday's held key
    restarted = await service(laptop, workspace, fifth + timedelta(minutes=5)).recover()
    made, missed = restarted[0], restarted[1:]
    one, three = (i.id for i in sorted(record_of(laptop).items(), key=lambda i: i.created))
    assert (ran.text, ran.tries, made.text, made.local) == (
        f"ran here ({one})", 1, f"ran here ({three})", "2025-01-20T09:00")
    assert [(r.local, r.text) for r in missed] == [
        ("2025-01-27T09:00", MISSED_TEXT), ("2025-02-03T09:00", MISSED_TEXT)]
    assert [(f.local, f.text) for f in FireLog(laptop.record_path).fires()] == [
        ("2025-02-03T09:00", MISSED_TEXT),
        ("2025-01-27T09:00", MISSED_TEXT),
        ("2025-01-20T09:00", f"ran here ({three})"),
        ("2025-01-06T09:00", f"ran here ({one})"),
    ]
    assert missed[0].to_json() == {
        "schedule": "monday-report", "key": "monday-report@2025-01-27T09:00",
        "scheduled": "2025-01-27T08:00:00.000000Z", "local": "2025-01-27T09:00",
        "handled": "2025-02-03T08:05:00.000000Z", "outcome": "missed", "detail": None,
        "tries": 0, "text": MISSED_TEXT}
    # a start within the minute of a fire leaves it to the engine: not missed yet
    assert await service(laptop, workspace, fifth + timedelta(minutes=5)).recover() == []


async def test_a_failing_maker_error_is_one_line_without_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workspace = write_workspace(tmp_path / "ws", "maya@example.com", log=tmp_path / "a.log")
    alone = make_computer(tmp_path, "maya-laptop", "maya@example.com")
    at = mondays(workspace, 1)[0]

    def bug(*_args: object) -> None:
        raise KeyError("stage")

    failing = fire_service(alone, workspace, clock=FixedClock(at))
    failing.make = bug
    row = await failing.fire("monday-report", at)
    assert row.text == "failed (KeyError: 'stage')"
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err


class FakeHeldKeys:
    """The cloud's held-key calls (branch cloud-faults) as a stand-in: lists ``held``,
    records each report."""

    def __init__(self, held: list[tuple[str, datetime]]) -> None:
        self.held = held
        self.reports: list[tuple[str, datetime, str]] = []

    async def report_item(self, schedule_id: str, scheduled: datetime, item_id: str) -> None:
        self.reports.append((schedule_id, scheduled, item_id))
        self.held = [k for k in self.held if k != (schedule_id, scheduled)]

    async def without_item(self) -> list[tuple[str, datetime]]:
        return list(self.held)


async def test_a_held_key_is_made_from_the_cloud_list_when_the_local_file_is_lost(
        tmp_path: Path, team: Team) -> None:
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "agents.log")
    laptop = maya(tmp_path, team)
    at = mondays(workspace, 1)[0]

    def killed(*_args: object) -> None:
        raise asyncio.CancelledError

    crashing = service(laptop, workspace, at)
    crashing.make = killed
    with pytest.raises(asyncio.CancelledError):
        await crashing.fire("monday-report", at)
    laptop.record_path.unlink()  # the local rows are gone with the file
    cloud = FakeHeldKeys([("monday-report", at)])
    rows = await service(laptop, workspace, at + timedelta(hours=2),
                         keys=lambda _client, _computer: cloud).recover()
    [item] = record_of(laptop).items()
    assert [r.text for r in rows] == [f"ran here ({item.id})"]
    assert cloud.reports == [("monday-report", at, item.id)]
    assert await service(laptop, workspace, at + timedelta(hours=2),
                         keys=lambda _client, _computer: cloud).recover() == []


async def test_made_then_stopped_before_its_row_is_claimed_and_rowed_once(
        tmp_path: Path, team: Team) -> None:
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "agents.log")
    laptop = maya(tmp_path, team)
    at = mondays(workspace, 1)[0]
    started: list[str] = []

    async def stopped(_item_id: str) -> None:
        raise asyncio.CancelledError  # stopped after the making, before the row

    async def start(item_id: str) -> None:
        started.append(item_id)

    with pytest.raises(asyncio.CancelledError):
        await service(laptop, workspace, at, start=stopped).fire("monday-report", at)
    [item] = record_of(laptop).items()
    assert FireLog(laptop.record_path).fires() == []
    # Temporal retries the fire three minutes later: claimed (again), started, one row
    row = await service(laptop, workspace, at + timedelta(minutes=3),
                        start=start).fire("monday-report", at)
    assert (row.text, started) == (f"ran here ({item.id})", [item.id])
    again = await service(laptop, workspace, at + timedelta(minutes=4),
                          start=start).fire("monday-report", at)
    assert (again, started) == (row, [item.id])
    assert [i.id for i in record_of(laptop).items()] == [item.id]


async def test_a_lost_report_is_sent_again_at_start(tmp_path: Path, team: Team) -> None:
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "agents.log")
    laptop = maya(tmp_path, team)
    at = mondays(workspace, 1)[0]
    row = await service(laptop, workspace, at).fire("monday-report", at)
    cloud = FakeHeldKeys([("monday-report", at)])  # the first report never arrived
    assert await service(laptop, workspace, at + timedelta(hours=1),
                         keys=lambda _client, _computer: cloud).recover() == []
    assert cloud.reports == [("monday-report", at, row.detail)]
    assert len(record_of(laptop).items()) == 1


async def test_bees_run_says_a_fire_and_a_key_taken_in_one_info_line_each(
        tmp_path: Path, team: Team, caplog: pytest.LogCaptureFixture) -> None:
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "agents.log")
    at = mondays(workspace, 1)[0]
    laptop = maya(tmp_path, team)
    desktop = maya(tmp_path, team, "maya-desktop")
    with caplog.at_level(logging.INFO, logger="bees_cli.schedules.fires"):
        await service(laptop, workspace, at + timedelta(seconds=2)).fire("monday-report", at)
        await service(desktop, workspace, at + timedelta(seconds=3)).fire("monday-report", at)
    [item] = record_of(laptop).items()
    assert [(r.levelname, r.getMessage()) for r in caplog.records
            if r.name == "bees_cli.schedules.fires"] == [
        ("INFO", "schedule monday-report 2025-01-06 09:00 (Europe/Paris) fired: process "
                 f"weekly-report, item {item.id}"),
        ("INFO", "schedule monday-report 2025-01-06 09:00 (Europe/Paris): key taken by "
                 "maya-laptop; not run here"),
    ]


async def test_a_check_that_makes_the_item_while_the_fire_asks_leaves_ran_here(
        tmp_path: Path, team: Team) -> None:
    """The held-keys check of another fire's "gave up" runs while this fire still asks
    (between two tries): it makes the item; the fire's last try then gives up, and its row
    stays "ran here" with the one item."""
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "agents.log")
    lossy = DownTransport()
    laptop = maya(tmp_path, team, transport=lossy)
    at = mondays(workspace, 1)[0]
    checks: list[list[str]] = []

    async def sleep(_seconds: float) -> None:
        if not checks:  # after the first (granted) try, a registrar pass checks
            check = await service(laptop, workspace, at + timedelta(seconds=1)).make_held()
            checks.append([r.text for r in check.rows])

    row = await service(laptop, workspace, at + timedelta(seconds=1),
                        sleep=sleep).fire("monday-report", at)
    [item] = record_of(laptop).items()
    assert checks == [[f"ran here ({item.id})"]]
    assert lossy.key_requests == 5
    # the check's row is the fire's row (written by the check: no tries of its own)
    assert [(f.text, f.tries) for f in FireLog(laptop.record_path).fires()] == [
        (row.text, row.tries)] == [(f"ran here ({item.id})", 0)]
