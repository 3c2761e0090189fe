"""``bees action ADDON.TOOL`` for an MCP add-on: the tool's kind and schema asked of its server,
and the call; the journal, intents and approval gate around them are ``actions.py``'s, unchanged.

Inside ``bees run`` (a model agent's tool call) a local server is the stage's, held by the
run's :class:`~bees_cli.agents.mcp_sessions.McpSessions` across the stage's calls; elsewhere
(``bees action`` from a command agent) it runs once per list and call.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bees_cli.errors import Refused, UserError

if TYPE_CHECKING:
    from bees_cli.agents.mcp_sessions import McpSessions, SessionKey
    from bees_cli.workspace.models import Addon


@dataclass(frozen=True)
class McpAction:
    """An MCP tool as ``bees action`` runs it: its add-on's model, the tool's name and the
    workspace folder (``${BEES_WORKSPACE}``); ``stage_server``, the run's held servers and
    the key of this stage's server, taken from the typed action call (None: a server per
    list and call); ``cwd``, the folder a server is started in (None: the current one)."""

    addon: Addon
    tool: str
    root: str
    stage_server: tuple[McpSessions, SessionKey] | None = None
    cwd: str | None = None

    def held(self) -> tuple[McpSessions, SessionKey] | None:
        """Return the run's sessions and the key of this stage's server of the add-on, or
        None when the server is not held (outside ``bees run``, or a remote server)."""
        assert self.addon.mcp is not None
        return None if self.addon.mcp.command is None else self.stage_server


def mcp_rules(name: str, action: McpAction,
              environ: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """Ask the add-on's server for the tool: return its kind (:func:`bees_cli.rules.
    mcp_tool_kind`: declared, else ``read`` when marked read-only, else gated) and its input
    schema. Blocking: starts (or reaches) the server once, bounded; a held server (the
    run's) lists its tools once per stage.

    Args:
        name: ``ADDON.TOOL`` (named in messages).
        action: the add-on, tool and workspace folder.
        environ: the stage's environment (values of the add-on's ``env``/``headers`` names).

    Raises:
        McpNotReached: the server did not start or answer (a failure, exit 1; the reason).
        Refused: the server has no such tool.
    """
    from bees_cli.agents.mcp_addon import list_tools, run_blocking
    from bees_cli.rules import mcp_tool_kind

    server = action.addon.mcp
    assert server is not None
    held = action.held()
    if held is None:
        tools = run_blocking(lambda: list_tools(server, root=action.root, environ=environ))
    else:
        sessions, key = held
        tools = sessions.run_here(lambda: sessions.tools(
            key, server, root=action.root, environ=environ, cwd=action.cwd or os.getcwd()))
    found = next((tool for tool in tools if tool.name == action.tool), None)
    if found is None:
        listed = ", ".join(sorted(tool.name for tool in tools)) or "none"
        raise Refused(f"{name}: the add-on's server has no tool {action.tool} "
                      f"(its tools: {listed})")
    kind, _why = mcp_tool_kind(action.addon.kinds.get(action.tool), found.read_only_hint)
    return kind, found.input_schema


async def run_mcp(action: McpAction, data: Any, *, environ: Mapping[str, str],
                  cwd: str | None) -> tuple[int, str, str | None]:
    """Call the tool once with ``data``; return ``(exit_code, stdout, binary)`` as a script
    add-on's: 0 and the tool's text, or 1 and the tool's error when it failed; ``binary`` is
    the media type of binary content in the answer, else None.

    Args:
        action: the add-on, tool and workspace folder.
        data: the input (a JSON object).
        environ: the stage's environment (values of the add-on's ``env``/``headers`` names).
        cwd: the folder a local server runs in (None: the current folder, as a script's).

    Raises:
        UserError: the input is not a JSON object.
        McpNotReached: nothing was sent (a failure, exit 1).
        McpCallCut: sent and not answered: it may have taken effect.
    """
    from bees_cli.agents.mcp_addon import call_tool, result_json

    server = action.addon.mcp
    assert server is not None
    if not isinstance(data, dict):
        raise UserError(f"the input of an MCP tool is a JSON object, got {type(data).__name__}")
    held = action.held()
    if held is None:
        result = await call_tool(server, action.tool, data, root=action.root, environ=environ,
                                 cwd=cwd or os.getcwd())
    else:
        sessions, key = held
        result = await sessions.call(key, server, action.tool, data, root=action.root,
                                     environ=environ, cwd=cwd or os.getcwd())
    return (1 if result.is_error else 0), result_json(result), result.binary
