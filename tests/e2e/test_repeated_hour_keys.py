"""Both fires of a quarter-hour schedule at 01:15 on the night London goes back from BST to
GMT run, each with its own key, against a real Bees Cloud (issue 23, point 5); ``bees
schedules`` lists the next fires through that hour. Clocks are injected, nothing sleeps."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from bees_cli.cli.schedules import in_zone
from bees_cli.cloud.client import cloud_for
from bees_cli.record.fires import FireLog, FireOutcome
from bees_cli.usecases.doctor import schedules_rows
from tests.e2e.conftest import Team, make_computer, record_of, service, write_workspace
from tests.e2e.test_fire_faults import maya

BST = datetime(2025, 10, 26, 0, 15, tzinfo=UTC)
"""01:15 BST on Sunday 2025-10-26."""
GMT = datetime(2025, 10, 26, 1, 15, tzinfo=UTC)
"""01:15 GMT, one hour later: London went back at 02:00 BST."""


def quarter_hours(root: Path, owner: str) -> Path:
    """Maya's workspace with a ``*/15`` schedule in Europe/London beside the Monday one."""
    workspace = write_workspace(root, owner, log=root.parent / "agents.log")
    (workspace / "schedules" / "quarter.yaml").write_text(
        f"process: weekly-report\nowner: {owner}\ncron: '*/15 * * * *'\n"
        "timezone: Europe/London\ntitle: 'Check {date} {time}'\n", encoding="utf-8")
    return workspace


async def test_both_fires_at_0115_run_once_each_with_their_own_keys(tmp_path: Path,
                                                                    team: Team) -> None:
    workspace = quarter_hours(tmp_path / "ws", team.maya)
    laptop, desktop = maya(tmp_path, team), maya(tmp_path, team, "maya-desktop")

    first = await service(laptop, workspace, BST).fire("quarter", BST)
    second = await service(laptop, workspace, GMT).fire("quarter", GMT)
    assert [(r.outcome, r.key, r.local) for r in (first, second)] == [
        (FireOutcome.RAN_HERE, "quarter@2025-10-26T01:15", "2025-10-26T01:15"),
        (FireOutcome.RAN_HERE, "quarter@2025-10-26T01:15+00:00", "2025-10-26T01:15"),
    ]
    items = {item.id: item.title for item in record_of(laptop).items()}
    assert items == {first.detail: "Check 2025-10-26 01:15",
                     second.detail: "Check 2025-10-26 01:15"}

    # the desktop asks for both: each key is the laptop's, and no zone rules disagree
    for at in (BST, GMT):
        taken = await service(desktop, workspace, at).fire("quarter", at)
        assert (taken.outcome, taken.detail) == (FireOutcome.TAKEN, "maya-laptop")
    assert record_of(desktop).items() == []

    # Bees Cloud has both keys with their items reported: nothing is left to make
    client = cloud_for(laptop)
    assert client is not None
    async with client:
        held = await client.held_keys(laptop.machine_id)
        assert {(k.scheduled_time, k.item_id) for k in held} == {
            (BST, first.detail), (GMT, second.detail)}
        assert await client.held_keys(laptop.machine_id, without_item=True) == []
    assert [r.key for r in FireLog(laptop.record_path).fires("quarter")] == [
        second.key, first.key]


def test_bees_schedules_lists_the_next_fires_through_the_repeated_hour(tmp_path: Path) -> None:
    owner = "maya@example.com"
    workspace = quarter_hours(tmp_path / "ws", owner)
    laptop = make_computer(tmp_path, "maya-laptop", owner)
    rows = {row.schedule: row for row in schedules_rows(
        laptop, workspace, now=datetime(2025, 10, 26, 0, 50, tzinfo=UTC))}
    shown = [in_zone(t, "Europe/London") for t in rows["quarter"].next]
    assert shown == ["2025-10-26 01:00 GMT", "2025-10-26 01:15 GMT", "2025-10-26 01:30 GMT"]
