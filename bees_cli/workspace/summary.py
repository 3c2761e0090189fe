"""One-line and JSON summaries of a loaded workspace, for ``bees validate``."""

from __future__ import annotations

from typing import Any

from bees_cli.workspace.loader import Workspace

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
    }
