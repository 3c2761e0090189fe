"""Two computers whose zone rules disagree run a wall-clock time once, and ``bees schedules``
says so, naming both computers, both instants and both tz database versions (issue 11, 9)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from bees_cli.machine.computer import Computer
from bees_cli.record.fires import FireOutcome
from bees_cli.schedules import times, zones
from bees_cli.schedules.disagreements import seen, zone_warnings
from tests.conftest import BeesRunner
from tests.e2e.conftest import Team, cloud, make_computer, service, team, write_workspace
from tests.e2e.test_cli_views import sign_in

__all__ = ["cloud", "team"]  # the e2e fixtures this module uses

NINE_PARIS = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
"""Monday 2025-01-06 09:00 in Europe/Paris by the real rules (UTC+1 in winter)."""
NINE_SKEWED = datetime(2025, 1, 6, 7, 0, tzinfo=UTC)
"""The same wall-clock time by rules that put Paris at UTC+2 in winter."""
WARNING = (
    "zone rules disagree for 2025-01-06 09:00 (Europe/Paris): maya-desktop computed "
    "2025-01-06T07:00:00Z (tz 2020a), maya-laptop computed 2025-01-06T08:00:00Z (tz 2025b);"
    " it ran once, on maya-desktop. Update the time-zone database on the computer that is"
    " behind (bees doctor shows its version)"
)


def _version(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    monkeypatch.setattr(zones, "tz_database",
                        lambda tzpath=None: zones.TzDatabase(version=version, source="test"))


async def test_two_computers_with_different_zone_rules_run_nine_once_and_both_are_warned(
        tmp_path: Path, team: Team, bees: BeesRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "a.log")
    laptop = sign_in(team, "maya-laptop")
    desktop = make_computer(tmp_path, "maya-desktop", team.maya, url=team.cloud.url,
                            token=team.tokens[team.maya])

    with monkeypatch.context() as skewed:  # the desktop's older rules: Paris at UTC+2
        skewed.setattr(times, "ZoneInfo", lambda _name: timezone(timedelta(hours=2)))
        _version(skewed, "2020a")
        first = await service(desktop, workspace, NINE_SKEWED).fire("monday-report",
                                                                    NINE_SKEWED)
    _version(monkeypatch, "2025b")
    second = await service(laptop, workspace, NINE_PARIS).fire("monday-report", NINE_PARIS)

    assert (first.outcome, first.local) == (FireOutcome.RAN_HERE, "2025-01-06T09:00")
    assert (second.outcome, second.detail, second.local) == (
        FireOutcome.TAKEN, "maya-desktop (zone rules disagree)", "2025-01-06T09:00")
    assert second.text == "taken by maya-desktop (zone rules disagree)"
    assert [d.warning for d in seen(laptop)] == [WARNING]  # kept from the claim's answer

    text = bees("schedules", "-w", str(workspace))
    assert text.returncode == 0, text.stderr
    assert text.stderr == f"warning: monday-report: {WARNING}\n"
    assert "taken by maya-desktop (zone rules disagree)" in text.stdout
    [row] = json.loads(bees("schedules", "--json", "-w", str(workspace)).stdout)["schedules"]
    assert row["warnings"] == [{  # machine values: the text view words them (WARNING)
        "code": "zone_rules_disagree", "local_time": "2025-01-06T09:00", "zone": "Europe/Paris",
        "holder": {"computer": "maya-desktop", "machine_id": desktop.machine_id,
                   "instant": "2025-01-06T07:00:00Z", "tz_version": "2020a"},
        "others": [{"computer": "maya-laptop", "machine_id": laptop.machine_id,
                    "instant": "2025-01-06T08:00:00Z", "tz_version": "2025b"}]}]

    # the desktop never saw it in an answer: it learns it from Bees Cloud's list
    assert seen(desktop) == []
    assert {k: [d.warning for d in v] for k, v in zone_warnings(desktop).items()} == {
        "monday-report": [WARNING]}


def test_the_warnings_seen_before_stay_when_the_cloud_does_not_answer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bees_cli.cloud import wire
    from bees_cli.schedules.disagreements import remember
    from tests.e2e.conftest import closed_url

    here: Computer = make_computer(tmp_path, "maya-laptop", "maya@example.com",
                                   url=closed_url(), token="bees.x.y")
    answer = wire.KeyAnswer(
        status="taken", schedule_id="monday-report", scheduled_time=NINE_SKEWED,
        person="maya@example.com", machine_id="d", computer_name="maya-desktop",
        granted_at=NINE_SKEWED, local_time="2025-01-06T09:00", zone="Europe/Paris",
        tz_version="2020a", disagreements=[wire.KeyDisagreement(
            machine_id="l", computer_name="maya-laptop", scheduled_time=NINE_PARIS,
            tz_version="2025b", noticed_at=NINE_PARIS)])
    remember(here, [answer])
    remember(here, [answer])  # the same answer again: one entry
    assert {k: [d.warning for d in v] for k, v in zone_warnings(here).items()} == {
        "monday-report": [WARNING]}


async def test_a_bees_cloud_older_than_wall_clock_keys_is_asked_as_it_knows(
        tmp_path: Path) -> None:
    """An older server refuses the new claim fields (422): the next try leaves them out."""
    import dataclasses

    import httpx

    sent: list[dict[str, object]] = []

    def old_server(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append(body)
        extra = sorted(set(body) - {"schedule_id", "scheduled_time", "machine_id",
                                    "computer_name"})
        if extra:
            return httpx.Response(422, json={"error": {
                "code": "invalid", "message": f"{extra[0]}: Extra inputs are not permitted",
                "hint": None}})
        return httpx.Response(200, json={
            "status": "granted", "schedule_id": body["schedule_id"],
            "scheduled_time": body["scheduled_time"], "person": "maya@example.com",
            "machine_id": body["machine_id"], "computer_name": body["computer_name"],
            "granted_at": body["scheduled_time"], "item_id": None})

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/keys/claim":
            return old_server(request)
        if request.url.path == "/v1/owners/claim":
            claim = json.loads(request.content)
            return httpx.Response(200, json={"status": "owner", "owner": {
                "item_id": claim["item_id"], "epoch": 1, "machine_id": claim["machine_id"],
                "computer_name": claim["computer_name"], "person": "maya@example.com",
                "since": "2025-01-06T08:00:00Z", "release": None}})
        return httpx.Response(404, json={"error": {"code": "not_found", "message": "no",
                                                   "hint": None}})

    workspace = write_workspace(tmp_path / "ws", "maya@example.com", log=tmp_path / "a.log")
    laptop = dataclasses.replace(
        make_computer(tmp_path, "maya-laptop", "maya@example.com", url="http://cloud.test",
                      token="bees.x.y"),
        transport=httpx.MockTransport(answer))
    row = await service(laptop, workspace, NINE_PARIS).fire("monday-report", NINE_PARIS)
    assert (row.outcome, row.tries) == (FireOutcome.RAN_HERE, 2), (row.detail, sent)
    assert [sorted(body) for body in sent] == [
        ["computer_name", "local_time", "machine_id", "schedule_id", "scheduled_time",
         "tz_version", "zone"],
        ["computer_name", "machine_id", "schedule_id", "scheduled_time"],
    ]
