"""The shared record orders an item's changes by owner generation first, then by origin time
(issue 23, point 4), and a change it does not take is kept and shown, never dropped.

Real computers (their own record files) sync against the real Bees Cloud over HTTP, on SQLite
and on PostgreSQL; each computer's clock is injected into its outbox (the origin time a
change carries is that computer's clock when the item changed).
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from bees_cli.cloud import wire
from bees_cli.cloud.client import AsyncCloudClient
from bees_cli.machine.computer import Computer
from bees_cli.record.fires import ClaimStatus
from bees_cli.record.sync import SharedRecord, Syncer
from bees_cli.record.sync_notes import refusal_lines
from bees_cli.schedules.owners import claim_owner
from bees_cli.usecases.bees import Bees
from bees_cli.usecases.doctor import _record_checks
from bees_cli.usecases.items import status_now
from bees_cli.usecases.status_warnings import status_warning_values, status_warnings
from bees_cli.utc import format_utc
from tests.conftest import BeesRunner
from tests.e2e.conftest import make_computer, record_of

from .conftest import Team

ITEM = "01JGENERATIONITEM000000000"
OTHER = "01JGENERATIONOTHER00000000"


def email(team: Team, person: str) -> str:
    """The person's email in ``team`` (see :func:`tests.cloud.conftest.make_team`)."""
    return f"{person}@{team.name}.example"


def computer(tmp_path: Path, team: Team, name: str, person: str) -> Computer:
    """A computer of ``person`` signed in to the team's Bees Cloud."""
    return make_computer(tmp_path, name, email(team, person), url=team.url,
                         token=team.tokens[person])


def add_item(here: Computer, item_id: str, *, status: str, stage: str, at: datetime) -> None:
    """Put the item in the computer's record with ``status`` at ``stage``, changed at ``at``
    by this computer's clock."""
    record = record_of(here)
    if item_id not in {row.id for row in record.items()}:
        record.add_item(id=item_id, process="p", title="Week 2", workspace="/ws",
                        run_folder="/runs", input="{}", stage="Draft")
    record.set_state(item_id, status=status, stage=stage)
    stamp_outbox(here, item_id, at)


def stamp_outbox(here: Computer, item_id: str, at: datetime) -> None:
    """Set the origin time of the item's unsent change: the computer's clock read ``at``."""
    db = sqlite3.connect(here.record_path)
    with db:
        db.execute("UPDATE sync_outbox SET origin = ? WHERE item_id = ?",
                   (format_utc(at), item_id))
    db.close()


async def sync(here: Computer) -> int:
    """One sync round of ``here``; return how many of its changes were refused."""
    return (await Syncer(here).sync_once()).refused


def seen_by(here: Computer, item_id: str = ITEM) -> tuple[object, ...]:
    """The item's team row on ``here``: status, stage, the computer running it, origin."""
    [row] = [r for r in SharedRecord(here.record_path).team() if r.item_id == item_id]
    return row.fields["status"], row.fields["stage"], row.computer, row.origin_time


