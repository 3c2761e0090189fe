"""A stdio MCP server is started once per stage and add-on and reused across the stage's tool
calls, then stopped with the stage, with a cancel and with a relinquish (issue 25, point 3),
on a real dev server with a real MCP server and a scripted model."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import psutil
import pytest
import pytest_asyncio
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.agents.mcp_sessions import McpSessions
from bees_cli.record.local import LocalRecord
from tests.agents.model_server import Answer, ScriptedServer
from tests.engine.conftest import Space
from tests.engine.test_handover import relinquish_item
from tests.engine.test_model_loop import (
    loop_worker,
    model_agent,
    model_server,  # noqa: F401 - the fixture
    note_this_worker,
    result,
    sent,
)
from tests.engine.test_rules import SEND, cancel_item, start
from tests.mcp_server import SCRIPT

WHOAMI = ("notes__whoami", "{}")


@pytest_asyncio.fixture
async def sessions() -> AsyncIterator[McpSessions]:
    held = McpSessions()
    yield held
    await held.close_all()


def sessions_worker(env: WorkflowEnvironment, record: LocalRecord,
                    sessions: McpSessions) -> Worker:
    """This computer's worker as ``bees run`` makes it, with the run's MCP sessions."""
    note_this_worker(env)
    return loop_worker(env, record, mcp_sessions=sessions)


@pytest_asyncio.fixture
async def worker(dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
                 sessions: McpSessions) -> AsyncIterator[Worker]:
    async with sessions_worker(dev_env, record, sessions) as running:
        yield running


def notes_space(space: Space, server: ScriptedServer, approval: str = "none") -> None:
    space.write("addons/notes.yaml", f'mcp:\n  command: ["${{BEES_PYTHON}}", "{SCRIPT}", '
                '"pid"]\n  start_seconds: 20\nkinds:\n  whoami: read\n')
    model_agent(space, "sender", server, tools=["notes.whoami"])
    space.write("processes/p.yaml", SEND.format(approval=approval))


def pid_told(server: ScriptedServer, index: int, position: int) -> int:
    """The pid the ``whoami`` result at message ``position`` of request ``index`` names."""
    content = sent(server, index)[position]["content"]
    assert content.startswith("pid "), content
    return int(content.split()[1])


def gone(pid: int) -> bool:
    """The process is gone (or a zombie nobody runs any more)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def test_two_calls_of_a_stage_reach_one_server_stopped_with_the_stage(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:  # noqa: F811
    notes_space(space, model_server)
    model_server.model.push(Answer.tool_calls(("c1", *WHOAMI)),
                            Answer.tool_calls(("c2", *WHOAMI)), Answer.reply("two calls"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    first, second = pid_told(model_server, 1, 1), pid_told(model_server, 2, 3)
    assert second == first
    assert gone(first)


async def waiting_after_one_call(dev_env: WorkflowEnvironment, record: LocalRecord,
                                 space: Space, server: ScriptedServer,
                                 release: threading.Event) -> tuple[str, int]:
    """Start the item; its model calls ``whoami`` once, then its next answer is held:
    return the item and the server's pid, alive while the stage runs."""
    notes_space(space, server)
    server.model.push(Answer.tool_calls(("c1", *WHOAMI)),
                      Answer.reply("never read").held(release))
    item_id = await start(dev_env, record, space, "p")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while len(server.model.received) < 2:
        assert loop.time() < deadline
        await asyncio.sleep(0.05)
    pid = pid_told(server, 1, 1)
    assert not gone(pid)
    return item_id, pid


async def test_the_server_is_stopped_when_the_item_is_cancelled(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:  # noqa: F811
    release = threading.Event()
    try:
        item_id, pid = await waiting_after_one_call(dev_env, record, space, model_server,
                                                    release)
        assert (await asyncio.to_thread(cancel_item, item_id))["requested"] is True
        with pytest.raises(WorkflowFailureError):
            await result(dev_env, item_id)
        assert record.item(item_id).status == "cancelled"
        assert gone(pid)
    finally:
        release.set()


async def test_the_server_is_stopped_when_the_item_is_relinquished(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:  # noqa: F811
    release = threading.Event()
    try:
        item_id, pid = await waiting_after_one_call(dev_env, record, space, model_server,
                                                    release)
        await asyncio.to_thread(relinquish_item, item_id)
        assert await result(dev_env, item_id) == "relinquished: restarts at Send"
        assert gone(pid)
    finally:
        release.set()


async def test_closing_every_session_stops_the_servers_bees_run_leaves(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        sessions: McpSessions, model_server: ScriptedServer) -> None:  # noqa: F811
    release = threading.Event()
    try:
        _item_id, pid = await waiting_after_one_call(dev_env, record, space, model_server,
                                                     release)
        assert await sessions.close_all() == 1
        assert gone(pid)
    finally:
        release.set()
