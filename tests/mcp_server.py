"""A real MCP server for tests, written with the ``mcp`` SDK's server side (``MCPServer``).

Run as ``python mcp_server.py MODE``:

- ``stdio``: serve over stdio;
- ``crash``: print ``notes: cannot open the notes file`` on stderr and exit 1 at once;
- ``hang``: never answer (sleep, reading nothing; its start noted in ``STARTS_LOG``);
- ``chatty``: print ``hello, this is not json-rpc`` on stdout, then exit without answering
  (at once, so a test may give it a generous start bound and still not wait it out);
- ``flaky FOLDER``: serve when started in ``FOLDER`` (the workspace: listing its tools works),
  else act as ``crash`` (a tool call, started in the stage's folder, finds it down);
- ``late``: serve over stdio with one more tool, ``late`` (logs ``late {"seconds": S}``
  when called, then after ``seconds`` logs ``late done``: a side effect that comes late; it
  blocks, so the server outlives a closed stdin until it is done);
- ``pid``: serve over stdio with one more tool, ``whoami`` (marked read-only; answers
  ``pid N``, this server's process id: which process a call reached).

Served over Streamable HTTP in the test's process by :func:`http_server` (a real uvicorn on a
loopback port).

Tools: ``search`` (marked read-only), ``send_email`` (no annotations; the test workspaces
declare it ``send``), ``close_issue`` (no annotations, not declared: gated), ``stall``
(answers after the seconds it is given) and ``fail`` (answers an error). Each call of a tool
appends ``TOOL JSON-ARGS`` to the file named by ``NOTES_LOG`` (the server's environment) when
set; ``ENV_DUMP`` names a file the server writes its environment to (JSON) when it starts;
``STARTS_LOG`` names a file it appends ``start`` to when it starts (how many times a command
started it).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve()


def build_server(log: str | None = None) -> Any:
    """Return the notes server (an ``MCPServer``); its tools log to ``log`` when given."""
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    server = MCPServer("notes", log_level="WARNING")

    def record(tool: str, arguments: dict[str, object]) -> None:
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(f"{tool} {json.dumps(arguments, sort_keys=True)}\n")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def search(query: str) -> str:
        """Search the notes for a word."""
        record("search", {"query": query})
        return f"2 notes match {query}"

    @server.tool()
    def send_email(to: str, subject: str) -> str:
        """Send one mail."""
        record("send_email", {"subject": subject, "to": to})
        return f"sent to {to}"

    @server.tool()
    def close_issue(number: int) -> str:
        """Close an issue of the tracker."""
        record("close_issue", {"number": number})
        return f"closed #{number}"

    @server.tool()
    async def stall(seconds: float) -> str:
        """Answer after ``seconds`` (logged when called)."""
        import anyio

        record("stall", {"seconds": seconds})
        await anyio.sleep(seconds)
        return "late"

    @server.tool()
    def fail(why: str) -> str:
        """Always fails with ``why``."""
        from mcp.server.mcpserver.exceptions import ToolError

        raise ToolError(why)

    return server


@contextmanager
def http_server(log: str | None = None) -> Iterator[str]:
    """Serve the notes server over Streamable HTTP on a free loopback port until the block
    ends; yield its URL (``http://127.0.0.1:PORT/mcp``)."""
    from tests.servers import uvicorn_in_thread

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    with uvicorn_in_thread(build_server(log).streamable_http_app(), sock,
                           lifespan="on") as (host, port):
        yield f"http://{host}:{port}/mcp"


def free_port() -> int:
    """Return a loopback port nobody listens on (bound and closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "flaky":
        here = Path(sys.argv[2]).resolve() == Path.cwd().resolve()
        mode = "stdio" if here else "crash"
    if mode == "crash":
        print("starting notes", file=sys.stderr)
        print("notes: cannot open the notes file", file=sys.stderr)
        sys.exit(1)
    if os.environ.get("STARTS_LOG"):
        with open(os.environ["STARTS_LOG"], "a", encoding="utf-8") as starts:
            starts.write("start\n")
    if mode == "hang":
        time.sleep(3600)
    if mode == "chatty":
        print("hello, this is not json-rpc", flush=True)
        sys.exit(0)
    if os.environ.get("ENV_DUMP"):
        Path(os.environ["ENV_DUMP"]).write_text(json.dumps(dict(os.environ), sort_keys=True))
    notes = build_server(os.environ.get("NOTES_LOG"))
    if mode == "late":
        @notes.tool()
        def late(seconds: float) -> str:
            """Log the call, then ``late done`` after ``seconds`` (a blocking tool: it runs
            on in its thread when stdin closes)."""
            log = os.environ["NOTES_LOG"]
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(f"late {json.dumps({'seconds': seconds})}\n")
            time.sleep(seconds)
            with open(log, "a", encoding="utf-8") as handle:
                handle.write("late done\n")
            return "done"
    if mode == "pid":
        from mcp_types import ToolAnnotations

        @notes.tool(annotations=ToolAnnotations(read_only_hint=True))
        def whoami() -> str:
            """Say this server's process id."""
            return f"pid {os.getpid()}"
    notes.run()
