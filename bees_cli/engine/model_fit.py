"""What the model call activity sends: the agent's read-kind tools (run together) and the
conversation fitted into the model's context (issue 26, point 7)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from bees_cli.rules import mcp_tool_kind

if TYPE_CHECKING:
    from bees_cli.agents.chat_wire import Message, ToolDef
    from bees_cli.agents.mcp_addon import McpTool
    from bees_cli.agents.snapshot import ItemSnapshot
    from bees_cli.workspace.models import ModelRunner


def read_tools(snapshot: ItemSnapshot, agent: str, mcp: Mapping[str, McpTool]) -> set[str]:
    """Return the agent's tools of kind ``read`` (``read_file``; add-on actions and MCP tools
    whose kind is ``read``, :func:`~bees_cli.rules.mcp_tool_kind`): never held, changing
    nothing, so the loop may run several at once (issue 26, point 7)."""
    reads = {"read_file"}
    for tool in snapshot.agents[agent].tools:
        name, _, action = tool.partition(".")
        addon = snapshot.addons.get(name)
        if addon is None:
            continue
        if addon.mcp is not None:
            listed = mcp.get(tool)
            kind, _ = mcp_tool_kind(addon.kinds.get(action),
                                    listed.read_only_hint if listed else None)
        else:
            declared = addon.actions.get(action)
            kind = declared.kind if declared else ""
        if kind == "read":
            reads.add(tool)
    return reads


async def fitted(runner: ModelRunner, messages: list[Message], opening: int,
                  tools: list[ToolDef] | None) -> list[Message]:
    """Return ``messages`` fitted into the model's context (issue 26, point 7): the oldest
    tool results after the ``opening`` messages shortened to a note while the request's
    estimate passes the context less the reply's room (``max_reply_tokens``, else a
    quarter of the context); see :mod:`bees_cli.agents.model_context`.

    Done here, just before the HTTP call, not in the workflow: the workflow's history keeps
    every result whole (a transcript, a retry, a larger context later all see them), the
    workflow's commands do not change (no patch, old histories replay), and the context
    (asked of the server) is I/O that workflow code may not do. The same conversation and
    settings always give the same request (the estimate counts characters).
    """
    from bees_cli.agents.model_context import fit_context, server_context

    context = runner.context_tokens or await server_context(runner.model.base_url,
                                                            now=time.monotonic())
    room = runner.max_reply_tokens or context // 4
    fitted, _ = fit_context(messages, keep_first=opening, budget=context - room,
                            tools=[t.wire() for t in tools or []])
    return fitted
