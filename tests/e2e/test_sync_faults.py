"""The shared record under faults on the computer side (issue 11, points 4-6): refused
changes kept and shown, old team rows said, the local owner claim first, team items by
prefix; against the real Bees Cloud over HTTP."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel

from bees_cli.cloud import wire
from bees_cli.cloud.client import AsyncCloudClient
from bees_cli.errors import NotFound, Refused
from bees_cli.record.fires import ClaimStatus, FireLog
from bees_cli.record.local import OwnedElsewhere
from bees_cli.record.sync import Refusal, SharedRecord, Syncer
from bees_cli.record.sync_notes import refusal_lines, stale_line
from bees_cli.schedules.owners import claim_owner
from bees_cli.usecases.bees import Bees
from bees_cli.usecases.doctor import _record_checks
from bees_cli.usecases.items import status_now
from bees_cli.usecases.models import TeamItemDetails
from bees_cli.usecases.status_warnings import status_warnings
from bees_cli.utc import format_utc
from tests.cloud.conftest import ThreadServer, clocked_server  # noqa: F401 - a fixture
from tests.e2e.conftest import FixedClock, Team, closed_url, make_computer, record_of
from tests.support import wait

ITEM = "01JSYNCFAULTSITEM000000000"
TOLERANCE = timedelta(seconds=300)


class RefusedShape(BaseModel):
    """The refusal shape Bees Cloud answers per change (``wire.RefusedChange`` on the
    ``cloud-faults`` branch): item, code, message, offset."""

    item_id: str
    code: Literal["not_owner", "machine_not_yours", "clock_ahead", "too_large"]
    message: str
    offset_seconds: float | None = None
    owner: None = None


class PushShape(BaseModel):
    received: int
    applied: int
    refused: list[RefusedShape]


class ClockCheckingClient(AsyncCloudClient):
    """The real client over HTTP to the real app, answering a change stamped more than
    :data:`TOLERANCE` ahead of ``server_clock`` with the server's refusal shape (what the
    ``cloud-faults`` server does; this base's server does not refuse yet)."""

    def __init__(self, url: str, token: str, server_clock: FixedClock) -> None:
        super().__init__(url, token, retries=0)
        self.server_clock = server_clock

    async def push(self, changes: list[wire.RecordChange]) -> PushShape:  # type: ignore[override]
        now = self.server_clock()
        ahead = [c for c in changes if c.origin_time - now > TOLERANCE]
        taken = [c for c in changes if c not in ahead]
        answer = await super().push(taken) if taken else wire.PushAnswer(received=0,
                                                                          applied=0)
        refused = [RefusedShape(
            item_id=c.item_id, code="clock_ahead",
            message=f"origin time {(c.origin_time - now).total_seconds():.0f} s ahead of "
                    "the server clock",
            offset_seconds=(c.origin_time - now).total_seconds()) for c in ahead]
        return PushShape(received=answer.received + len(ahead), applied=answer.applied,
                         refused=refused)


def add_item(computer, item_id: str = ITEM, status: str = "pending") -> None:  # type: ignore[no-untyped-def]  # noqa: ANN001
    record = record_of(computer)
    record.add_item(id=item_id, process="p", title="Week 2", workspace="/ws",
                    run_folder="/runs", input="{}", stage="Draft")
    if status != "pending":
        record.set_state(item_id, status=status, stage="Draft")


def stamp_outbox(computer, item_id: str, at: datetime) -> None:  # type: ignore[no-untyped-def]  # noqa: ANN001
    """Set the origin time of the item's unsent change (as if this clock read ``at``)."""
    db = sqlite3.connect(computer.record_path)
    with db:
        db.execute("UPDATE sync_outbox SET origin = ? WHERE item_id = ?", (format_utc(at), item_id))
    db.close()


