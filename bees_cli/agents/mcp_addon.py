"""MCP add-ons: start or reach an add-on's MCP server, list its tools, call one; every step bounded.

An add-on whose YAML has ``mcp:`` is a Model Context Protocol server (issue 25): a local one
Bees starts (``command``, stdio) or a remote one (``url``, Streamable HTTP). Its tools are the
add-on's actions. The official ``mcp`` SDK speaks the protocol; this module only bounds each
step and says what went wrong in words for ``bees doctor``.

Bounds (seconds, from the add-on's ``mcp`` settings, defaults in :mod:`bees_cli.rules`):
the handshake and the list of tools each get ``start_seconds``
(:data:`~bees_cli.rules.MCP_START_SECONDS`), a tool call ``call_seconds``
(:data:`~bees_cli.rules.MCP_CALL_SECONDS`); the whole exchange is bounded by their sum, so a
server that hangs is "not connected", never a hang.

Here a local server runs once per list or call: started, asked, stopped (the SDK closes its
stdin, then ends its process tree, each wait bounded); ``bees run`` keeps one per stage
instead (:mod:`bees_cli.agents.mcp_sessions`). It is started with the parent-death signal
set, so it dies with the process that started it (``bees action``, ``bees run``) even when
that one is killed mid-call. The words of a failure are :mod:`bees_cli.agents.mcp_words`'.

Errors::

    McpNotReached (BeesError)        the server could not be started or reached, or did not
                                     answer, before any tool call was sent: nothing happened
    McpCallCut (ActionInterrupted)   the call was sent and no answer came (bound, or the server
                                     went away): it may have taken effect
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from bees_cli.agents.mcp_words import hint, missing_env, quiet_sdk, reason, sdk_notes
from bees_cli.errors import ActionInterrupted, BeesError
from bees_cli.machine.connections import AddonConnection, check_connection
from bees_cli.rules import mcp_tool_kind
from bees_cli.workspace.summary import ToolKind

if TYPE_CHECKING:
    from mcp import ClientSession

    from bees_cli.workspace.loader import Workspace
    from bees_cli.workspace.models import Addon, McpServer

T = TypeVar("T")

__all__ = ["McpCallCut", "McpConnection", "McpNotReached", "McpResult", "McpTool", "ToolKind",
           "addon_connections", "ask_call", "ask_mcp", "ask_tools", "call_tool", "check_mcp",
           "list_tools", "open_session", "tool_kinds"]


class McpNotReached(BeesError):
    """The server could not be started or reached, or did not answer in time, before any
    tool call was sent: nothing happened. A failure (exit 1), not bad usage. The message is
    the reason (``command not found: notes-server``, ``server exited: LAST STDERR LINE``,
    ``URL refused the connection``, ``no answer within 10 s``, ``server wrote non-MCP output
    on stdout: 'LINE'``); the hint, what to try (the server's command as it runs)."""

    code = "mcp_not_reached"


class McpCallCut(ActionInterrupted):
    """A tool call was sent and no answer came (its bound ran out, or the server went away):
    it may have taken effect, so it is never sent again without a person."""

    @classmethod
    def because(cls, why: str) -> McpCallCut:
        """Return the error of a call that got no answer, for reason ``why``."""
        return cls(f"no answer to the tool call: {why}; it may already have run, so it is "
                   "not run again by itself")


@dataclass(frozen=True)
class McpTool:
    """One tool as the server lists it: ``name``, ``description``, ``input_schema`` (a JSON
    Schema of an object) and ``read_only_hint`` (``annotations.readOnlyHint``; None: not
    said)."""

    name: str
    description: str | None
    input_schema: dict[str, Any]
    read_only_hint: bool | None


@dataclass(frozen=True)
class McpResult:
    """A tool call's answer: ``is_error`` (the tool failed), ``text`` (its text content,
    joined by newlines; other content named in brackets, e.g. ``[image]``) and
    ``structured`` (its structured content, or None); ``binary``, the media type of its first
    binary content (an image, audio, or an embedded resource's blob), else None."""

    is_error: bool
    text: str
    structured: dict[str, Any] | None
    binary: str | None = None


@dataclass(frozen=True)
class McpConnection(AddonConnection):
    """An MCP add-on's connection here: as :class:`AddonConnection` (``missing`` holds the
    reasons it is not connected), with each tool the server listed, its kind and why."""

    tools: tuple[ToolKind, ...] = ()

    def words(self) -> str:
        """How ``bees doctor`` says it: ``connected, 4 tools`` or ``not connected: REASONS``."""
        if self.connected:
            return f"connected, {len(self.tools)} tool{'s' if len(self.tools) != 1 else ''}"
        return f"not connected: {'; '.join(self.missing)}"


async def addon_connections(workspace: Workspace) -> list[AddonConnection]:
    """Return whether every declared add-on is connected here, sorted by add-on name: a
    script add-on by its ``connection``, an MCP add-on by asking its server
    (:func:`ask_mcp`, with the tools the workspace names).

    Why: the add-ons are asked at once, as tasks of this event loop, so the wait is the
    slowest one's, not the sum of their start bounds; each is bounded on its own, so one
    that hangs or crashes leaves the others' answers as they are; and a cancel (Ctrl-C)
    stops every server at once, never waiting for a bound. The tasks are an anyio task
    group's, not ``asyncio.gather``'s: gather passes a cancel on as a plain
    ``Task.cancel()``, which breaks into the SDK's shielded shutdown of a server, and the
    interrupted command then waited for ever on a server nobody stopped (seen in 3 of 12
    Ctrl-Cs); a task group's cancel leaves that shutdown to finish (about 2 s).
    """
    import anyio

    from bees_cli.workspace.summary import named_tools

    root = str(workspace.root.resolve())
    addons = sorted(workspace.addons.items())
    answers: dict[str, AddonConnection] = {}

    async def connection(name: str, addon: Addon) -> None:
        if addon.mcp is None:
            answers[name] = check_connection(name, addon)
        else:
            answers[name] = await ask_mcp(name, addon,
                                          named_tools(name, addon, workspace.agents), root=root)

    async with anyio.create_task_group() as group:
        for name, addon in addons:
            group.start_soon(connection, name, addon)
    return [answers[name] for name, _ in addons]


def tool_kinds(name: str, addon: Addon, tools: Iterable[McpTool]) -> tuple[ToolKind, ...]:
    """Return each listed tool of add-on ``name`` with its kind and why
    (:func:`~bees_cli.rules.mcp_tool_kind`), sorted by tool name."""
    return tuple(sorted(
        ToolKind(name, tool.name, *mcp_tool_kind(addon.kinds.get(tool.name),
                                                 tool.read_only_hint))
        for tool in tools))


def _dying_with_us(argv: list[str], cwd: str,
                   env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """Return the argv and environment that start a local server so it dies with this
    process (``bees action`` killed with its stage's process group, ``bees run`` killed):
    through :func:`~bees_cli.agents.spawn.fast_launch`'s chain, which sets the parent-death
    signal (SIGKILL). The SDK starts the server in a session of its own, so a kill of the
    stage's process group alone would miss it, and a tool still running would take effect
    after the stage moved on. Where the chain does not work here (no ``setpriv``, a
    program that would not start: the SDK then reports it), ``argv`` and ``env`` as given
    (the SDK's environment merged in)."""
    from mcp.client.stdio import get_default_environment

    from bees_cli.agents.spawn import fast_launch

    whole = get_default_environment() | dict(env)
    launch = fast_launch(argv, Path(cwd), whole)
    if launch is None:
        return argv, whole
    return launch.argv, launch.env


@asynccontextmanager
async def open_session(server: McpServer, *, root: str, environ: Mapping[str, str],
                       cwd: str | None, errlog: TextIO | None
                       ) -> AsyncIterator[tuple[ClientSession, Callable[[], bool]]]:
    """Start or reach the server and shake hands; yield the session and a test of whether
    a local server's output has ended (it exited: its transport closed the stream the
    session reads); stopped on exit. Unbounded: the caller bounds it. ``errlog`` (a file)
    takes a local server's stderr."""
    from mcp import ClientSession

    from bees_cli.agents.child_env import child_environment
    from bees_cli.agents.runner import expand_command

    if server.command is not None:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        argv, env = _dying_with_us(expand_command(list(server.command), root), cwd or root,
                                   child_environment(environ, server.env, bees=False))
        params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=cwd or root,
                                       env=env)
        assert errlog is not None
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write, read_timeout_seconds=server.start_seconds) as session:
            await session.initialize()
            yield session, functools.partial(_ended, read)
        return
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    assert server.url is not None
    headers = {header: environ[name] for header, name in server.headers.items()}
    timeout = httpx2.Timeout(server.start_seconds, read=max(server.start_seconds,
                                                            server.call_seconds))
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as client, \
            streamable_http_client(server.url, http_client=client) as (read, write), \
            ClientSession(read, write, read_timeout_seconds=server.start_seconds) as session:
        await session.initialize()
        yield session, lambda: False


