"""``bees schedules``, ``bees status`` (team rows, ``--mine``, skew warning) and ``bees doctor``."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bees_cli.cli.schedules import in_zone
from bees_cli.cloud.login import Login, save_login
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import set_identity
from bees_cli.record.sync import SharedRecord, Syncer
from tests.conftest import BeesRunner
from tests.e2e.conftest import Team, make_computer, service, write_workspace

NINE = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
WEEK = timedelta(days=7)


def sign_in(team: Team, computer: str) -> Computer:
    """Make the test's BEES_HOME Maya's computer ``computer``, signed in to the team cloud."""
    set_identity(person=team.maya, computer=computer)
    save_login(Login(team.cloud.url, team.tokens[team.maya]))
    return Computer.load()


async def test_schedules_lists_next_times_and_every_fire_outcome(
        tmp_path: Path, team: Team, bees: BeesRunner) -> None:
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "a.log")
    laptop = sign_in(team, "maya-laptop")
    desktop = make_computer(tmp_path, "maya-desktop", team.maya, url=team.cloud.url,
                            token=team.tokens[team.maya])
    ran = await service(laptop, workspace, NINE).fire("monday-report", NINE)
    await service(desktop, workspace, NINE + WEEK).fire("monday-report", NINE + WEEK)
    await service(laptop, workspace, NINE + WEEK).fire("monday-report", NINE + WEEK)
    late = NINE + 2 * WEEK
    await service(laptop, workspace, late + timedelta(seconds=95)).fire("monday-report", late)

    done = bees("schedules", "--json", "-w", str(workspace))
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)["schedules"]
    assert (row["schedule"], row["fires_here"], row["timezone"]) == (
        "monday-report", True, "Europe/Paris")
    # JSON gives UTC instants; the text view shows them in the schedule's own zone
    local = [in_zone(t, row["timezone"]) for t in row["next"]]
    assert len(local) == 3 and all(t.endswith((" CET", " CEST")) for t in local)
    assert all(" 09:00 " in t and u.endswith("Z") for t, u in zip(local, row["next"],
                                                                  strict=True))
    assert [(f["local"], f["outcome"], f["detail"]) for f in row["last"]] == [
        ("2025-01-20T09:00", "skipped", "95"),
        ("2025-01-13T09:00", "taken", "maya-desktop"),
        ("2025-01-06T09:00", "ran_here", ran.detail),
    ]
    text = bees("schedules", "-w", str(workspace))
    assert text.returncode == 0
    assert "taken by maya-desktop" in text.stdout and "skipped (late by 95 s)" in text.stdout

    # another person's computer: the schedule does not fire there, and says why
    bees("whoami", "--set-person", team.sam, env={"BEES_HOME": str(tmp_path / "sam-home")})
    sam = bees("schedules", "--json", "-w", str(workspace),
               env={"BEES_HOME": str(tmp_path / "sam-home")})
    [other] = json.loads(sam.stdout)["schedules"]
    assert (other["fires_here"], other["why_not"], other["owner"], other["last"]) == (
        False, "not_owner", team.maya, [])  # the text view words it: owned by OWNER


async def test_status_shows_team_items_mine_hides_them_and_warns_on_skew(
        tmp_path: Path, team: Team, bees: BeesRunner) -> None:
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "a.log")
    laptop = sign_in(team, "maya-laptop")
    desktop = make_computer(tmp_path, "maya-desktop", team.maya, url=team.cloud.url,
                            token=team.tokens[team.maya])
    theirs = await service(desktop, workspace, NINE).fire("monday-report", NINE)
    await Syncer(desktop).sync_once()
    await Syncer(laptop).sync_once()

    every = json.loads(bees("status", "--json").stdout)["items"]
    assert [(r["item_id"], r["stage"], r["status"], r["computer"], r["team"])
            for r in every] == [(theirs.detail, "Draft", "pending", "maya-desktop", True)]
    assert json.loads(bees("status", "--json", "--mine").stdout)["items"] == []
    shown = bees("status")
    assert "Draft, pending on maya-desktop" in shown.stdout and shown.stderr == ""

    SharedRecord(laptop.record_path).set_meta(skew="-7.25")
    warned = bees("status", "--mine")
    assert warned.stderr.splitlines()[0] == (
        "warning: this computer's clock is 7.2 s ahead of Bees Cloud's; the shared record"
        " trusts each computer's clock (fix the system clock)")


async def test_status_says_old_team_rows_and_item_show_shows_where_a_team_item_runs(
        tmp_path: Path, team: Team, bees: BeesRunner) -> None:
    from bees_cli.utc import display_utc, format_utc, parse_utc

    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "a.log")
    laptop = sign_in(team, "maya-laptop")
    desktop = make_computer(tmp_path, "maya-desktop", team.maya, url=team.cloud.url,
                            token=team.tokens[team.maya])
    theirs = await service(desktop, workspace, NINE).fire("monday-report", NINE)
    item = str(theirs.detail)
    await Syncer(desktop).sync_once()
    await Syncer(laptop).sync_once()

    shown = bees("item", "show", item[:8].lower())
    assert shown.returncode == 0, shown.stderr
    team_since = json.loads(bees("status", "--json").stdout)["items"][0]["since"]
    assert shown.stdout.splitlines()[3:] == [
        "status      Draft, pending on maya-desktop",
        "agent       -",
        f"since       {display_utc(parse_utc(team_since))}",
        f"runs on     maya-desktop ({team.maya}); not on this computer",
        "(its team row in the shared record; history and logs are on that computer)",
    ]
    data = json.loads(bees("item", "show", item, "--json").stdout)
    assert (data["item_id"], data["computer"], data["team"]) == (item, "maya-desktop", True)
    refused = bees("relinquish", item[:10])
    assert refused.returncode == 3
    assert refused.stderr.splitlines()[0] == (
        f"error: item {item} is owned by maya-desktop ({team.maya}): only that computer can "
        "relinquish it")
    retried = bees("retry", item[:10])
    assert (retried.returncode, retried.stderr.splitlines()[0]) == (
        3, f"error: item {item} is owned by maya-desktop ({team.maya}): it runs there, not "
           "on this computer")

    three_min = datetime.now(UTC) - timedelta(seconds=185)
    SharedRecord(laptop.record_path).set_meta(
        last_sync=format_utc(three_min), error="cannot reach Bees Cloud at http://127.0.0.1:9",
        error_code="cloud_unreachable")
    stale = bees("status")
    assert stale.returncode == 0
    assert stale.stderr.splitlines() == ["team rows as of 3 min ago: Bees Cloud unreachable"]


def test_doctor_reports_engine_cloud_clock_folders_and_processes(
        tmp_path: Path, team: Team, bees: BeesRunner) -> None:
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "a.log")
    (workspace / "folders").mkdir()
    (workspace / "folders" / "notes.yaml").write_text("description: team notes\n")
    (workspace / "processes" / "digest.yaml").write_text(
        "stages:\n  - name: Write\n    kind: work\n    agents: [writer]\n    reads: [notes]\n"
        "  - name: Done\n    kind: done\n")
    sign_in(team, "maya-laptop")
    done = bees("doctor", "--json", "-w", str(workspace))
    assert done.returncode == 1  # the engine is not running
    report = json.loads(done.stdout)
    checks = {c["check"]: c for c in report["checks"]}
    assert checks["engine"] == {"check": "engine", "ok": False}
    assert checks["cloud"] == {
        "check": "cloud", "ok": True, "configured": True, "url": team.cloud.url,
        "url_from": "saved", "token_from": "saved", "person": team.maya, "team": team.name}
    assert (checks["clock"]["ok"], checks["clock"]["measured"]) == (True, "now")
    notes = checks["folder notes"]
    assert (notes["ok"], notes["folder"]) == (False, "notes")
    assert "path" not in notes and "detail" not in notes  # not linked; the text view words it
    assert report["processes"] == [
        {"process": "digest", "stage": "Write", "can_run": False,
         "reasons": [{"code": "folder_not_linked", "folder": "notes", "skipped": []}]},
        {"process": "weekly-report", "stage": "Draft", "can_run": True, "reasons": []},
    ]
    text = bees("doctor", "-w", str(workspace))
    assert "no    process digest: cannot run here now: folder notes:" in text.stdout
    lines = text.stdout.splitlines()
    assert "FAIL  engine: not running (start it with `bees run`)" in lines
    assert f"ok    cloud: {team.cloud.url}: signed in as {team.maya} (team {team.name})" in lines
    assert "Traceback" not in text.stderr

    save_login(Login("http://127.0.0.1:9", team.tokens[team.maya]))
    offline = json.loads(bees("doctor", "--json", "-w", str(workspace)).stdout)
    [cloud] = [c for c in offline["checks"] if c["check"] == "cloud"]
    assert (cloud["ok"], cloud["error"], cloud["url"]) == (
        False, "cloud_unreachable", "http://127.0.0.1:9")
    assert "cannot reach Bees Cloud" in cloud["message"]