async def test_a_new_owner_whose_clock_is_behind_is_seen_done_by_the_team(
        tmp_path: Path, team: Team) -> None:
    laptop = computer(tmp_path, team, "maya-laptop", "maya")
    desktop = computer(tmp_path, team, "maya-desktop", "maya")
    sams = computer(tmp_path, team, "sam-laptop", "sam")
    now = datetime.now(UTC).replace(microsecond=0)
    behind = now - timedelta(minutes=10)  # the desktop's clock is 10 min behind the laptop's

    # the laptop owns the item (generation 1), runs it, then relinquishes it
    assert (await claim_owner(laptop, ITEM)).status == ClaimStatus.OWNER
    add_item(laptop, ITEM, status="running", stage="Draft", at=now - timedelta(seconds=60))
    assert await sync(laptop) == 0
    assert await sync(sams) == 0
    assert seen_by(sams) == ("running", "Draft", "maya-laptop", now - timedelta(seconds=60))
    async with AsyncCloudClient(team.url, team.tokens["maya"]) as api:
        await api.release_owner(ITEM, wire.OwnerRelease(
            machine_id=laptop.machine_id, restart_stages={"main": "Draft"},
            checkpoint_sha256="0" * 64))
    add_item(laptop, ITEM, status="free", stage="Draft", at=now)
    assert await sync(laptop) == 0
    assert await sync(sams) == 0
    assert seen_by(sams) == ("free", "Draft", "maya-laptop", now)

    # the desktop continues it (generation 2) and finishes it, stamped by its clock
    assert (await claim_owner(desktop, ITEM)).status == ClaimStatus.OWNER
    add_item(desktop, ITEM, status="running", stage="Draft", at=behind)
    add_item(desktop, ITEM, status="done", stage="Done", at=behind + timedelta(seconds=30))
    assert await sync(desktop) == 0
    shared = SharedRecord(desktop.record_path)
    assert (shared.outbox(desktop), shared.refused()) == ([], [])

    # the team sees the new owner's done: Sam, the laptop that handed it over, and the server
    assert await sync(sams) == 0
    assert seen_by(sams) == ("done", "Done", "maya-desktop", behind + timedelta(seconds=30))
    assert await sync(laptop) == 0
    assert seen_by(laptop) == ("done", "Done", "maya-desktop", behind + timedelta(seconds=30))
    # the laptop's bees status shows the team's row, not its own stale free
    [row] = [r for r in status_now(Bees(laptop)).rows if r["item_id"] == ITEM]
    assert (row["status"], row["stage"], row.get("computer"), row.get("team")) == (
        "done", "Done", "maya-desktop", True)
    async with AsyncCloudClient(team.url, team.tokens["sam"]) as api:
        [entry] = [e for e in (await api.pull_all(0)).changes if e.item_id == ITEM]
    assert (entry.fields["status"], entry.generation, entry.machine_id) == (
        "done", 2, desktop.machine_id)


async def test_a_change_the_record_does_not_take_is_kept_and_shown_with_its_count_and_reason(
        tmp_path: Path, team: Team) -> None:
    desktop = computer(tmp_path, team, "maya-desktop", "maya")
    now = datetime.now(UTC).replace(microsecond=0)
    for item in (ITEM, OTHER):
        assert (await claim_owner(desktop, item)).status == ClaimStatus.OWNER
        add_item(desktop, item, status="running", stage="Draft", at=now)
    assert await sync(desktop) == 0

    # the clock steps back 10 min (same owner, same generation): the later state loses
    back = now - timedelta(minutes=10)
    for item in (ITEM, OTHER):
        add_item(desktop, item, status="done", stage="Done", at=back)
    assert await sync(desktop) == 2
    shared = SharedRecord(desktop.record_path)
    assert [(i, o) for i, o, _ in shared.outbox(desktop)] == [
        (ITEM, format_utc(back)), (OTHER, format_utc(back))]
    assert [(r.item_id, r.code) for r in shared.refused()] == [
        (ITEM, "superseded"), (OTHER, "superseded")]
    line = ("the shared record refused 2 changes: it holds a change from this computer "
            "stamped at or after this one; did its clock go back? (2 items; kept until they "
            "can be sent)")
    assert refusal_lines(desktop.record_path) == [line]
    assert line in status_warnings(desktop.record_path, datetime.now(UTC))
    [warning] = [w for w in status_warning_values(desktop.record_path, datetime.now(UTC))
                 if w.code == "changes_refused"]
    assert (warning.refused, warning.items) == ("superseded", [ITEM, OTHER])
    checks = {c.check: (c.ok, c.detail) for c in _record_checks(desktop)}
    assert checks["refused changes"] == (False, line)

    # kept: sent again next round, still refused; a later change replaces it and applies
    assert await sync(desktop) == 2
    add_item(desktop, ITEM, status="done", stage="Done", at=now + timedelta(seconds=1))
    add_item(desktop, OTHER, status="done", stage="Done", at=now + timedelta(seconds=1))
    assert await sync(desktop) == 0
    assert (shared.outbox(desktop), shared.refused(), refusal_lines(desktop.record_path)) == (
        [], [], [])
    assert seen_by(desktop) == ("done", "Done", "maya-desktop", now + timedelta(seconds=1))