def _ended(read: object) -> bool:
    """Tell whether the transport closed its end of the memory stream ``read`` (no sender
    is left: the server's stdout ended)."""
    from anyio.streams.memory import MemoryObjectReceiveStream

    return (isinstance(read, MemoryObjectReceiveStream)
            and read.statistics().open_send_streams == 0)


async def _exchange(server: McpServer, ask: Callable[[ClientSession], Awaitable[T]], *,
                    root: str, environ: Mapping[str, str], cwd: str | None,
                    calls: bool) -> T:
    """Open a session, run ``ask`` in it, close it; every step bounded.

    Raises:
        McpNotReached: not started, reached or answered before ``ask`` sent a tool call.
        McpCallCut: ``calls`` and the call got no answer.
    """
    import anyio

    missing = missing_env(server, environ)
    if missing:
        raise McpNotReached(f"{', '.join(missing)} not set", hint=hint(server, root))
    errlog: TextIO | None = (tempfile.TemporaryFile("w+", encoding="utf-8")
                             if server.command else None)
    sent = False
    done: list[T] = []
    quiet_sdk()
    notes: list[str] = []
    noting = sdk_notes.set(notes)

    async def run() -> None:
        nonlocal sent
        async with open_session(server, root=root, environ=environ, cwd=cwd,
                                errlog=errlog) as (session, _ended_yet):
            sent = calls
            done.append(await ask(session))

    total = 3 * server.start_seconds + (server.call_seconds if calls else 0)
    try:
        with anyio.fail_after(total):
            await run()
    except Exception as error:  # noqa: BLE001 - worded below; a bug keeps its cause
        if done:  # answered; only the stop failed
            return done[0]
        bound = server.call_seconds if sent else server.start_seconds
        why = reason(error, server, errlog, bound, notes)
        if sent:
            raise McpCallCut.because(why) from error
        raise McpNotReached(why, hint=hint(server, root)) from error
    finally:
        sdk_notes.reset(noting)
        if errlog is not None:
            errlog.close()
    return done[0]


