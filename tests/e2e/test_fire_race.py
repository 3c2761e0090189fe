"""Two computers of one person on one schedule, against one real Bees Cloud (issue 6, done-when).

The fire path is called directly with injected scheduled times and clocks, on both
computers at once; no test waits for a real Monday. The item's start is a stand-in that
marks the first stage running (what the worker's first activity does), so the team's view
can be checked without running agents; the Maya test runs real workers.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bees_cli.record.fires import FireLog
from bees_cli.record.sync import Syncer, team_rows
from bees_cli.schedules.owners import claim_owner
from bees_cli.schedules.times import fire_times
from bees_cli.workspace.loader import load_workspace
from tests.e2e.conftest import (
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


def mondays(workspace: Path, count: int) -> list[datetime]:
    """The schedule's next ``count`` instants after 2025-01-05 (UTC)."""
    schedule = load_workspace(workspace).schedules["monday-report"]
    fires = fire_times(schedule, "monday-report", after=FIRST - timedelta(days=1), count=count)
    return [fire.utc for fire in fires]


def starter(computer):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN201
    """Stand-in for starting the run: the first stage is running with its agent."""
    record = record_of(computer)

    async def start(item_id: str) -> None:
        record.set_state(item_id, status="running", stage="Draft", agent="writer")

    return start


async def test_twenty_fires_one_winner_each_and_the_team_sees_it(tmp_path: Path,
                                                                  team: Team) -> None:
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "agents.log")
    token = team.tokens[team.maya]
    laptop = make_computer(tmp_path, "maya-laptop", team.maya, url=team.cloud.url, token=token)
    desktop = make_computer(tmp_path, "maya-desktop", team.maya, url=team.cloud.url,
                            token=token)
    sam = make_computer(tmp_path, "sam-laptop", team.sam, url=team.cloud.url,
                        token=team.tokens[team.sam])
    times = mondays(workspace, 20)
    assert times[0] == FIRST and times[12] == datetime(2025, 3, 31, 7, 0, tzinfo=UTC)  # CEST

    winners: dict[str, str] = {}
    for at in times:
        rows = await asyncio.gather(
            service(laptop, workspace, at + timedelta(seconds=1),
                    start=starter(laptop)).fire("monday-report", at),
            service(desktop, workspace, at + timedelta(seconds=1),
                    start=starter(desktop)).fire("monday-report", at))
        outcomes = sorted(row.outcome for row in rows)
        assert outcomes == ["ran_here", "taken"], (at, rows)
        won = next(row for row in rows if row.outcome == "ran_here")
        lost = next(row for row in rows if row.outcome == "taken")
        winner = "maya-laptop" if won is rows[0] else "maya-desktop"
        assert lost.text == f"taken by {winner}"
        assert won.tries == lost.tries == 1
        assert won.key == lost.key == f"monday-report@{at.astimezone(_PARIS):%Y-%m-%dT}09:00"
        assert won.detail is not None
        winners[won.detail] = winner

    laptop_items = {row.id for row in record_of(laptop).items()}
    desktop_items = {row.id for row in record_of(desktop).items()}
    assert len(winners) == 20
    assert laptop_items | desktop_items == set(winners)
    assert not laptop_items & desktop_items
    for item_id in laptop_items | desktop_items:
        assert FireLog((laptop if item_id in laptop_items else desktop).record_path
                       ).claim(item_id).status == "owner"  # type: ignore[union-attr]

    # one sync round each: every item shows on the other computer, running on its winner
    syncers = [Syncer(c) for c in (laptop, desktop)]
    for syncer in syncers:
        await syncer.sync_once()
    await syncers[0].sync_once()
    for computer, own in ((laptop, laptop_items), (desktop, desktop_items)):
        rows = {r["id"]: r for r in team_rows(computer.record_path, own)}
        others = set(winners) - own
        assert set(rows) == others
        for item_id in others:
            assert rows[item_id]["status_text"] == f"Draft, running on {winners[item_id]}"

    # Sam, of the same team, sees every item and never runs one
    await Syncer(sam).sync_once()
    seen = {r["id"]: r["status_text"] for r in team_rows(sam.record_path, set())}
    assert seen == {i: f"Draft, running on {w}" for i, w in winners.items()}
    assert record_of(sam).items() == []
    some_item = sorted(winners)[0]
    taken = await claim_owner(sam, some_item)
    assert (taken.status, taken.computer, taken.may_start) == ("taken", winners[some_item], False)


_PARIS = __import__("zoneinfo").ZoneInfo("Europe/Paris")


async def test_a_computer_two_minutes_late_does_not_run_that_time(tmp_path: Path,
                                                                  team: Team) -> None:
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "agents.log")
    token = team.tokens[team.maya]
    late = make_computer(tmp_path, "maya-desktop", team.maya, url=team.cloud.url, token=token)
    at = mondays(workspace, 1)[0]
    row = await service(late, workspace, at + timedelta(minutes=2)).fire("monday-report", at)
    assert (row.outcome, row.text, row.tries) == ("skipped", "skipped (late by 120 s)", 0)
    assert record_of(late).items() == []
    # 60 s late still runs (the boundary is inclusive), and the key was still free
    on_time = make_computer(tmp_path, "maya-laptop", team.maya, url=team.cloud.url, token=token)
    row = await service(on_time, workspace, at + timedelta(seconds=60)).fire("monday-report", at)
    assert row.outcome == "ran_here"
    # the late computer asked for nothing: its fire row is the only trace
    assert [f.text for f in FireLog(late.record_path).fires()] == ["skipped (late by 120 s)"]


async def test_cloud_unreachable_five_tries_then_gave_up(tmp_path: Path, team: Team) -> None:
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "agents.log")
    laptop = make_computer(tmp_path, "maya-laptop", team.maya, url=closed_url(), token="t")
    at = mondays(workspace, 1)[0]
    sleeps = Sleeps()
    row = await service(laptop, workspace, at + timedelta(seconds=3),
                        sleep=sleeps).fire("monday-report", at)
    assert (row.outcome, row.text, row.tries) == (
        "gave_up", "gave up (cloud unreachable after 5 tries)", 5)
    assert sleeps.waits == [0.5, 1.0, 2.0, 4.0]
    assert record_of(laptop).items() == []


async def test_no_cloud_runs_without_keys_or_claims(tmp_path: Path) -> None:
    workspace = write_workspace(tmp_path / "ws", "maya@example.com", log=tmp_path / "a.log")
    alone = make_computer(tmp_path, "maya-laptop", "maya@example.com")
    at = mondays(workspace, 1)[0]
    started: list[str] = []

    async def start(item_id: str) -> None:
        started.append(item_id)

    row = await service(alone, workspace, at, start=start).fire("monday-report", at)
    assert row.outcome == "ran_here" and row.tries == 0
    [item] = record_of(alone).items()
    assert started == [item.id] and row.detail == item.id
    assert (item.title, item.stage, item.status) == ("Weekly report 2025-01-06", "Draft",
                                                     "pending")
    assert FireLog(alone.record_path).claim(item.id).status == "no_cloud"  # type: ignore[union-attr]