async def test_a_change_stamped_ahead_is_refused_kept_shown_and_sent_later(
        tmp_path: Path, team: Team) -> None:
    url, token = team.cloud.url, team.tokens[team.maya]
    laptop = make_computer(tmp_path, "maya-laptop", team.maya, url=url, token=token)
    desktop = make_computer(tmp_path, "maya-desktop", team.maya, url=url, token=token)
    add_item(laptop)
    server = FixedClock(datetime.now(UTC).replace(microsecond=0))
    stamp_outbox(laptop, ITEM, server() + timedelta(seconds=412))
    client = ClockCheckingClient(url, token, server)
    try:
        first = await Syncer(laptop, client=client).sync_once()
        assert (first.pushed, first.refused) == (1, 1)
        shared = SharedRecord(laptop.record_path)
        assert [(r.item_id, r.code, r.offset_seconds) for r in shared.refused()] == [
            (ITEM, "clock_ahead", 412.0)]
        line = ("the shared record refused 1 change: this computer's clock is 412 s ahead "
                f"({ITEM}; kept until they can be sent)")
        assert refusal_lines(laptop.record_path) == [line]
        assert line in status_warnings(laptop.record_path, datetime.now(UTC))
        checks = {c.check: (c.ok, c.detail) for c in _record_checks(laptop)}
        assert checks["refused changes"] == (False, line)
        await Syncer(desktop, client=AsyncCloudClient(url, token, retries=0)).sync_once()
        assert SharedRecord(desktop.record_path).team() == []  # nothing reached the team

        # the change is kept: sent again each round, refused while still ahead
        await Syncer(laptop, client=client).sync_once()
        assert [r.item_id for r in shared.refused()] == [ITEM]

        # a later correct change (the clock was fixed) replaces it and applies
        record_of(laptop).set_state(ITEM, status="running", stage="Draft", agent="writer")
        stamp_outbox(laptop, ITEM, server() + timedelta(seconds=1))
        await Syncer(laptop, client=client).sync_once()
        assert shared.refused() == []
        assert refusal_lines(laptop.record_path) == []
        assert {c.check: c.ok for c in _record_checks(laptop)}["refused changes"] is True
        await Syncer(desktop, client=AsyncCloudClient(url, token, retries=0)).sync_once()
        [row] = SharedRecord(desktop.record_path).team()
        assert (row.item_id, row.fields["status"], row.computer) == (
            ITEM, "running", "maya-laptop")
    finally:
        await client.aclose()


async def test_the_server_refuses_a_change_ahead_then_takes_it_once_its_clock_caught_up(
        tmp_path: Path, clocked_server: ThreadServer) -> None:  # noqa: F811 - the fixture
    storage, clock = clocked_server.storage, clocked_server.clock
    storage.add_team("t")
    token = storage.add_person("maya@t.example", "t")
    laptop = make_computer(tmp_path, "maya-laptop", "maya@t.example",
                           url=clocked_server.url, token=token)
    add_item(laptop)
    stamp_outbox(laptop, ITEM, clock() + timedelta(seconds=400))
    syncer = Syncer(laptop, clock=clock)
    await syncer.sync_once()
    [refused] = SharedRecord(laptop.record_path).refused()
    assert (refused.code, refused.offset_seconds) == ("clock_ahead", 400.0)
    assert refusal_lines(laptop.record_path)[0].startswith(
        "the shared record refused 1 change: this computer's clock is 400 s ahead")
    clock.advance(200)  # the server's clock caught up: 200 s ahead is within the tolerance
    await syncer.sync_once()
    assert SharedRecord(laptop.record_path).refused() == []


def test_status_says_how_old_the_team_rows_are(tmp_path: Path) -> None:
    here = make_computer(tmp_path, "maya-laptop", "maya@example.com", url=closed_url(),
                         token="x")
    shared = SharedRecord(here.record_path)
    at = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
    assert stale_line(here.record_path, at) is None  # never synced, never tried
    shared.set_meta(last_sync=format_utc(at))
    assert stale_line(here.record_path, at + timedelta(seconds=30)) is None  # two rounds
    shared.set_meta(error="cannot reach Bees Cloud at http://127.0.0.1:9",
                    error_code="cloud_unreachable")
    assert stale_line(here.record_path, at + timedelta(seconds=31)) == (
        "team rows as of 31 s ago: Bees Cloud unreachable")
    assert status_warnings(here.record_path, at + timedelta(minutes=3)) == [
        "team rows as of 3 min ago: Bees Cloud unreachable"]
    shared.set_meta(error="not authorized", error_code="cloud_unauthorized")
    assert stale_line(here.record_path, at + timedelta(hours=5)) == (
        "team rows as of 5 h ago: not authorized")


async def test_a_failing_sync_loop_makes_status_say_the_rows_are_old(tmp_path: Path,
                                                                      team: Team) -> None:
    url, token = team.cloud.url, team.tokens[team.maya]
    clock = FixedClock(datetime.now(UTC))
    online = make_computer(tmp_path, "maya-laptop", team.maya, url=url, token=token)
    await Syncer(online, clock=clock).sync_once()
    offline = make_computer(tmp_path, "maya-laptop", team.maya, url=closed_url(), token="x")
    stop = asyncio.Event()
    task = asyncio.create_task(Syncer(offline, interval=0.01, clock=clock).run(stop))
    await wait.until(lambda: SharedRecord(offline.record_path).meta("error"),
                     "the sync never failed", every=0.02)
    stop.set()
    await asyncio.wait_for(task, 10)
    shown = status_now(Bees(offline), now=clock() + timedelta(minutes=3))
    assert shown.warning == "team rows as of 3 min ago: Bees Cloud unreachable"