async def list_tools(server: McpServer, *, root: str,
                     environ: Mapping[str, str]) -> list[McpTool]:
    """Start or reach ``server`` and return its tools (all pages), in the server's order.

    Args:
        server: the add-on's ``mcp`` settings.
        root: the workspace folder (``${BEES_WORKSPACE}``; a local server runs there).
        environ: where the values of ``env`` and ``headers`` names are read.

    Raises:
        McpNotReached: the reason, e.g. ``server exited: LAST STDERR LINE``.
    """
    return await _exchange(server, ask_tools, root=root, environ=environ, cwd=None,
                           calls=False)


async def ask_tools(session: ClientSession) -> list[McpTool]:
    """Return the tools ``session``'s server lists (all pages), in its order. Unbounded
    beyond the session's own read timeout."""
    from mcp_types import PaginatedRequestParams

    tools: list[McpTool] = []
    cursor: str | None = None
    while True:
        page = await session.list_tools(
            params=None if cursor is None else PaginatedRequestParams(cursor=cursor))
        tools += [McpTool(name=t.name, description=t.description,
                          input_schema=dict(t.input_schema),
                          read_only_hint=None if t.annotations is None
                          else t.annotations.read_only_hint) for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return tools


async def call_tool(server: McpServer, tool: str, arguments: dict[str, Any], *, root: str,
                    environ: Mapping[str, str], cwd: str | None = None) -> McpResult:
    """Start or reach ``server``, call ``tool`` with ``arguments`` once, and return its answer.

    Args:
        server: the add-on's ``mcp`` settings.
        tool: the tool's name.
        arguments: its input (a JSON object).
        root: the workspace folder (``${BEES_WORKSPACE}``).
        environ: where the values of ``env`` and ``headers`` names are read.
        cwd: the folder a local server runs in (default: ``root``).

    Returns:
        The :class:`McpResult`; a tool's failure, or the server refusing the call (an error
        answer), is ``is_error`` with its message.

    Raises:
        McpNotReached: nothing was sent (the reason).
        McpCallCut: the call was sent and got no answer within ``call_seconds``, or the
            server went away: it may have taken effect.
    """
    async def ask(session: ClientSession) -> McpResult:
        return await ask_call(session, server, tool, arguments)

    return await _exchange(server, ask, root=root, environ=environ, cwd=cwd, calls=True)


async def ask_call(session: ClientSession, server: McpServer, tool: str,
                   arguments: dict[str, Any]) -> McpResult:
    """Call ``tool`` once in ``session``, waiting at most the server's ``call_seconds`` for
    the answer; a tool's failure or the server's error answer is ``is_error``.

    Raises:
        MCPError: no answer (``REQUEST_TIMEOUT``) or the connection closed.
    """
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    try:
        answer = await session.call_tool(tool, arguments,
                                         read_timeout_seconds=server.call_seconds)
    except MCPError as error:
        if error.code in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
            raise
        return McpResult(is_error=True, text=error.message, structured=None)
    return McpResult(is_error=bool(answer.is_error), text=_text(answer.content),
                     structured=answer.structured_content, binary=binary(answer.content))


def _text(content: Iterable[Any]) -> str:
    parts = []
    for block in content:
        text = getattr(block, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(block, 'type', 'content')}]")
    return "\n".join(parts)


