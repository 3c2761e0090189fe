"""Measure one MCP tool call to a local server already running, against the same function in a
subprocess.

Run: ``.venv/bin/python benchmarks/mcp_call.py [--calls 30] [--rounds 7] [--fresh 3]``.
One Python function, ``search`` (the issues whose title shares a word with a query), is
called three ways, in interleaved rounds:

- ``held``: a tool call of an MCP server (this file with ``--serve``, the official SDK's
  ``MCPServer``, stdio) that is already running, as ``bees run`` makes it for a stage's
  second call: :meth:`~bees_cli.agents.mcp_sessions.McpSessions.call` (bounds and the
  ping that checks the held server still answers included);
- ``subprocess``: this file with ``--once`` in a fresh Python process, the query as JSON on
  stdin and the answer on stdout, as a script add-on is run (the baseline);
- ``fresh``: :func:`~bees_cli.agents.mcp_addon.call_tool`, a server started, asked and
  stopped for the one call, as ``bees action`` from a command agent does (``--fresh`` calls
  a round; it costs a Python start and the SDK's import and handshake).

Prints, per way, the median (min–max) over the rounds of the wall time per call, and the
ratio held / subprocess per round.
"""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

# only what ``--once`` needs is imported at the top: the baseline pays a lean start

ISSUES = [f"issue {n}: {words}" for n, words in enumerate(
    ["export drops the last row", "dark mode links unreadable", "login times out on vpn",
     "search ignores accents", "calendar shows wrong week"] * 20)]
"""What ``search`` looks through (100 titles)."""


def search(query: str) -> str:
    """Return the titles sharing a word with ``query``, one per line."""
    wanted = set(re.findall(r"[a-z0-9]+", query.lower()))
    return "\n".join(t for t in ISSUES if wanted & set(re.findall(r"[a-z0-9]+", t)))


def serve() -> None:
    """Serve ``search`` as an MCP tool over stdio."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench", log_level="WARNING")
    server.tool()(search)
    server.run()


def once() -> None:
    """Read ``{"query": …}`` on stdin, print ``search``'s answer (a script add-on's shape)."""
    print(search(json.load(sys.stdin)["query"]))


async def timed(call: Callable[[], Awaitable[str]], count: int) -> float:
    """Return ms per call of ``count`` calls in a row (each answer checked)."""
    import time

    started = time.perf_counter()
    for _ in range(count):
        assert "login times out" in await call()
    return (time.perf_counter() - started) / count * 1e3


async def main(calls: int, rounds: int, fresh: int) -> None:
    """Run the interleaved rounds and print the figures."""
    import asyncio
    import os
    import statistics
    from pathlib import Path

    from bees_cli.agents.mcp_addon import call_tool
    from bees_cli.agents.mcp_sessions import McpSessions, SessionKey
    from bees_cli.workspace.models import McpServer

    script = str(Path(__file__).resolve())
    server = McpServer(command=[sys.executable, script, "--serve"], start_seconds=30)
    root, environ = str(Path.cwd()), dict(os.environ)
    arguments = {"query": "login vpn"}
    sessions = McpSessions()
    key = SessionKey(item_id="bench", stage="S", round=1, attempt=1, piece=None, addon="b")

    async def held() -> str:
        return (await sessions.call(key, server, "search", arguments, root=root,
                                    environ=environ, cwd=root)).text

    async def subprocess() -> str:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, script, "--once", stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE)
        out, _ = await proc.communicate(json.dumps(arguments).encode())
        assert proc.returncode == 0
        return out.decode()

    async def started_each_time() -> str:
        return (await call_tool(server, "search", arguments, root=root, environ=environ,
                                cwd=root)).text

    await held()  # the server runs before the first round: what is measured is a call
    ways: dict[str, tuple[Callable[[], Awaitable[str]], int]] = {
        "held": (held, calls), "subprocess": (subprocess, calls),
        "fresh": (started_each_time, fresh)}
    found: dict[str, list[float]] = {way: [] for way in ways if ways[way][1]}
    try:
        for _ in range(rounds):
            for way, (call, count) in ways.items():
                if count:
                    found[way].append(await timed(call, count))
    finally:
        await sessions.close_all()
    print(f"load {os.getloadavg()[0]:.1f}; median (min-max) ms per call over {rounds} "
          f"interleaved rounds ({calls} calls a round, fresh {fresh})")
    for way, values in found.items():
        print(f"{way:10} {statistics.median(values):8.2f} ({min(values):.2f}-{max(values):.2f})")
    ratios = [h / s for h, s in zip(found["held"], found["subprocess"], strict=True)]
    print(f"ratio held / subprocess {statistics.median(ratios):.3f} "
          f"({min(ratios):.3f}-{max(ratios):.3f})")
    if "fresh" in found:
        ratios = [f / s for f, s in zip(found["fresh"], found["subprocess"], strict=True)]
        print(f"ratio fresh / subprocess {statistics.median(ratios):.1f} "
              f"({min(ratios):.1f}-{max(ratios):.1f})")


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    elif sys.argv[1:] == ["--once"]:
        once()
    else:
        import argparse
        import asyncio

        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument("--calls", type=int, default=30, help="held and subprocess "
                            "calls per round")
        parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds")
        parser.add_argument("--fresh", type=int, default=3, help="fresh-server calls per "
                            "round (0: none)")
        parser.add_argument("--quick", action="store_true",
                            help="one round of 3 calls and one fresh call (a smoke run)")
        args = parser.parse_args()
        if args.quick:
            args.calls, args.rounds, args.fresh = 3, 1, 1
        asyncio.run(main(args.calls, args.rounds, args.fresh))
