"""SIGKILL the server under load, restart it: every answered claim, release and push is kept."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from bees_cli.cloud import wire
from bees_cli.cloud.client import AsyncCloudClient
from bees_cli.cloud.server.storage import Storage
from bees_cli.cloud.server.tables import metadata
from bees_cli.errors import CloudError

from .conftest import ServerProcess, make_team

WORKERS = 16


@pytest.mark.slow
async def test_sigkill_loses_nothing_that_was_answered(
    db_url: str, admin: Storage, server_factory: Callable[[str], ServerProcess]
) -> None:
    proc = server_factory(db_url)
    team = make_team(admin, proc.url)
    answered_owners: dict[str, wire.OwnerAnswer] = {}
    answered_keys: dict[int, wire.KeyAnswer] = {}
    answered_pushes: dict[str, dict[str, object]] = {}
    killed = asyncio.Event()

    async def worker(w: int, api: AsyncCloudClient) -> None:
        n = 0
        while True:
            item = f"kill-{w}-{n}"
            try:
                owner = await api.claim_owner(
                    wire.OwnerClaim(item_id=item, machine_id=f"m{w}", computer_name=f"c{w}")
                )
                answered_owners[item] = owner
                fields = {"stage": "Draft", "n": n}
                await api.push(
                    [
                        wire.RecordChange(
                            item_id=item,
                            fields=fields,
                            origin_time="2025-01-06T09:00:00Z",
                            machine_id=f"m{w}",
                        )
                    ]
                )
                answered_pushes[item] = fields
                slot = w * 10_000 + n
                answered_keys[slot] = await api.claim_key(
                    wire.KeyClaim(
                        schedule_id=f"s-{slot}",
                        scheduled_time="2025-01-06T09:00:00Z",
                        machine_id=f"m{w}",
                        computer_name="c",
                    )
                )
            except CloudError:
                assert killed.is_set()
                return
            n += 1
            if len(answered_owners) >= 300 and not killed.is_set():
                killed.set()
                os.kill(proc.proc.pid, signal.SIGKILL)  # type: ignore[union-attr]

    clients = [
        AsyncCloudClient(proc.url, team.tokens["maya"], retries=0, timeout=10)
        for _ in range(WORKERS)
    ]
    try:
        await asyncio.gather(*(worker(w, c) for w, c in enumerate(clients)))
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))
    proc.proc.wait(10)  # type: ignore[union-attr]
    assert proc.proc.returncode == -signal.SIGKILL  # type: ignore[union-attr]
    assert len(answered_owners) >= 300

    proc.start()  # same database, new process
    async with AsyncCloudClient(proc.url, team.tokens["maya"]) as api:
        held = {o.item_id: o for o in await api.list_owners()}
        record = {c.item_id: c.fields for c in (await api.pull_all(0)).changes}
        for item, answer in answered_owners.items():
            assert held[item] == answer.owner
            again = await api.claim_owner(
                wire.OwnerClaim(item_id=item, machine_id="newcomer", computer_name="n")
            )
            assert again.status == "taken" and again.owner == answer.owner
        for item, fields in answered_pushes.items():
            assert record[item] == fields
        for slot, key in answered_keys.items():
            again_key = await api.claim_key(
                wire.KeyClaim(
                    schedule_id=f"s-{slot}",
                    scheduled_time="2025-01-06T09:00:00Z",
                    machine_id="newcomer",
                    computer_name="n",
                )
            )
            assert again_key.status == "taken" and again_key.granted_at == key.granted_at


def test_migrations_build_exactly_the_tables_the_code_uses(admin: Storage) -> None:
    with admin.engine.connect() as conn:
        context = MigrationContext.configure(conn)
        assert context.get_current_revision() == "0007"
        assert compare_metadata(context, metadata) == []


def test_migrating_twice_is_a_no_op(db_url: str, admin: Storage) -> None:
    again = Storage(db_url)  # migrates again at start
    again.close()
    with admin.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).all() == [("0007",)]