def binary(content: Iterable[Any]) -> str | None:
    """Return the media type of the first binary block of a tool's ``content`` (``image``,
    ``audio``, or an ``resource`` holding a ``blob``; ``application/octet-stream`` when it
    names none), or None when all of it is text."""
    for block in content:
        kind = getattr(block, "type", None)
        held = getattr(block, "resource", None) if kind == "resource" else block
        if kind in ("image", "audio") or getattr(held, "blob", None) is not None:
            return getattr(held, "mime_type", None) or "application/octet-stream"
    return None


def result_json(result: McpResult) -> str:
    """Return the text a caller reads: the tool's text, or its structured content as JSON
    when it gave no text."""
    if result.text or result.structured is None:
        return result.text
    return json.dumps(result.structured, ensure_ascii=False, sort_keys=True)


def run_blocking(make: Callable[[], Awaitable[T]]) -> T:
    """Run ``make()`` to its end from blocking code: in this thread when no event loop runs
    here, else in a thread of its own (eligibility is checked from both)."""
    async def main() -> T:
        return await make()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, main()).result()


def check_mcp(name: str, addon: Addon, expected: Iterable[str], *, root: str,
              environ: Mapping[str, str] | None = None) -> McpConnection:
    """Return :func:`ask_mcp`'s answer from blocking code (:func:`run_blocking`)."""
    return run_blocking(lambda: ask_mcp(name, addon, expected, root=root, environ=environ))


async def ask_mcp(name: str, addon: Addon, expected: Iterable[str], *, root: str,
                  environ: Mapping[str, str] | None = None) -> McpConnection:
    """Tell whether MCP add-on ``name`` answers here (issue 25, point 3; DESIGN.md, Rules:
    eligibility): its ``connection`` holds, its server starts (or its URL answers) within
    its bound, lists its tools, and has every tool in ``expected``.

    Args:
        name: the add-on's name.
        addon: its model (``mcp`` set).
        expected: the tools the workspace names (``kinds`` keys, agents' tools).
        root: the workspace folder.
        environ: where ``env`` and ``headers`` values are read (default: this process's).

    Returns:
        The :class:`McpConnection`; when not connected, ``missing`` holds the reasons
        (``env NAME``, ``command not found: X``, ``server exited: LINE``, ``URL refused the
        connection``, ``no answer within N s``, ``tool X missing``). Never raises for the
        server's faults.
    """
    assert addon.mcp is not None
    server = addon.mcp
    here = check_connection(name, addon)
    if not here.connected:
        return McpConnection(name, False, list(here.missing))
    values = os.environ if environ is None else environ
    unset = missing_env(server, values)
    if unset:
        return McpConnection(name, False, unset)
    try:
        tools = await list_tools(server, root=root, environ=values)
    except McpNotReached as error:
        return McpConnection(name, False, [error.message])
    listed = {tool.name for tool in tools}
    missing = [f"tool {tool} missing" for tool in dict.fromkeys(expected) if tool not in listed]
    return McpConnection(name, not missing, missing, tool_kinds(name, addon, tools))
