"""Owner claims on the event loop (PostgreSQL) answer as the thread path does, or defer to it."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bees_cli.cloud import wire
from bees_cli.cloud.server.storage import Storage


@pytest.fixture
async def storage(postgres_url: str) -> AsyncIterator[Storage]:
    storage = Storage(postgres_url)
    yield storage
    assert storage.async_claims is not None
    await storage.async_claims.close()
    storage.close()


def _claim(item: str, machine: str) -> wire.OwnerClaim:
    return wire.OwnerClaim(item_id=item, machine_id=machine, computer_name=f"{machine} box")


@pytest.mark.postgres
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


def test_sqlite_claims_stay_on_the_thread_path(tmp_path: Path) -> None:
    storage = Storage(f"sqlite:///{tmp_path / 't.db'}")
    assert storage.async_claims is None
    storage.close()
