"""The run's held MCP servers without an engine: a server that died between two calls is
started again (the call is not cut as "may have run"); opening another stage's server stops
the item's earlier one (issue 25, point 3)."""

from __future__ import annotations

import os
from pathlib import Path

import psutil

from bees_cli.agents.mcp_sessions import McpSessions, SessionKey
from tests.agents.test_mcp_addon import stdio_addon


def key(stage: str) -> SessionKey:
    return SessionKey(item_id="01ITEM", stage=stage, round=1, attempt=1, piece=None,
                      addon="notes")


async def whoami(sessions: McpSessions, stage: str, root: Path) -> int:
    server = stdio_addon("pid", start_seconds=30).mcp
    assert server is not None
    answer = await sessions.call(key(stage), server, "whoami", {}, root=str(root),
                                 environ=os.environ, cwd=str(root))
    assert not answer.is_error, answer.text
    return int(answer.text.split()[1])


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def test_a_server_that_died_between_calls_is_started_again(tmp_path: Path) -> None:
    sessions = McpSessions()
    try:
        first = await whoami(sessions, "Draft", tmp_path)
        assert await whoami(sessions, "Draft", tmp_path) == first
        process = psutil.Process(first)
        process.kill()
        process.wait(10)
        second = await whoami(sessions, "Draft", tmp_path)
        assert second != first
        assert len(sessions) == 1
    finally:
        await sessions.close_all()
    assert gone(second)


async def test_another_stages_server_stops_the_items_earlier_one(tmp_path: Path) -> None:
    sessions = McpSessions()
    try:
        draft = await whoami(sessions, "Draft", tmp_path)
        send = await whoami(sessions, "Send", tmp_path)
        assert send != draft
        assert gone(draft)
        assert len(sessions) == 1
        assert await sessions.close("01ITEM") == 1
        assert gone(send)
    finally:
        await sessions.close_all()
