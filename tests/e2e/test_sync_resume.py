"""A resumable first push (issue 29, point 2): each batch is marked sent as Bees Cloud
answers it, so a push whose connection drops after batch k resumes from batch k+1, and a
batch sent again after its answer was lost changes nothing; against the real Bees Cloud
over HTTP."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Literal

import httpx
import pytest

from bees_cli.cloud.client import AsyncCloudClient
from bees_cli.errors import CloudUnreachable
from bees_cli.record.local import LocalRecord
from bees_cli.record.sync import BatchSizer, SharedRecord, Syncer
from tests.e2e.conftest import Team, make_computer

ITEMS = 1_500


class Dropping(httpx.AsyncBaseTransport):
    """Real HTTP that notes the item ids of each record push and breaks push number
    ``drop_at``: before it reaches Bees Cloud (``lost="request"``) or after Bees Cloud
    answered it (``lost="answer"``, so the server applied a batch the computer never
    heard of)."""

    def __init__(self, drop_at: int, lost: Literal["request", "answer"]) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.drop_at = drop_at
        self.lost = lost
        self.pushes: list[list[str]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/record/push":
            self.pushes.append([c["item_id"] for c in json.loads(request.content)["changes"]])
            if len(self.pushes) == self.drop_at:
                if self.lost == "request":
                    raise httpx.ConnectError("connection dropped", request=request)
                response = await self.inner.handle_async_request(request)
                await response.aread()
                await response.aclose()
                raise httpx.ReadError("connection dropped before the answer", request=request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def fill(record_path: Path, count: int) -> list[str]:
    """Put ``count`` items in the local record in one transaction (the outbox triggers note
    each); return their ids in the outbox's order."""
    LocalRecord(record_path)
    SharedRecord(record_path)
    ids = [f"01RESUME{n:018d}" for n in range(count)]
    db = sqlite3.connect(record_path)
    with db:
        db.executemany(
            "INSERT INTO items (id, process, title, workspace, run_folder, stage, status, since,"
            " created, input) VALUES (?, 'weekly-report', ?, '/ws', '/runs', 'Draft', 'running',"
            " '2025-01-06T08:00:00Z', '2025-01-06T08:00:00Z', '{}')",
            [(i, f"Weekly report {n}") for n, i in enumerate(ids)])
    db.close()
    return ids


def outbox_ids(record_path: Path) -> list[str]:
    db = sqlite3.connect(record_path)
    try:
        return [r[0] for r in db.execute("SELECT item_id FROM sync_outbox ORDER BY item_id")]
    finally:
        db.close()


@pytest.mark.parametrize("lost", ["request", "answer"])
async def test_a_push_cut_after_batch_k_resumes_from_batch_k_plus_1(
        tmp_path: Path, team: Team, lost: Literal["request", "answer"]) -> None:
    url, token = team.cloud.url, team.tokens[team.maya]
    laptop = make_computer(tmp_path, "maya-laptop", team.maya, url=url, token=token)
    ids = fill(laptop.record_path, ITEMS)
    dropping = Dropping(drop_at=2, lost=lost)
    client = AsyncCloudClient(url, token, retries=0, transport=dropping)
    reader = AsyncCloudClient(url, team.tokens[team.sam], retries=0)
    try:
        with pytest.raises(CloudUnreachable):
            await Syncer(laptop, client=client).sync_once()
        [answered, cut] = dropping.pushes
        assert answered == ids[:len(answered)]  # the outbox goes in item order
        assert cut == ids[len(answered):len(answered) + len(cut)]
        # batch 1 was answered: marked sent; the cut batch and the rest are still unsent
        assert outbox_ids(laptop.record_path) == ids[len(answered):]
        seen = await reader.pull_all(0)
        applied = answered + (cut if lost == "answer" else [])
        assert [e.item_id for e in seen.changes] == applied

        result = await Syncer(laptop, client=client).sync_once()
        resent = [i for push in dropping.pushes[2:] for i in push]
        assert resent == ids[len(answered):]  # from batch k+1 on, each change once
        assert (result.pushed, result.refused) == (ITEMS - len(answered), 0)
        assert outbox_ids(laptop.record_path) == []
        assert SharedRecord(laptop.record_path).refused() == []

        # the end state: each item once, in the order first applied; a batch the server
        # had applied before its answer was lost kept its entries (same sequence numbers)
        end = await reader.pull_all(0)
        assert [e.item_id for e in end.changes] == ids
        assert end.changes[:len(seen.changes)] == seen.changes
        assert (await reader.pull_all(end.cursor)).changes == []
    finally:
        await client.aclose()
        await reader.aclose()
        await dropping.aclose()


async def test_batches_of_a_fixed_size_resume_at_the_batch_after_the_last_answered(
        tmp_path: Path, team: Team) -> None:
    url, token = team.cloud.url, team.tokens[team.maya]
    laptop = make_computer(tmp_path, "maya-laptop", team.maya, url=url, token=token)
    ids = fill(laptop.record_path, 10)
    dropping = Dropping(drop_at=3, lost="answer")
    client = AsyncCloudClient(url, token, retries=0, transport=dropping)
    syncer = Syncer(laptop, client=client, batches=BatchSizer(first=3, least=3, most=3))
    try:
        with pytest.raises(CloudUnreachable):
            await syncer.sync_once()
        assert dropping.pushes == [ids[0:3], ids[3:6], ids[6:9]]
        await syncer.sync_once()
        assert dropping.pushes[3:] == [ids[6:9], ids[9:10]]
    finally:
        await client.aclose()
        await dropping.aclose()