async def test_continue_then_approve_at_once_wins_over_the_stale_team_row(
        tmp_path: Path, team: Team) -> None:
    url, token = team.cloud.url, team.tokens[team.maya]
    laptop = make_computer(tmp_path, "maya-laptop", team.maya, url=url, token=token)
    desktop = make_computer(tmp_path, "maya-desktop", team.maya, url=url, token=token)
    # the laptop ran the item and synced: the desktop's team row says it runs there
    add_item(laptop, status="waiting for approval")
    assert (await claim_owner(laptop, ITEM)).status == ClaimStatus.OWNER
    await Syncer(laptop).sync_once()
    await Syncer(desktop).sync_once()
    # the desktop continued it (the claim is its own now); its team row is a round behind
    async with AsyncCloudClient(url, token) as api:
        await api.release_owner(ITEM, wire.OwnerRelease(
            machine_id=laptop.machine_id, restart_stages={"main": "Draft"},
            checkpoint_sha256="0" * 64))
    assert (await claim_owner(desktop, ITEM)).status == ClaimStatus.OWNER
    add_item(desktop, status="waiting for approval")
    record_of(desktop).put_approval(ITEM, {"id": 1, "item_id": ITEM, "stage": "Draft",
                                           "round": 1, "action": "mail.send",
                                           "kind": "send", "summary": "send it",
                                           "status": "waiting",
                                           "asked_at": "2025-01-06T09:00:00Z"})
    FireLog(desktop.record_path).set_claim(ITEM, "owner", computer="maya-desktop",
                                           detail=None, tried=datetime.now(UTC))
    [row] = SharedRecord(desktop.record_path).team()
    assert row.computer == "maya-laptop"
    done = await Bees(desktop).decide(ITEM[:10], approve=True, request_id=None, reason=None)
    assert (done.item, done.queued) == (ITEM, True)
    # without the claim here, the team row still refuses (approve it there)
    FireLog(desktop.record_path).set_claim(ITEM, "taken", computer="maya-laptop",
                                           detail=None, tried=datetime.now(UTC))
    with pytest.raises(Refused) as refused:
        await Bees(desktop).decide(ITEM, approve=True, request_id=None, reason=None)
    assert refused.value.message == f"{ITEM} runs on maya-laptop ({team.maya}): approve it there"


async def test_a_team_item_resolves_by_prefix_and_shows_where_it_runs(
        tmp_path: Path, team: Team) -> None:
    url, token = team.cloud.url, team.tokens[team.maya]
    laptop = make_computer(tmp_path, "maya-laptop", team.maya, url=url, token=token)
    desktop = make_computer(tmp_path, "maya-desktop", team.maya, url=url, token=token)
    add_item(laptop, status="running")
    assert (await claim_owner(laptop, ITEM)).status == ClaimStatus.OWNER
    await Syncer(laptop).sync_once()
    await Syncer(desktop).sync_once()
    bees = Bees(desktop)
    shown = await bees.item_details(ITEM[:8].lower())
    assert isinstance(shown, TeamItemDetails)
    assert (shown.id, shown.title, shown.stage, shown.status_text, shown.computer,
            shown.person) == (ITEM, "Week 2", "Draft", "Draft, running on maya-laptop",
                              "maya-laptop", team.maya)
    for act in (bees.retry(ITEM[:8]), bees.cancel(ITEM[:8]),
                bees.decide(ITEM[:8], approve=True, request_id=None, reason=None)):
        with pytest.raises(OwnedElsewhere) as elsewhere:
            await act
        assert (elsewhere.value.message, elsewhere.value.exit_code) == (
            f"item {ITEM} is owned by maya-laptop ({team.maya}): it runs there, not on "
            "this computer", 3)
    with pytest.raises(Refused) as refused:
        await bees.relinquish(ITEM[:8])
    assert refused.value.message == (
        f"item {ITEM} is owned by maya-laptop ({team.maya}): only that computer can "
        "relinquish it")


async def test_a_free_team_item_no_computer_holds_still_shows(tmp_path: Path, team: Team) -> None:
    url, token = team.cloud.url, team.tokens[team.maya]
    laptop = make_computer(tmp_path, "maya-laptop", team.maya, url=url, token=token)
    desktop = make_computer(tmp_path, "maya-desktop", team.maya, url=url, token=token)
    add_item(laptop, status="free")  # relinquished on the laptop: no computer runs it
    await Syncer(laptop).sync_once()
    await Syncer(desktop).sync_once()
    shown = await Bees(desktop).item_details(ITEM[:8].lower())
    assert isinstance(shown, TeamItemDetails)
    assert (shown.id, shown.title, shown.stage, shown.status) == (ITEM, "Week 2", "Draft",
                                                                   "free")
    with pytest.raises(NotFound):
        await Bees(desktop).item_details("01ZZZZZZZZ")


