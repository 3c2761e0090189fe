"""Owner claims answered from the event loop (PostgreSQL: async psycopg connections; SQLite: one
writer thread, claims in groups) answer as the thread path does, or defer to it."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bees_cli.cloud import wire
from bees_cli.cloud.server.storage import Storage


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
async def storage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Storage]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'loop.db'}"
    else:
        url = str(request.getfixturevalue("postgres_url"))
    storage = Storage(url)
    yield storage
    assert storage.async_claims is not None
    await storage.async_claims.close()
    storage.close()


def _claim(item: str, machine: str) -> wire.OwnerClaim:
    return wire.OwnerClaim(item_id=item, machine_id=machine, computer_name=f"{machine} box")


async def test_a_claim_on_the_loop_answers_as_the_thread_path(storage: Storage) -> None:
    loop = storage.async_claims
    assert loop is not None
    team = f"loop-{secrets.token_hex(4)}"
    storage.add_team(team)
    maya = storage.add_person("maya@example.com", team)
    sam = storage.add_person("sam@example.com", team)
    # Neither the token nor the machine is known in the process yet: the thread path.
    assert await loop.claim(maya, _claim("a", "laptop")) is None
    first = storage.claim_owner(maya, _claim("a", "laptop"))
    assert (first.status, first.owner.epoch, first.owner.person) == ("owner", 1, "maya@example.com")
    # The first claim bound the machine; a binding is kept once read committed (its next use).
    assert await loop.claim(maya, _claim("b", "laptop")) is None
    assert storage.claim_owner(maya, _claim("a", "laptop")) == first
    # Now both are kept: a new item is claimed on the loop, a retry gets the same row.
    won = await loop.claim(maya, _claim("b", "laptop"))
    assert won is not None
    assert (won.status, won.owner.item_id, won.owner.epoch) == ("owner", "b", 1)
    assert (won.owner.machine_id, won.owner.computer_name) == ("laptop", "laptop box")
    assert won.owner.person == "maya@example.com"
    assert await loop.claim(maya, _claim("b", "laptop")) == won
    assert storage.claim_owner(maya, _claim("b", "laptop")) == won
    # A machine not bound yet, and another person's token, go to the thread path.
    assert await loop.claim(maya, _claim("b", "desk")) is None
    assert await loop.claim(sam, _claim("b", "phone")) is None
    taken = storage.claim_owner(sam, _claim("b", "phone"))
    assert (taken.status, taken.owner) == ("taken", won.owner)
    assert await loop.claim(sam, _claim("b", "phone")) is None
    assert storage.claim_owner(sam, _claim("b", "phone")) == taken
    # Sam and his phone are kept now: his claim of the held item is taken on the loop too.
    assert await loop.claim(sam, _claim("b", "phone")) == taken
    # Released, the item's next claim is epoch 2, on the loop.
    release = wire.OwnerRelease(
        machine_id="laptop", epoch=1, restart_stages={}, checkpoint_sha256="0" * 64
    )
    storage.release_owner(maya, "b", release)
    again = await loop.claim(sam, _claim("b", "phone"))
    assert again is not None
    assert (again.status, again.owner.epoch, again.owner.machine_id) == ("owner", 2, "phone")
    assert [o.epoch for o in storage.owner_history(maya, "b")] == [1, 2]


async def test_claims_on_the_loop_race_to_one_owner_and_share_commits(storage: Storage) -> None:
    loop = storage.async_claims
    assert loop is not None
    team = f"race-{secrets.token_hex(4)}"
    storage.add_team(team)
    tokens = [storage.add_person(f"p{n}@example.com", team) for n in range(8)]
    for n, token in enumerate(tokens):  # each token and machine kept: the loop takes them
        storage.claim_owner(token, _claim(f"warm-{n}", f"m{n}"))
        storage.claim_owner(token, _claim(f"warm-{n}", f"m{n}"))
    groups = storage.db._groups
    commits = groups.commits if groups is not None else 0
    # Eight machines claim one item at once, then each claims an item of its own at once.
    same = await asyncio.gather(
        *(loop.claim(token, _claim("shared", f"m{n}")) for n, token in enumerate(tokens))
    )
    own = await asyncio.gather(
        *(loop.claim(token, _claim(f"own-{n}", f"m{n}")) for n, token in enumerate(tokens))
    )
    assert None not in same + own
    winners = [a for a in same if a is not None and a.status == "owner"]
    assert len(winners) == 1
    holder = winners[0].owner
    assert {a.owner for a in same if a is not None} == {holder}
    assert [o.epoch for o in storage.owner_history(tokens[0], "shared")] == [1]
    assert [(a.status, a.owner.item_id, a.owner.epoch) for a in own if a is not None] == [
        ("owner", f"own-{n}", 1) for n in range(8)
    ]
    # A retry by the winner gets the same grant.
    winner = tokens[int(holder.machine_id[1:])]
    assert await loop.claim(winner, _claim("shared", holder.machine_id)) == winners[0]
    if groups is not None:  # SQLite: claims that arrive together share one commit
        assert groups.commits - commits == 3  # the eight, the eight, the retry


async def test_a_runner_claim_takes_the_thread_path(storage: Storage) -> None:
    loop = storage.async_claims
    assert loop is not None
    team = f"runners-{secrets.token_hex(4)}"
    storage.add_team(team)
    runner = storage.add_runner("r1", "docs", team)
    storage.people.authenticate_or_refuse(runner)  # the runner's token is kept
    assert await loop.claim(runner, _claim("a", "r1-box")) is None


@pytest.mark.postgres
async def test_a_broken_connection_fails_one_claim_and_is_replaced(postgres_url: str) -> None:
    import psycopg
    import sqlalchemy.exc

    storage = Storage(postgres_url)
    loop = storage.async_claims
    assert loop is not None
    try:
        team = f"broken-{secrets.token_hex(4)}"
        storage.add_team(team)
        maya = storage.add_person("maya@example.com", team)
        storage.claim_owner(maya, _claim("a", "laptop"))
        storage.claim_owner(maya, _claim("a", "laptop"))  # token and machine kept
        first = await loop.claim(maya, _claim("b", "laptop"))
        assert first is not None and first.status == "owner"
        dsn = postgres_url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(dsn, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE application_name = 'bees-claims'"
            ).fetchone()
        assert killed is not None and killed[0] >= 1
        with pytest.raises(sqlalchemy.exc.OperationalError):
            await loop.claim(maya, _claim("c", "laptop"))
        again = await loop.claim(maya, _claim("c", "laptop"))
        assert again is not None
        assert (again.status, again.owner.item_id, again.owner.epoch) == ("owner", "c", 1)
    finally:
        await loop.close()
        storage.close()
