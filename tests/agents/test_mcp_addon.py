"""MCP add-ons (issue 25): real servers written with the ``mcp`` SDK, over stdio and over
Streamable HTTP on loopback; every step bounded; failures worded for ``bees doctor``."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from bees_cli.agents.mcp_addon import (
    McpCallCut,
    McpNotReached,
    McpResult,
    McpTool,
    ToolKind,
    call_tool,
    check_mcp,
    list_tools,
)
from bees_cli.workspace.models import Addon
from tests.mcp_server import SCRIPT, free_port, http_server
from tests.support.wait import until_sync

SEND_SCHEMA = {"properties": {"to": {"title": "To", "type": "string"},
                              "subject": {"title": "Subject", "type": "string"}},
               "required": ["to", "subject"], "title": "send_emailArguments", "type": "object"}


def stdio_addon(mode: str = "stdio", **mcp: Any) -> Addon:
    """An MCP add-on starting ``tests/mcp_server.py MODE`` (with ``env`` as given)."""
    return Addon.model_validate({
        "mcp": {"command": ["${BEES_PYTHON}", str(SCRIPT), mode], **mcp},
        "kinds": {"send_email": "send"}})


@pytest.fixture
def http_url(tmp_path: Path) -> Iterator[str]:
    with http_server(str(tmp_path / "notes.log")) as url:
        yield url


def http_addon(url: str) -> Addon:
    return Addon.model_validate({"mcp": {"url": url}, "kinds": {"send_email": "send"}})


def by_name(tools: list[McpTool]) -> dict[str, McpTool]:
    return {tool.name: tool for tool in tools}


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_list_tools_gives_names_schemas_and_read_only_hints(
        transport: str, tmp_path: Path, http_url: str) -> None:
    addon = stdio_addon() if transport == "stdio" else http_addon(http_url)
    assert addon.mcp is not None
    tools = by_name(await list_tools(addon.mcp, root=str(tmp_path), environ={}))
    assert sorted(tools) == ["close_issue", "fail", "search", "send_email", "stall"]
    assert tools["send_email"].input_schema == SEND_SCHEMA
    assert tools["send_email"].description == "Send one mail."
    assert [tools[n].read_only_hint for n in ("search", "send_email", "close_issue")] == [
        True, None, None]


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_call_tool_returns_a_typed_result_and_the_tool_runs_once(
        transport: str, tmp_path: Path, http_url: str) -> None:
    log = tmp_path / "notes.log"
    addon = (stdio_addon(env=["NOTES_LOG"]) if transport == "stdio"
             else http_addon(http_url))
    assert addon.mcp is not None
    environ = {"NOTES_LOG": str(log)}
    sent = await call_tool(addon.mcp, "send_email", {"to": "team@example.com",
                                                      "subject": "Week 2"},
                           root=str(tmp_path), environ=environ)
    assert sent == McpResult(is_error=False, text="sent to team@example.com",
                             structured={"result": "sent to team@example.com"})
    assert log.read_text().splitlines() == [
        'send_email {"subject": "Week 2", "to": "team@example.com"}']
    failed = await call_tool(addon.mcp, "fail", {"why": "no such note"}, root=str(tmp_path),
                             environ=environ)
    assert failed == McpResult(is_error=True, text="Error executing tool fail: no such note",
                               structured=None)


async def test_a_local_server_gets_only_the_declared_environment_and_is_gone_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-servers")
    dump, log = tmp_path / "env.txt", tmp_path / "notes.log"
    addon = stdio_addon(env=["NOTES_LOG", "ENV_DUMP"])
    assert addon.mcp is not None
    environ = {"NOTES_LOG": str(log), "ENV_DUMP": str(dump), "OPENAI_API_KEY": "sk-x"}
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    await call_tool(addon.mcp, "search", {"query": "week"}, root=str(tmp_path),
                    environ=environ)
    names = set(json.loads(dump.read_text()))
    assert {"NOTES_LOG", "ENV_DUMP"} <= names
    assert "OPENAI_API_KEY" not in names and "BEES_HOME" not in names
    # one process per call: the server is stopped when the call returns
    assert {p.pid for p in psutil.Process().children(recursive=True)} == before


def test_a_connected_server_lists_each_tool_with_its_kind_and_why(tmp_path: Path) -> None:
    connection = check_mcp("notes", stdio_addon(), ["send_email", "close_issue"],
                           root=str(tmp_path), environ={})
    assert (connection.connected, connection.missing) == (True, [])
    assert connection.tools == (
        ToolKind("notes", "close_issue", "gated", "undeclared"),
        ToolKind("notes", "fail", "gated", "undeclared"),
        ToolKind("notes", "search", "read", "read_only_hint"),
        ToolKind("notes", "send_email", "send", "declared"),
        ToolKind("notes", "stall", "gated", "undeclared"),
    )


def test_a_declared_tool_the_server_lacks_makes_it_not_connected(tmp_path: Path) -> None:
    connection = check_mcp("notes", stdio_addon(), ["send_email", "send_mail"],
                           root=str(tmp_path), environ={})
    assert (connection.connected, connection.missing) == (False, ["tool send_mail missing"])


def test_a_command_not_found_is_not_connected(tmp_path: Path) -> None:
    addon = Addon.model_validate({"mcp": {"command": ["no-such-notes-server", "--stdio"]}})
    connection = check_mcp("notes", addon, [], root=str(tmp_path), environ={})
    assert (connection.connected, connection.missing) == (
        False, ["command not found: no-such-notes-server"])


def test_a_server_that_exits_is_not_connected_with_its_last_stderr_line(
        tmp_path: Path) -> None:
    connection = check_mcp("notes", stdio_addon("crash"), [], root=str(tmp_path), environ={})
    assert (connection.connected, connection.missing) == (
        False, ["server exited: notes: cannot open the notes file"])


def test_a_hanging_server_is_not_connected_within_its_bound(tmp_path: Path) -> None:
    started = time.monotonic()
    connection = check_mcp("notes", stdio_addon("hang", start_seconds=1), [],
                           root=str(tmp_path), environ={})
    took = time.monotonic() - started
    assert (connection.connected, connection.missing) == (False, ["no answer within 1 s"])
    # the bound, then the SDK's bounded stop of the process (stdin closed, then SIGTERM)
    assert took < 1 + 5, took


def test_a_url_nobody_answers_is_not_connected(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    connection = check_mcp("notes", Addon.model_validate({"mcp": {"url": url}}), [],
                           root=str(tmp_path), environ={})
    assert (connection.connected, connection.missing) == (False, [f"{url} refused the connection"])


def test_an_unset_variable_is_not_connected_and_nothing_starts(tmp_path: Path) -> None:
    addon = stdio_addon(env=["NOTES_TOKEN"])
    connection = check_mcp("notes", addon, [], root=str(tmp_path), environ={})
    assert (connection.connected, connection.missing) == (False, ["env NOTES_TOKEN"])
    url = Addon.model_validate({"mcp": {"url": "http://127.0.0.1:9/mcp",
                                        "headers": {"Authorization": "NOTES_AUTH"}}})
    connection = check_mcp("notes", url, [], root=str(tmp_path), environ={})
    assert (connection.connected, connection.missing) == (False, ["env NOTES_AUTH"])


async def test_a_call_to_a_server_that_cannot_start_says_so(tmp_path: Path) -> None:
    addon = stdio_addon("crash")
    assert addon.mcp is not None
    with pytest.raises(McpNotReached) as raised:
        await call_tool(addon.mcp, "send_email", {}, root=str(tmp_path), environ={})
    assert raised.value.message == "server exited: notes: cannot open the notes file"
    # a failure (exit 1), not bad usage; the hint is the command as it ran
    assert raised.value.exit_code == 1
    assert raised.value.hint == (f"try the server's command by hand: {sys.executable} "
                                 f"{SCRIPT} crash")
    assert sys.executable  # the server ran under ${BEES_PYTHON}


async def test_a_call_not_answered_within_its_bound_may_have_run(tmp_path: Path) -> None:
    log = tmp_path / "notes.log"
    addon = stdio_addon(env=["NOTES_LOG"], call_seconds=1)
    assert addon.mcp is not None
    with pytest.raises(McpCallCut) as raised:
        await call_tool(addon.mcp, "stall", {"seconds": 30}, root=str(tmp_path),
                        environ={"NOTES_LOG": str(log)})
    assert raised.value.message == ("no answer to the tool call: no answer within 1 s; it "
                                    "may already have run, so it is not run again by itself")
    assert log.read_text().splitlines() == ['stall {"seconds": 30.0}']


def gone(process: psutil.Process) -> bool:
    """The process has ended (a zombie not yet reaped by its new parent counts)."""
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_stdio_server_dies_with_its_caller_killed_mid_call(tmp_path: Path) -> None:
    """``bees action`` killed (``kill -9``) during a call: its server dies with it at once,
    so the tool's late side effect never happens (the run may have moved on)."""
    log = tmp_path / "notes.log"
    caller = subprocess.Popen([sys.executable, "-c", (
        "import asyncio, sys\n"
        "from bees_cli.agents.mcp_addon import call_tool\n"
        "from tests.agents.test_mcp_addon import stdio_addon\n"
        "addon = stdio_addon('late', env=['NOTES_LOG'])\n"
        "asyncio.run(call_tool(addon.mcp, 'late', {'seconds': 4}, root=sys.argv[1],\n"
        "                      environ={'NOTES_LOG': sys.argv[2]}))\n"),
        str(tmp_path), str(log)], cwd=Path(__file__).resolve().parents[2])
    try:
        until_sync(lambda: (log.exists() and log.read_text()) or caller.poll() is not None,
                   "the tool call never started")
        assert log.read_text().splitlines() == ['late {"seconds": 4.0}']
        server = next(p for p in psutil.Process(caller.pid).children(recursive=True)
                      if str(SCRIPT) in p.cmdline())
    finally:
        caller.kill()
        caller.wait()
    until_sync(lambda: gone(server), f"the server {server.pid} outlived its caller")
    assert log.read_text().splitlines() == ['late {"seconds": 4.0}']
