"""Every MCP tool has a kind (issue 25, point 2): one pure decision, tested as a table."""

from __future__ import annotations

import pytest

from bees_cli.rules import GATED_KINDS, UNDECLARED_KIND, mcp_tool_kind, needs_approval


@pytest.mark.parametrize(("declared", "read_only_hint", "kind", "why"), [
    ("send", None, "send", "declared"),
    ("send", True, "send", "declared"),        # the workspace wins over the server's hint
    ("read", False, "read", "declared"),
    ("write", True, "write", "declared"),
    (None, True, "read", "read_only_hint"),
    (None, False, "gated", "undeclared"),
    (None, None, "gated", "undeclared"),       # no annotations at all: gated, never ungated
])
def test_the_kind_of_an_mcp_tool(declared: str | None, read_only_hint: bool | None,
                                 kind: str, why: str) -> None:
    assert mcp_tool_kind(declared, read_only_hint) == (kind, why)


def test_an_undeclared_tool_is_held_on_an_approval_stage_like_send() -> None:
    assert UNDECLARED_KIND == "gated"
    assert GATED_KINDS == frozenset({"send", "post", "delete", "pay", "gated"})
    assert needs_approval(UNDECLARED_KIND, "required") is True
    assert needs_approval(UNDECLARED_KIND, "none") is False
    assert needs_approval("read", "required") is False


def test_the_default_bounds_of_an_mcp_server_are_10_and_60_seconds() -> None:
    from bees_cli.rules import MCP_CALL_SECONDS, MCP_START_SECONDS
    from bees_cli.workspace.models import McpServer

    server = McpServer.model_validate({"command": ["notes-server"]})
    assert (server.start_seconds, server.call_seconds) == (10.0, 60.0)
    assert (MCP_START_SECONDS, MCP_CALL_SECONDS) == (10.0, 60.0)
