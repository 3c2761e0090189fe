"""Handing work to a pool (issue 27, point 2) over real HTTP on SQLite and PostgreSQL: an
offer of a released item, seen by the pool's runners only; a runner may claim only what is
offered to its pool; exactly one claim wins; a runner that leaves an offer says why, and
the team sees it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from bees_cli.cloud import wire
from bees_cli.cloud.client import CloudClient
from bees_cli.cloud.server.storage import Storage
from bees_cli.cloud.server.tables import offers
from bees_cli.errors import CloudError, CloudRefused

from ..cloud.conftest import ServerProcess, Team
from ..support import wait

SHA = "a" * 64


def _released(team: Team, item: str, machine: str = "maya-laptop") -> None:
    with team.client("maya") as maya:
        assert maya.claim_owner(wire.OwnerClaim(item_id=item, machine_id=machine,
                                                computer_name=machine)).granted
        maya.release_owner(item, wire.OwnerRelease(machine_id=machine, checkpoint_sha256=SHA,
                                                   restart_stages={"main": "Draft"}))


def _claim(client: CloudClient, item: str, machine: str) -> wire.OwnerAnswer:
    return client.claim_owner(wire.OwnerClaim(item_id=item, machine_id=machine,
                                              computer_name=machine))


def test_a_runner_claims_only_what_a_person_offered_its_pool(
    team: Team, admin: Storage, server: ServerProcess
) -> None:
    r1 = CloudClient(server.url, admin.add_runner("r1", "build", team.name), retries=0)
    r2 = CloudClient(server.url, admin.add_runner("r2", "build", team.name), retries=0)
    other = CloudClient(server.url, admin.add_runner("o1", "other", team.name), retries=0)
    _released(team, "ITEM-1")
    with pytest.raises(CloudRefused) as refused:  # released, but offered to no pool
        _claim(r1, "ITEM-1", "r1-box")
    assert refused.value.code == "not_offered"
    assert refused.value.message == (
        "item ITEM-1 is not offered to pool build: a runner takes only work a person handed "
        "to its pool")
    with team.client("sam") as sam, pytest.raises(CloudRefused) as not_yours:
        sam.make_offer("ITEM-1", wire.OfferMake(machine_id="sam-box", pool="build"))
    assert not_yours.value.code == "not_owner"
    with team.client("maya") as maya:
        made = maya.make_offer("ITEM-1", wire.OfferMake(
            machine_id="maya-laptop", pool="build", secrets=["OPENAI_API_KEY", "GMAIL_TOKEN"]))
        again = maya.make_offer("ITEM-1", wire.OfferMake(machine_id="maya-laptop", pool="x"))
    assert (made.item_id, made.epoch, made.pool, made.secrets, made.open) == (
        "ITEM-1", 1, "build", ["GMAIL_TOKEN", "OPENAI_API_KEY"], True)
    assert made.offered_by == f"maya@{team.name}.example"
    assert again == made  # a retried offer answers the stored one
    assert [o.item_id for o in r1.offers()] == ["ITEM-1"]
    assert other.offers() == [] and other.offers("build") == []  # its own pool only
    with pytest.raises(CloudRefused) as elsewhere:
        _claim(other, "ITEM-1", "o1-box")
    assert elsewhere.value.code == "not_offered"
    left = r2.leave_offer("ITEM-1", wire.OfferLeave(
        machine_id="r2-box", reason="folder reports not linked"))
    assert [(n.runner, n.machine_id, n.reason) for n in left.notes] == [
        ("r2", "r2-box", "folder reports not linked")]
    won = _claim(r1, "ITEM-1", "r1-box")
    assert (won.granted, won.owner.epoch, won.owner.person) == (
        True, 2, "pool-build@runners.invalid")
    lost = _claim(r2, "ITEM-1", "r2-box")
    assert (lost.status, lost.owner.machine_id) == ("taken", "r1-box")
    assert _claim(r1, "ITEM-1", "r1-box").granted  # a repeated claim: the same grant
    assert r1.offers() == []
    with team.client("maya") as maya:
        [seen] = maya.offers(only_open=False)
    assert (seen.open, seen.claimed_by, [n.reason for n in seen.notes]) == (
        False, "r1", ["folder reports not linked"])
    with pytest.raises(CloudError) as no_offer:
        r2.leave_offer("ITEM-1", wire.OfferLeave(machine_id="r2-box", reason="late"))
    assert (no_offer.value.status, no_offer.value.message) == (
        404, "Bees Cloud answered 404: item ITEM-1 has no open offer to pool build")
    for client in (r1, r2, other):
        client.close()


def test_a_person_who_takes_an_offered_item_back_closes_the_offer(
    team: Team, admin: Storage, server: ServerProcess
) -> None:
    runner = CloudClient(server.url, admin.add_runner("r9", "build", team.name), retries=0)
    _released(team, "ITEM-2")
    with team.client("maya") as maya:
        maya.make_offer("ITEM-2", wire.OfferMake(machine_id="maya-laptop", pool="build"))
        assert _claim(maya, "ITEM-2", "maya-desktop").granted
    assert runner.offers() == []
    late = _claim(runner, "ITEM-2", "r9-box")  # it was offered: taken, by the person
    assert (late.status, late.owner.machine_id) == ("taken", "maya-desktop")
    runner.close()


RACER = r"""
import json, pathlib, random, sys, time
from bees_cli.cloud import wire
from bees_cli.cloud.client import CloudClient
url, token, name, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
gate = pathlib.Path(sys.argv[5])
won, seen = [], set()
with CloudClient(url, token, retries=5, backoff=0.05) as client:
    (gate / f"ready-{name}").touch()  # imported and connected: wait for the others
    while not (gate / "go").exists():
        time.sleep(0.005)
    while len(seen) < count:
        open_now = [o.item_id for o in client.offers()]
        if not open_now and len(seen) < count:
            seen.update(f"RACE-{i:03d}" for i in range(count))  # all taken by others
            break
        random.shuffle(open_now)
        for item in open_now:
            seen.add(item)
            answer = client.claim_owner(wire.OwnerClaim(item_id=item, machine_id=name,
                                                        computer_name=name))
            if answer.granted:
                won.append(item)
