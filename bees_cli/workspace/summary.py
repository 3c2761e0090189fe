"""One-line and JSON summaries of a loaded workspace, for ``bees validate``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bees_cli.rules import ToolKindWhy, mcp_tool_kind
from bees_cli.workspace.loader import Workspace
from bees_cli.workspace.models import Addon, Agent

_NOUNS = (
    ("processes", "process", "processes"),
    ("agents", "agent", "agents"),
    ("schedules", "schedule", "schedules"),
    ("folders", "folder", "folders"),
    ("addons", "add-on", "add-ons"),
)


def counts(workspace: Workspace) -> dict[str, int]:
    """Return kind → number of objects, e.g. ``{"processes": 1, "agents": 2, …}``."""
    return {kind: len(getattr(workspace, kind)) for kind, _one, _many in _NOUNS}


def summary_line(workspace: Workspace) -> str:
    """Return ``ok: 1 process, 2 agents, 1 schedule, 1 folder, 0 add-ons``."""
    found = counts(workspace)
    parts = [f"{found[kind]} {one if found[kind] == 1 else many}" for kind, one, many in _NOUNS]
    return "ok: " + ", ".join(parts)


def summary_json(workspace: Workspace) -> dict[str, Any]:
    """Return ``{"ok": true, "workspace", "name", "counts", "warnings"}`` for ``--json``."""
    return {
        "ok": True,
        "workspace": str(workspace.root),
        "name": workspace.config.name,
        "counts": counts(workspace),
        "warnings": [warning.to_json() for warning in workspace.warnings],
        "tools": [{"addon": r.addon, "tool": r.tool, "kind": r.kind, "why": r.why}
                  for r in declared_tool_kinds(workspace)],
    }


@dataclass(frozen=True, order=True)
class ToolKind:
    """One tool of an MCP add-on with its kind and why (:func:`bees_cli.rules.mcp_tool_kind`):
    ``why`` is ``declared`` (the add-on's ``kinds``), ``read_only_hint`` (the server marks it
    read-only) or ``undeclared`` (gated: held for approval on an approval stage)."""

    addon: str
    tool: str
    kind: str
    why: ToolKindWhy

    def words(self, *, live: bool = True) -> str:
        """Why, for people: ``declared``, ``marked read-only by the server``, ``not declared
        and not marked read-only`` (``live``), or offline ``not declared: gated unless the
        server marks it read-only``."""
        if self.why == "declared":
            return "declared"
        if self.why == "read_only_hint":
            return "marked read-only by the server"
        return ("not declared and not marked read-only" if live
                else "not declared: gated unless the server marks it read-only")


def named_tools(name: str, addon: Addon, agents: Mapping[str, Agent]) -> list[str]:
    """Return the tools of add-on ``name`` the workspace names: its ``kinds`` keys, then the
    tools of enabled agents (``ADDON.TOOL``), each once, in that order."""
    named = list(addon.kinds)
    for agent in agents.values():
        if agent.enabled:
            named += [tool.split(".", 1)[1] for tool in agent.tools
                      if tool.split(".", 1)[0] == name]
    return list(dict.fromkeys(named))


def declared_tool_kinds(workspace: Workspace) -> list[ToolKind]:
    """Return the kind of every tool the workspace names of its MCP add-ons, known without
    their servers (``bees validate``): a declared kind, else ``gated`` (the server may yet
    mark it read-only: ``bees addons`` asks it). Sorted by add-on, then tool."""
    rows = []
    for name, addon in workspace.addons.items():
        if addon.mcp is None:
            continue
        for tool in named_tools(name, addon, workspace.agents):
            kind, why = mcp_tool_kind(addon.kinds.get(tool), None)
            rows.append(ToolKind(name, tool, kind, why))
    return sorted(rows)


def tool_kind_lines(rows: list[ToolKind], *, live: bool) -> list[str]:
    """Return one line per tool: ``add-on notes: send_email send (declared)``."""
    return [f"add-on {r.addon}: {r.tool} {r.kind} ({r.words(live=live)})" for r in rows]
