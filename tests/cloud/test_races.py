"""Races over real HTTP: 64 concurrent clients, one schedule key and one owner, one winner."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from bees_cli.cloud import wire
from bees_cli.cloud.client import AsyncCloudClient
from bees_cli.cloud.server.storage import Storage

from .conftest import ServerProcess, Team, make_team

CLIENTS = 64
ROUNDS = int(os.environ.get("BEES_TEST_RACE_ROUNDS", "50"))
"""Rounds of 64 concurrent claims per race (BEES_TEST_RACE_ROUNDS=200 for a deeper run)."""
START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


def _clients(team: Team, urls: Sequence[str]) -> list[AsyncCloudClient]:
    """One client (own connection) per racing machine, spread over ``urls``."""
    return [
        AsyncCloudClient(
            urls[i % len(urls)],
            team.tokens["maya"],
            backoff=0.01,
            limits=httpx.Limits(max_connections=2, max_keepalive_connections=2),
        )
        for i in range(CLIENTS)
    ]


async def _race(clients: list[AsyncCloudClient], rounds: int, tag: str) -> None:
    """Every round: all clients claim the same key and the same item at once.

    Asserts exactly one ``granted`` key and one ``owner``, every other answer
    naming the winner, and that each winner repeating its claim is answered the same.
    """
    for n in range(rounds):
        when = START + timedelta(days=7 * n)
        item = f"{tag}-item-{n}"
        key_calls = [
            c.claim_key(
                wire.KeyClaim(
                    schedule_id="weekly-report",
                    scheduled_time=when,
                    machine_id=f"machine-{i}",
                    computer_name=f"computer {i}",
                )
            )
            for i, c in enumerate(clients)
        ]
        owner_calls = [
            c.claim_owner(
                wire.OwnerClaim(
                    item_id=item, machine_id=f"machine-{i}", computer_name=f"computer {i}"
                )
            )
            for i, c in enumerate(clients)
        ]
        answers = await asyncio.gather(*key_calls, *owner_calls)
        keys = answers[:CLIENTS]
        owners = answers[CLIENTS:]
        key_winners = [i for i, a in enumerate(keys) if a.granted]
        owner_winners = [i for i, a in enumerate(owners) if a.granted]
        assert len(key_winners) == 1, f"round {n}: key winners {key_winners}"
        assert len(owner_winners) == 1, f"round {n}: owner winners {owner_winners}"
        k, o = key_winners[0], owner_winners[0]
        assert {a.machine_id for a in keys} == {f"machine-{k}"}
        assert {a.granted_at for a in keys} == {keys[k].granted_at}
        assert {a.owner.machine_id for a in owners} == {f"machine-{o}"}
        assert {(a.owner.epoch, a.owner.since) for a in owners} == {(1, owners[o].owner.since)}
        # The winners ask again (a retry after a lost answer): the same grant.
        again_key = await clients[k].claim_key(
            wire.KeyClaim(
                schedule_id="weekly-report",
                scheduled_time=when,
                machine_id=f"machine-{k}",
                computer_name=f"computer {k}",
            )
        )
        again_owner = await clients[o].claim_owner(
            wire.OwnerClaim(item_id=item, machine_id=f"machine-{o}", computer_name=f"computer {o}")
        )
        assert again_key == keys[k]
        assert again_owner == owners[o]


async def _close(clients: list[AsyncCloudClient]) -> None:
    await asyncio.gather(*(c.aclose() for c in clients))


@pytest.mark.slow
async def test_one_winner_per_key_and_owner_200_rounds(team: Team) -> None:
    clients = _clients(team, [team.url])
    try:
        await _race(clients, ROUNDS, "one")
    finally:
        await _close(clients)


@pytest.mark.slow
@pytest.mark.parametrize(
    "database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
async def test_one_winner_with_two_server_processes_on_one_database(
    database: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    server_factory: Callable[[str], ServerProcess],
) -> None:
    if database == "sqlite":  # two processes' group commits queue on SQLite's file lock
        url = f"sqlite:///{tmp_path / 'two.db'}"
        Storage(url).close()
    else:
        url = str(request.getfixturevalue("postgres_url"))
    first, second = server_factory(url), server_factory(url)
    admin = Storage(url, migrate=False)
    try:
        team = make_team(admin, first.url)
    finally:
        admin.close()
    clients = _clients(team, [first.url, second.url])
    try:
        await _race(clients, ROUNDS, "two")
    finally:
        await _close(clients)
