"""Why an MCP exchange failed, in words for ``bees doctor`` and a model: the reason of an
error (the transport's own first), the last line a stdio server wrote on stderr, and what
the ``mcp`` SDK logged (a line of non-MCP output on stdout), taken off the user's stderr.
"""

from __future__ import annotations

import functools
import json
import logging
import shlex
from collections.abc import Mapping
from contextvars import ContextVar
from typing import IO, TYPE_CHECKING

from pydantic import ValidationError

if TYPE_CHECKING:
    from bees_cli.workspace.models import McpServer


def missing_env(server: McpServer, environ: Mapping[str, str]) -> list[str]:
    """Return ``env NAME`` for each name of the server's ``env`` and ``headers`` that
    ``environ`` does not set (or sets empty)."""
    names = [*server.env, *server.headers.values()]
    return [f"env {name}" for name in dict.fromkeys(names) if not environ.get(name)]


def _last_line(errlog: IO[str] | None) -> str | None:
    if errlog is None:
        return None
    try:
        errlog.flush()
        errlog.seek(0)
        lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
    except (OSError, ValueError):
        return None
    return lines[-1] if lines else None


def _leaves(error: BaseException) -> list[BaseException]:
    """The errors inside (nested) exception groups, or ``[error]``."""
    if isinstance(error, BaseExceptionGroup):
        found: list[BaseException] = []
        for inner in error.exceptions:
            found += _leaves(inner)
        return found
    return [error]


NOISE_SHOWN = 80
"""Characters of a server's non-MCP stdout line quoted in the reason."""

sdk_notes: ContextVar[list[str] | None] = ContextVar("bees_mcp_sdk_notes", default=None)
"""The current exchange's words for what the SDK logged (None: not in an exchange)."""


class _SdkLog(logging.Handler):
    """Takes what the ``mcp`` SDK logs instead of printing it (with a traceback) on the
    user's stderr: a line of the server's stdout that is not JSON-RPC becomes a reason of
    the current exchange; the rest is dropped."""

    def emit(self, record: logging.LogRecord) -> None:
        notes = sdk_notes.get()
        error = record.exc_info[1] if record.exc_info else None
        if notes is None or not isinstance(error, ValidationError):
            return
        errors = error.errors()
        line = errors[0].get("input") if errors else None
        if not isinstance(line, str):
            line = json.dumps(line, ensure_ascii=False)
        shown = line if len(line) <= NOISE_SHOWN else line[:NOISE_SHOWN] + "…"
        notes.append(f"server wrote non-MCP output on stdout: {shown!r}")


@functools.cache
def quiet_sdk() -> None:
    """Route the ``mcp`` loggers to :class:`_SdkLog` only (once per process)."""
    sdk = logging.getLogger("mcp")
    sdk.addHandler(_SdkLog())
    sdk.propagate = False


def reason(error: BaseException, server: McpServer, errlog: IO[str] | None,
           bound: float, notes: list[str] | None = None) -> str:
    """Word why the server was not reached or did not answer: the SDK's own notes first
    (non-MCP output on stdout), else from ``error``."""
    if notes:
        return notes[0]
    import httpx2
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    leaves = _leaves(error)
    for leaf in leaves:  # the most telling first: the transport's own error
        if isinstance(leaf, httpx2.ConnectError):
            return f"{server.url} refused the connection"
        if isinstance(leaf, httpx2.TimeoutException):
            return f"no answer within {bound:g} s"
        if isinstance(leaf, httpx2.HTTPStatusError):
            return f"{server.url} answered HTTP {leaf.response.status_code}"
    leaf = leaves[0]
    if isinstance(leaf, TimeoutError) or (isinstance(leaf, MCPError)
                                          and leaf.code == REQUEST_TIMEOUT):
        return f"no answer within {bound:g} s"
    if isinstance(leaf, FileNotFoundError) and server.command is not None:
        return f"command not found: {server.command[0]}"
    if isinstance(leaf, OSError) and server.command is not None:
        return f"cannot start {server.command[0]}: {leaf.strerror or leaf}"
    if isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED:
        if server.command is None:
            return f"{server.url} closed the connection"
        last = _last_line(errlog)
        return f"server exited: {last}" if last else "server exited"
    if isinstance(leaf, MCPError):
        return f"the server answered an error: {leaf.message}"
    return f"{type(leaf).__name__}: {leaf}"


def hint(server: McpServer, root: str) -> str:
    """Return what to try when the server was not reached: its command as it runs (with
    ``${BEES_WORKSPACE}`` expanded), or to check its URL."""
    if server.command is not None:
        from bees_cli.agents.runner import expand_command

        argv = expand_command(list(server.command), root)
        return f"try the server's command by hand: {shlex.join(argv)}"
    return f"check that {server.url} is up and reachable from this computer"