print(json.dumps(won))
"""


@pytest.mark.slow
def test_eight_runner_processes_race_for_each_of_100_offers_and_one_wins_each(
    team: Team, admin: Storage, server: ServerProcess, tmp_path: Path
) -> None:
    count, racers = 100, 8
    for i in range(count):
        _released(team, f"RACE-{i:03d}")
    with team.client("maya") as maya:
        for i in range(count):
            maya.make_offer(f"RACE-{i:03d}", wire.OfferMake(machine_id="maya-laptop",
                                                            pool="race"))
    tokens = [admin.add_runner(f"racer-{n}", "race", team.name) for n in range(racers)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("BEES_")}
    procs = [subprocess.Popen([sys.executable, "-c", RACER, server.url, token,
                               f"racer-{n}", str(count), str(tmp_path)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for n, token in enumerate(tokens)]
    # all start together: a racer up first would otherwise take every offer before the
    # others have imported (claims are fast), and there would be no race to test
    wait.until_sync(lambda: len(list(tmp_path.glob("ready-*"))) == racers
                    or any(p.poll() is not None for p in procs),
                    "the racers never got ready", cap=120)
    (tmp_path / "go").touch()
    wins: dict[str, list[str]] = {}
    for n, proc in enumerate(procs):
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        for item in json.loads(out):
            wins.setdefault(item, []).append(f"racer-{n}")
    doubles = {item: who for item, who in wins.items() if len(who) > 1}
    unclaimed = {f"RACE-{i:03d}" for i in range(count)} - set(wins)
    assert (doubles, unclaimed) == ({}, set())
    with admin.engine.connect() as conn:
        rows = conn.execute(sa.select(offers.c.item_id, offers.c.claimed_by).where(
            offers.c.pool == "race")).all()
    assert {item: by for item, by in rows} == {item: who[0] for item, who in wins.items()}
    assert len({who[0] for who in wins.values()}) > 1  # a race, not one runner alone
