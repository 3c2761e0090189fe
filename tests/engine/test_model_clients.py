"""One HTTP client per model server for the worker's life (issue 29, point 4): a model
call no longer builds an ``httpx`` client (and loads the certificate bundle, ~39 ms of CPU)
each time, and a worker that stops closes the clients it kept."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from bees_cli.agents.model_client import ModelClient
from bees_cli.engine.model_activities import ModelActivities
from bees_cli.record.local import LocalRecord
from tests.agents.model_server import Answer, ScriptedServer, serve
from tests.engine.conftest import Space
from tests.engine.test_model_loop import loop_worker, model_agent, note_this_worker, result
from tests.engine.test_rules import SEND, start


@pytest.fixture
def model_server() -> Iterator[ScriptedServer]:
    with serve() as server:
        yield server


async def test_two_model_calls_share_one_client_closed_with_the_worker(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        model_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    used: list[httpx.AsyncClient] = []
    made = ModelClient.__init__

    def spy(self: ModelClient, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        used.append(self._http)

    monkeypatch.setattr(ModelClient, "__init__", spy)
    note_this_worker(dev_env)
    model_agent(space, "sender", model_server)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(
        Answer.tool_calls(("c1", "write_file", '{"path": "notes.md", "content": "hi"}')),
        Answer.reply("all written"))
    async with loop_worker(dev_env, record, models=lambda act: ModelActivities(
            record, act=act, heartbeat_every=0.5)):
        item_id = await start(dev_env, record, space, "p")
        assert await result(dev_env, item_id) == "done"
        assert len(model_server.model.received) == 2
        assert len(used) == 2 and used[0] is used[1]
        assert not used[0].is_closed
    assert used[0].is_closed
