"""Runners vouch; a person retires (issue 27, point 4).

Each runner's sync carries a heartbeat: Bees Cloud keeps when it last heard each runner and
from which machine id; ``bees runners`` (and ``--json``) and ``bees status`` show each
runner, its pool, what it runs and when it was last heard, counted on Bees Cloud's clock
(injected here): ``runner-1: pool build, runs nothing, silent for 12 min``. Nothing moves on
its own. ``bees cloud admin runner retire NAME`` fences the runner first (its token and
machine id refused: ``runner_retired``, ``machine_retired``), then offers its items back to
its pool at the checkpoint they were handed over with.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from bees_cli.cloud import wire
from bees_cli.cloud.client import CloudClient
from bees_cli.cloud.login import Login, save_login
from bees_cli.errors import CloudRefused, CloudUnauthorized
from bees_cli.handover.takeover import Takeover, retired_release
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import set_identity
from bees_cli.record.sync import Syncer
from bees_cli.usecases.runner_words import kept_runner_lines, runner_line
from bees_cli.utc import parse_utc

from ..cloud.conftest import ServerProcess, Team, ThreadServer, clocked_server  # noqa: F401
from ..conftest import BeesRunner

REPO = Path(__file__).resolve().parents[2]
SHA = "ab" * 32

pytestmark = pytest.mark.integration


def _computer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, *, url: str,
              token: str, person: str | None) -> Computer:
    """One computer (its own BEES_HOME) signed in with ``token``; loaded, then left."""
    home = tmp_path / name
    home.mkdir()
    with monkeypatch.context() as patch:
        patch.setenv("BEES_HOME", str(home))
        set_identity(person=person, computer=name)
        save_login(Login(url, token))
        return Computer.load()


def test_each_sync_vouches_and_runners_show_when_each_was_last_heard(
        clocked_server: ThreadServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        bees: BeesRunner, bees_home: Path) -> None:
    storage, clock, url = clocked_server.storage, clocked_server.clock, clocked_server.url
    assert storage.add_team("acme") is True
    maya_token = storage.add_person("maya@acme.example", "acme")
    one = _computer(monkeypatch, tmp_path, "runner-1", url=url, person=None,
                    token=storage.add_runner("runner-1", "build", "acme"))
    two = _computer(monkeypatch, tmp_path, "runner-2", url=url, person=None,
                    token=storage.add_runner("runner-2", "build", "acme"))
    storage.add_runner("runner-3", "build", "acme")  # never started

    async def sync(computer: Computer) -> None:
        await Syncer(computer).sync_once()

    import asyncio
    asyncio.run(sync(one))
    clock.advance(12 * 60)
    asyncio.run(sync(two))
    clock.advance(5)
    with CloudClient(url, maya_token, retries=0) as maya:
        found = maya.runners()
    assert [(r.name, r.machine_id, r.heard_at) for r in found.runners] == [
        ("runner-1", one.machine_id, parse_utc("2025-01-06T08:59:30Z")),
        ("runner-2", two.machine_id, parse_utc("2025-01-06T09:11:30Z")),
        ("runner-3", None, None)]
    assert [runner_line(r.name, r.pool, heard=r.heard_at, retired=r.retired_at,
                        running=r.running, now=found.server_time)
            for r in found.runners] == [
        "runner-1: pool build, runs nothing, silent for 12 min",
        "runner-2: pool build, runs nothing, heard 5 s ago",
        "runner-3: pool build, runs nothing, never heard"]
    # the threshold: three syncs missed (45 s) is still heard, a second more is silent
    heard = parse_utc("2025-01-06T09:00:00Z")
    assert runner_line("r", "p", heard=heard, retired=None, running=["X"],
                       now=parse_utc("2025-01-06T09:00:45Z")) == "r: pool p, runs X, heard 45 s ago"
    assert runner_line("r", "p", heard=heard, retired=None, running=[],
                       now=parse_utc("2025-01-06T09:00:46Z")) == (
        "r: pool p, runs nothing, silent for 46 s")

    # bees runners, text and --json, on Bees Cloud's clock
    set_identity(person="maya@acme.example", computer="maya-laptop")
    save_login(Login(url, maya_token))
    shown = bees("runners")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        "runner-1: pool build, runs nothing, silent for 12 min",
        "runner-2: pool build, runs nothing, heard 5 s ago",
        "runner-3: pool build, runs nothing, never heard"]
    listed = json.loads(bees("runners", "--json").stdout)
    jsonschema.validate(listed, json.loads(
        (REPO / "schemas" / "output" / "runners.json").read_text()))
    assert [(r["name"], r["silent"], r["heard_at"]) for r in listed["runners"]] == [
        ("runner-1", True, "2025-01-06T08:59:30Z"), ("runner-2", False, "2025-01-06T09:11:30Z"),
        ("runner-3", True, None)]

    # bees status shows them as Maya's last sync heard them
    asyncio.run(sync(Computer.load()))
    assert kept_runner_lines(bees_home / "data" / "record.db") == [
        "runner-1: pool build, runs nothing, silent for 12 min",
        "runner-2: pool build, runs nothing, heard 5 s ago",
        "runner-3: pool build, runs nothing, never heard"]
    status = bees("status")
    assert "runner runner-1: pool build, runs nothing, silent for 12 min" in (
        status.stdout.splitlines()), status.stdout + status.stderr
    # nothing moved on its own
    assert storage.list_runners(maya_token).runners[0].retired_at is None


def test_retire_fences_the_runner_first_then_offers_its_items_back(
        server: ServerProcess, admin: object, team: Team, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, bees: BeesRunner) -> None:
    from bees_cli.cloud.server.storage import Storage

    assert isinstance(admin, Storage)
    one_token = admin.add_runner("runner-1", "build", team.name)
    two_token = admin.add_runner("runner-2", "build", team.name)
    one = _computer(monkeypatch, tmp_path, "runner-1", url=server.url, person=None,
                    token=one_token)
    item = "01JH3QX5Z8AAAAAAAAAAAAAAAA"
    with team.client() as maya, CloudClient(server.url, one_token, retries=0) as r1, \
            CloudClient(server.url, two_token, retries=0) as r2:
        # Maya hands her item to the pool; runner-1 vouches and claims it
        maya.claim_owner(wire.OwnerClaim(item_id=item, machine_id="maya-m",
                                         computer_name="maya-laptop"))
        maya.release_owner(item, wire.OwnerRelease(
            machine_id="maya-m", restart_stages={"main": "Draft"}, checkpoint_sha256=SHA))
        maya.make_offer(item, wire.OfferMake(machine_id="maya-m", pool="build",
                                             secrets=["MAIL_TOKEN"]))
        import asyncio
        asyncio.run(Syncer(one).sync_once())
        won = r1.claim_owner(wire.OwnerClaim(item_id=item, machine_id=one.machine_id,
                                             computer_name="runner-1"))
        assert (won.granted, won.owner.epoch) == (True, 2)
        assert [(r.name, r.running) for r in maya.runners().runners] == [
            ("runner-1", [item]), ("runner-2", [])]

        retired = bees("cloud", "admin", "runner", "retire", "runner-1", "--team", team.name,
                       "--server", server.url, "--admin-token-file",
                       str(server.admin_token_file), "--json")
        assert retired.returncode == 0, retired.stderr
        done = json.loads(retired.stdout)
        jsonschema.validate(done, json.loads(
            (REPO / "schemas" / "output" / "cloud-admin-runner-retire.json").read_text()))
        assert (done["name"], done["pool"], done["revoked"], done["machine_id"],
                done["offered"], done["not_offered"]) == (
            "runner-1", "build", 1, one.machine_id, [item], [])

        # fenced: its later sync and claim are refused, with a clear code
        with pytest.raises(CloudUnauthorized) as later:
            asyncio.run(Syncer(one).sync_once())
        assert later.value.code == "runner_retired"
        assert later.value.message == ("runner runner-1 was retired: Bees Cloud refuses what "
                                       "it sends")
        with pytest.raises(CloudUnauthorized) as claim:
            r1.claim_owner(wire.OwnerClaim(item_id=item, machine_id=one.machine_id,
                                           computer_name="runner-1"))
        assert claim.value.code == "runner_retired"
        # its machine id too: another runner's token cannot act as it
        with pytest.raises(CloudRefused) as machine:
            r2.claim_owner(wire.OwnerClaim(item_id=item, machine_id=one.machine_id,
                                           computer_name="runner-1"))
        assert machine.value.code == "machine_retired"

        # offered back at the checkpoint it was handed over with; runner-2 takes it
        [offer] = maya.offers()
        assert (offer.item_id, offer.epoch, offer.pool, offer.secrets, offer.open) == (
            item, 2, "build", ["MAIL_TOKEN"], True)
        released = maya.get_owner(item)
        assert released is not None and released.release is not None
        assert (released.epoch, released.release.checkpoint_sha256,
                released.release.restart_stages) == (2, SHA, {"main": "Draft"})
        # the next runner knows the release was the retire's (handover/takeover.py), and
        # that Maya's release before it was not
        assert retired_release(released, maya.runners().runners) == Takeover(
            "runner-1", released.release.released_at)
        [mayas] = [o for o in maya.owner_history(item) if o.epoch == 1]
        assert retired_release(mayas, maya.runners().runners) is None
        r2.runner_heard("runner-2-m")  # its sync vouches before it claims
        taken = r2.claim_owner(wire.OwnerClaim(item_id=item, machine_id="runner-2-m",
                                               computer_name="runner-2"))
        assert (taken.granted, taken.owner.epoch) == (True, 3)
        assert [(r.name, r.retired_at is not None, r.running)
                for r in maya.runners().runners] == [("runner-1", True, []),
                                                     ("runner-2", False, [item])]
        again = bees("cloud", "admin", "runner", "retire", "runner-1", "--team", team.name,
                     "--server", server.url, "--admin-token-file",
                     str(server.admin_token_file))
        assert again.returncode == 0, again.stderr
        assert again.stderr == "runner runner-1 of pool build was retired already\n"


def test_retire_offers_back_only_the_items_that_have_not_ended(
        server: ServerProcess, admin: object, team: Team, tmp_path: Path) -> None:
    """A runner's done item is never offered again: not by its retire, not by a relinquish
    ``--to``, and no runner may claim it from an offer made before this rule (issue 27,
    retire: only what is not ended goes back to the pool)."""
    from datetime import UTC, datetime

    from bees_cli.cloud.server.storage import Storage

    assert isinstance(admin, Storage)
    one_token = admin.add_runner("runner-1", "build", team.name)
    two_token = admin.add_runner("runner-2", "build", team.name)
    done_item, open_item = "01JH3QX5Z8AAAAAAAAAAAAAAAA", "01JH3QX5Z8BBBBBBBBBBBBBBBB"
    with team.client() as maya, CloudClient(server.url, one_token, retries=0) as r1, \
            CloudClient(server.url, two_token, retries=0) as r2:
        r1.runner_heard("runner-1-m")
        for item in (done_item, open_item):
            maya.claim_owner(wire.OwnerClaim(item_id=item, machine_id="maya-m",
                                             computer_name="maya-laptop"))
            maya.release_owner(item, wire.OwnerRelease(
                machine_id="maya-m", restart_stages={"main": "Draft"},
                checkpoint_sha256=SHA))
            maya.make_offer(item, wire.OfferMake(machine_id="maya-m", pool="build"))
            assert r1.claim_owner(wire.OwnerClaim(
                item_id=item, machine_id="runner-1-m", computer_name="runner-1")).granted
        # runner-1 finished one item (its sync said so) and is still drafting the other
        now = datetime.now(UTC)
        pushed = r1.push([
            wire.RecordChange(item_id=done_item, machine_id="runner-1-m", origin_time=now,
                              fields={"stage": "Done", "status": "done"}),
            wire.RecordChange(item_id=open_item, machine_id="runner-1-m", origin_time=now,
                              fields={"stage": "Draft", "status": "running"})])
        assert pushed.refused == []

        done = admin.retire_runner("runner-1", team.name)
        assert (done.offered, done.not_offered) == ([open_item], [])
        assert done.ended == [done_item]
        assert [(o.item_id, o.open) for o in maya.offers()] == [(open_item, True)]
        held = maya.get_owner(done_item)
        assert held is not None and (held.epoch, held.release) == (2, None)

        # an ended item is never offered by a relinquish --to either ...
        r2.runner_heard("runner-2-m")
        assert r2.claim_owner(wire.OwnerClaim(item_id=open_item, machine_id="runner-2-m",
                                              computer_name="runner-2")).granted
        r2.push([wire.RecordChange(item_id=open_item, machine_id="runner-2-m",
                                   origin_time=datetime.now(UTC),
                                   fields={"stage": "Done", "status": "done"})])
        r2.release_owner(open_item, wire.OwnerRelease(
            machine_id="runner-2-m", restart_stages={"main": "Done"}, checkpoint_sha256=SHA))
        with pytest.raises(CloudRefused) as offered:
            r2.make_offer(open_item, wire.OfferMake(machine_id="runner-2-m", pool="build"))
        assert (offered.value.code, offered.value.message) == (
            "item_ended", f"item {open_item} is done: an ended item is never offered")

        # ... and an open offer whose item ended meanwhile is neither listed nor claimed
        late = "01JH3QX5Z8CCCCCCCCCCCCCCCC"
        maya.claim_owner(wire.OwnerClaim(item_id=late, machine_id="maya-m",
                                         computer_name="maya-laptop"))
        maya.release_owner(late, wire.OwnerRelease(
            machine_id="maya-m", restart_stages={"main": "Draft"}, checkpoint_sha256=SHA))
        maya.make_offer(late, wire.OfferMake(machine_id="maya-m", pool="build"))
        assert maya.push([wire.RecordChange(
            item_id=late, machine_id="maya-m", origin_time=datetime.now(UTC),
            fields={"stage": "Done", "status": "cancelled"})]).refused == []
        assert [o.item_id for o in r2.offers()] == []
        with pytest.raises(CloudRefused) as claimed:
            r2.claim_owner(wire.OwnerClaim(item_id=late, machine_id="runner-2-m",
                                           computer_name="runner-2"))
        assert (claimed.value.code, claimed.value.message) == (
            "item_ended", f"item {late} is cancelled: an ended item is never offered")