async def test_a_change_for_an_item_owned_elsewhere_is_kept_unless_it_waits_for_that_owner(
        tmp_path: Path, team: Team) -> None:
    url, token = team.cloud.url, team.tokens[team.maya]
    laptop = make_computer(tmp_path, "maya-laptop", team.maya, url=url, token=token)
    desktop = make_computer(tmp_path, "maya-desktop", team.maya, url=url, token=token)
    add_item(laptop, status="running")
    assert (await claim_owner(laptop, ITEM)).status == ClaimStatus.OWNER
    add_item(desktop)  # a copy of the row: Bees Cloud refuses the desktop's change
    await Syncer(desktop).sync_once()
    [kept] = SharedRecord(desktop.record_path).refused()
    if hasattr(wire, "RefusedChange"):  # the server refuses each change, naming the owner
        assert (kept.item_id, kept.code, kept.owner) == (ITEM, "not_owner", "maya-laptop")
        reason = "owned by maya-laptop"
    else:  # this base's server refuses the whole push (409 not_owner)
        assert (kept.item_id, kept.code) == (ITEM, "refused")
        assert kept.message.startswith(f"item {ITEM} is owned by maya-laptop (machine ")
        reason = kept.message
    assert refusal_lines(desktop.record_path) == [
        f"the shared record refused 1 change: {reason} ({ITEM}; kept until they can be sent)"]
    # once the desktop knows the laptop owns it, the refused change is the team row's
    record_of(desktop).set_state(ITEM, status="waiting", stage="Draft",
                                 reason="owned by maya-laptop", wait="owned_elsewhere")
    await Syncer(desktop).sync_once()
    assert SharedRecord(desktop.record_path).refused() == []
    assert SharedRecord(desktop.record_path).outbox(desktop) == []


def test_doctor_shows_the_last_measured_offset_and_the_refusals_when_the_cloud_is_down(
        tmp_path: Path) -> None:
    from bees_cli.usecases.doctor import _cloud_checks

    offline = make_computer(tmp_path, "maya-laptop", "maya@example.com", url=closed_url(),
                            token="x")
    add_item(offline)
    shared = SharedRecord(offline.record_path)
    shared.set_meta(skew="-412.000")
    shared.refuse([Refusal(item_id=ITEM, origin="2025-01-06T09:06:52.000000Z",
                           code="clock_ahead", message="412 s ahead", offset_seconds=412.0,
                           at="2025-01-06T09:06:52.000000Z")])
    checks = {c.check: (c.ok, c.detail) for c in _cloud_checks(offline)}
    assert checks["clock"] == (False, (
        "-412.0 s against Bees Cloud, measured at the last sync (this clock is 412 s ahead; "
        "over 5 s the shared record trusts a wrong clock: fix it)"))
    assert checks["refused changes"] == (False, (
        "the shared record refused 1 change: this computer's clock is 412 s ahead "
        f"({ITEM}; kept until they can be sent)"))
    assert checks["cloud"][0] is False


async def test_a_decision_on_an_item_a_runner_runs_names_the_runner(
        tmp_path: Path, team: Team) -> None:
    """docs/runners.md, section 7: on a person's computer, ``bees approve`` of an item a
    runner holds is refused naming the runner (its name in Bees Cloud), not the host name
    every container shares nor the pool's identity."""
    url, token = team.cloud.url, team.tokens[team.maya]
    runner_token = team.cloud.storage.add_runner("runner-1", "build", team.name)
    desktop = make_computer(tmp_path, "maya-desktop", team.maya, url=url, token=token)
    async with AsyncCloudClient(url, token) as maya:
        assert (await maya.claim_owner(wire.OwnerClaim(
            item_id=ITEM, machine_id=desktop.machine_id, computer_name="maya-desktop"))).granted
        await maya.release_owner(ITEM, wire.OwnerRelease(
            machine_id=desktop.machine_id, restart_stages={"main": "Draft"},
            checkpoint_sha256="0" * 64))
        await maya.make_offer(ITEM, wire.OfferMake(machine_id=desktop.machine_id, pool="build"))
    async with AsyncCloudClient(url, runner_token) as runner:
        await runner.runner_heard("runner-1-box")
        assert (await runner.claim_owner(wire.OwnerClaim(
            item_id=ITEM, machine_id="runner-1-box", computer_name="vm"))).granted
    add_item(desktop, status="waiting for approval")
    with pytest.raises(Refused) as refused:
        await Bees(desktop).decide(ITEM, approve=True, request_id=None, reason=None)
    assert refused.value.message == f"{ITEM} runs on runner-1: approve it there"
    assert refused.value.hint == (f"runner-1 is a runner of pool build: bees approve {ITEM} "
                                  "on it (ssh, docker exec)")
