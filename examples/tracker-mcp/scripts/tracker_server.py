"""Example MCP server: a tiny issue tracker in a folder, spoken to over stdio.

Run as ``python tracker_server.py FOLDER``: the issues people filed before are in
``FOLDER/known.json``; the ones filed through this server go to ``FOLDER/filed.json``.
Written with the official MCP Python SDK (``MCPServer``, formerly FastMCP); any MCP server,
in any language, is used by Bees the same way.

Tools:

- ``search_issues`` (marked read-only): the issues whose title shares a word with the query;
- ``file_issue``: files a new issue and answers its number. The workspace declares it
  ``post``, so on an approval stage it waits for a person, and runs at most once.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

FOLDER = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
KNOWN = FOLDER / "known.json"
FILED = FOLDER / "filed.json"

STOP = {"the", "and", "for", "with", "from", "when", "then", "not", "out"}
"""Words too common to make two titles alike."""

server = MCPServer("tracker", log_level="WARNING")


def _read(path: Path) -> list[dict[str, object]]:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []


def _words(text: str) -> set[str]:
    return {word for word in re.findall(r"[a-z0-9]+", text.lower())
            if len(word) > 2 and word not in STOP}


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def search_issues(query: str) -> str:
    """Find the tracker's issues whose title shares a word (not a common one) with
    ``query``; one per line."""
    wanted = _words(query)
    found = [f"#{issue['number']} [{issue['state']}] {issue['title']}"
             for issue in _read(KNOWN) + _read(FILED) if wanted & _words(str(issue["title"]))]
    return "\n".join(found) or f"no issue matches {query!r}"


@server.tool()
def file_issue(title: str, body: str) -> str:
    """File a new issue with ``title`` and ``body``; answer its number."""
    filed = _read(FILED)
    number = 1 + max((int(str(issue["number"])) for issue in _read(KNOWN) + filed), default=0)
    filed.append({"number": number, "title": title, "body": body, "state": "open"})
    partial = FILED.with_suffix(".partial")
    partial.write_text(json.dumps(filed, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, FILED)  # whole or not at all
    return f"filed #{number}: {title}"


if __name__ == "__main__":
    server.run()
