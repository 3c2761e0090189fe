"""``bees run``'s sync keeps one Bees Cloud client for its life (issue 29, point 4): a
round no longer builds an ``httpx`` client (and loads the certificate bundle) each time,
and the last sync before stopping closes it; against the real Bees Cloud over HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bees_cli.cloud.async_client import AsyncCloudClient
from bees_cli.engine.background import Background
from tests.e2e.conftest import Team, make_computer
from tests.e2e.test_sync_resume import fill, outbox_ids


async def test_sync_rounds_share_one_client_closed_by_the_last_sync(
        tmp_path: Path, team: Team, monkeypatch: pytest.MonkeyPatch) -> None:
    from bees_cli.record.sync import Syncer

    made: list[AsyncCloudClient] = []
    build = AsyncCloudClient.__init__

    def spy(self: AsyncCloudClient, *args: Any, **kwargs: Any) -> None:
        build(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(AsyncCloudClient, "__init__", spy)
    url, token = team.cloud.url, team.tokens[team.maya]
    laptop = make_computer(tmp_path, "maya-laptop", team.maya, url=url, token=token)
    ids = fill(laptop.record_path, 3)
    syncer = Syncer(laptop)
    first = await syncer.sync_once()
    second = await syncer.sync_once()  # nothing new: an idle round
    assert (first.pushed, second.pushed) == (len(ids), 0)
    assert len(made) == 1 and not made[0]._http.is_closed
    background = Background(syncer=syncer)
    assert await background.final_sync(lambda _line: None)
    assert len(made) == 1 and made[0]._http.is_closed
    assert outbox_ids(laptop.record_path) == []