async def test_bees_status_and_doctor_show_the_refused_change(
        tmp_path: Path, team: Team, bees: BeesRunner) -> None:
    from bees_cli.cloud.login import Login, save_login
    from bees_cli.machine.identity import set_identity

    set_identity(person=email(team, "maya"), computer="maya-desktop")
    save_login(Login(team.url, team.tokens["maya"]))
    desktop = Computer.load()
    now = datetime.now(UTC).replace(microsecond=0)
    assert (await claim_owner(desktop, ITEM)).status == ClaimStatus.OWNER
    add_item(desktop, ITEM, status="running", stage="Draft", at=now)
    assert await sync(desktop) == 0
    add_item(desktop, ITEM, status="done", stage="Done", at=now - timedelta(minutes=10))
    assert await sync(desktop) == 1

    line = ("the shared record refused 1 change: it holds a change from this computer "
            f"stamped at or after this one; did its clock go back? ({ITEM}; kept until they "
            "can be sent)")
    shown = bees("status")
    assert (shown.returncode, shown.stderr.splitlines()) == (0, [line])
    warnings = json.loads(bees("status", "--json").stdout)["warnings"]
    assert [(w["code"], w["refused"], w["items"]) for w in warnings] == [
        ("changes_refused", "superseded", [ITEM])]
    doctor = bees("doctor")
    assert f"FAIL  refused changes: {line}" in doctor.stdout.splitlines()
    [check] = [c for c in json.loads(bees("doctor", "--json").stdout)["checks"]
               if c["check"] == "refused changes"]
    assert [(r["item_id"], r["code"]) for r in check["refused"]] == [(ITEM, "superseded")]


def test_an_older_bees_is_served_without_generations(team: Team) -> None:
    """An older Bees (strict models, no ``generation``) reads every answer; it sends no
    ``generations=true``, so its pulls carry no generation and its pushes list no
    ``superseded`` change (it could not read that code). Its changes are still ordered by
    owner generation on the server: the generation comes from the owner table."""
    machine = "m-" + team.name
    headers = {"authorization": f"Bearer {team.tokens['maya']}"}
    with httpx.Client(base_url=team.url, headers=headers) as http:
        claim = {"item_id": ITEM, "machine_id": machine, "computer_name": "old-bees"}
        assert http.post("/v1/owners/claim", json=claim).json()["status"] == "owner"
        now = datetime.now(UTC).replace(microsecond=0)
        later = {"item_id": ITEM, "fields": {"status": "done"}, "machine_id": machine,
                 "origin_time": format_utc(now)}
        earlier = {**later, "fields": {"status": "running"},
                   "origin_time": format_utc(now - timedelta(seconds=5))}
        assert http.post("/v1/record/push", json={"changes": [later]}).json() == {
            "received": 1, "applied": 1, "refused": []}
        assert http.post("/v1/record/push", json={"changes": [earlier]}).json() == {
            "received": 1, "applied": 0, "refused": []}
        [entry] = http.get("/v1/record/pull", params={"since": 0}).json()["changes"]
        assert "generation" not in entry and entry["fields"] == {"status": "done"}

        # the same requests from a Bees that knows generations
        ask = {"generations": "true"}
        answer = http.post("/v1/record/push", params=ask, json={"changes": [earlier]}).json()
        assert (answer["applied"], [(r["item_id"], r["code"]) for r in answer["refused"]]) == (
            0, [(ITEM, "superseded")])
        # a repeat of the change the record holds is not refused (a retried push)
        assert http.post("/v1/record/push", params=ask, json={"changes": [later]}).json() == {
            "received": 1, "applied": 0, "refused": []}
        [entry] = http.get("/v1/record/pull", params={"since": 0, **ask}).json()["changes"]
        assert (entry["generation"], entry["fields"]) == (1, {"status": "done"})


def test_rows_stored_before_generations_keep_generation_0(tmp_path: Path) -> None:
    """Migration 0005: a row the record held before keeps its fields, at generation 0."""
    import sqlalchemy as sa

    from bees_cli.cloud.server.migrations import upgrade
    from bees_cli.cloud.server.storage import Storage

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = sa.create_engine(url)
    upgrade(engine, "0004")
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO teams (id, name, created_us) VALUES (1, 't', 0)"))
        conn.execute(sa.text("INSERT INTO people (id, team_id, email, created_us)"
                             " VALUES (1, 1, 'maya@t.example', 0)"))
        conn.execute(sa.text(
            "INSERT INTO record_items (team_id, item_id, fields, digest, origin_us, machine_id,"
            " person_id, seq) VALUES (1, :item, '{}', :digest, 5, 'laptop', 1, 1)"),
            {"item": ITEM, "digest": wire.fields_digest({})})
    storage = Storage(url)  # migrates to the newest
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text(
                "SELECT item_id, origin_us, generation FROM record_items")).all()
        assert rows == [(ITEM, 5, 0)]
    finally:
        storage.close()
        engine.dispose()
