"""Engine-owned views of an item's snapshot: only what the workflow reads, versioned, lenient.

Why: the workflow's input is part of Temporal's history. If it carried the strict workspace
YAML models, removing or tightening a YAML field would break the replay of running items.
These views keep only what the engine decides with, ignore unknown fields (old histories
carry the whole workspace snapshot) and say their ``version``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bees_cli.rules import GATED_KINDS, UNDECLARED_KIND

__all__ = ["GATED_KINDS", "SNAPSHOT_VERSION", "ActionView", "AddonView", "AgentView",
           "EngineSnapshot", "LoopView", "ProcessView", "StageView", "View"]

SNAPSHOT_VERSION = 1
"""Version of :class:`EngineSnapshot` this code writes."""

class View(BaseModel):
    """Base of the views: unknown fields are ignored, values are frozen."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class StageView(View):
    """One stage: ``name``, ``kind`` (``work``, ``review``, ``done``), the stage it
    ``reviews`` and whether a person's ``approval`` is required."""

    name: str
    kind: str
    reviews: str | None = None
    approval: Literal["required", "none"] | str = "none"
    checks: list[dict[str, Any]] = Field(default_factory=list)
    """A review stage's ``checks:`` (run by ``bees.review_checks``; the workflow only asks
    whether there are any)."""


class ProcessView(View):
    """The process: its ``title`` and ordered ``stages``."""

    title: str | None = None
    stages: list[StageView] = Field(default_factory=list)


class LoopView(View):
    """What the workflow's model loop decides with: the turn limit, the token budget
    (None: none) and how tools are asked for (``native`` or ``json``)."""

    max_turns: int = 20
    token_budget: int | None = None
    tool_mode: str = "native"


class AgentView(View):
    """An agent as the workflow sees it: its ``tools`` (``ADDON.ACTION``), its cap of
    concurrent runs on one computer (None: no cap) and, for a model agent, its ``loop``."""

    tools: list[str] = Field(default_factory=list)
    max_concurrent_runs: int | None = None
    loop: LoopView | None = None

    @model_validator(mode="before")
    @classmethod
    def _loop_of_runner(cls, data: Any) -> Any:
        """Read ``loop`` from a workspace agent's model ``runner`` (the snapshot's form)."""
        if isinstance(data, dict) and "loop" not in data:
            runner = data.get("runner")
            if isinstance(runner, dict) and "model" in runner:
                keys = ("max_turns", "token_budget", "tool_mode")
                data = {**data, "loop": {k: runner[k] for k in keys if k in runner}}
        return data


class ActionView(View):
    """An add-on action: its ``kind`` (read, write, send, post, delete, pay) and argv."""

    kind: str
    command: list[str] = Field(default_factory=list)


class AddonView(View):
    """An add-on: its actions by name."""

    actions: dict[str, ActionView] = Field(default_factory=dict)


class EngineSnapshot(View):
    """What the item's workflow needs of its snapshot (the whole one is stored once, by digest).

    Attributes:
        version: :data:`SNAPSHOT_VERSION` when written by this code (1 for old histories).
        process_name: the process's name.
        process: its stages.
        agents: agent name → view (tools, cap).
        addons: add-on name → view (actions).
        workspace_root: the workspace folder, absolute.
        item_agents: agents named on the item, in order.
        item_folders: folders named on the item, in order.
    """

    version: int = 1
    process_name: str
    process: ProcessView
    agents: dict[str, AgentView] = Field(default_factory=dict)
    addons: dict[str, AddonView] = Field(default_factory=dict)
    workspace_root: str = ""
    item_agents: list[str] = Field(default_factory=list)
    item_folders: list[str] = Field(default_factory=list)
    max_piece_depth: int = 2
    """How deep pieces may nest (``bees.yaml``; issue 14)."""

    @model_validator(mode="before")
    @classmethod
    def _mcp_tools_as_actions(cls, data: Any) -> Any:
        """Read an MCP add-on of the workspace snapshot (``mcp``, ``kinds``) as actions: each
        tool its ``kinds`` name or an agent's ``tools`` name, with its declared kind, else
        :data:`~bees_cli.rules.UNDECLARED_KIND` (the run holds it on an approval stage; a
        tool the server marks read-only is decided ``read`` by ``bees action``, which then
        never asks the run). Issue 25; old histories carry no ``mcp``."""
        if not isinstance(data, dict) or not isinstance(data.get("addons"), dict):
            return data
        agents = data["agents"] if isinstance(data.get("agents"), dict) else {}
        addons = dict(data["addons"])
        for name, addon in addons.items():
            if not isinstance(addon, dict) or not addon.get("mcp") or addon.get("actions"):
                continue
            kinds = dict(addon.get("kinds") or {})
            named = list(kinds)
            for agent in agents.values():
                tools = agent.get("tools", []) if isinstance(agent, dict) else []
                named += [t.split(".", 1)[1] for t in tools
                          if isinstance(t, str) and t.split(".", 1)[0] == name and "." in t]
            addons[name] = {**addon, "actions": {
                tool: {"kind": kinds.get(tool, UNDECLARED_KIND)} for tool in named}}
        return {**data, "addons": addons}

    def stage(self, name: str) -> StageView:
        """Return the stage ``name``.

        Raises:
            StopIteration: no such stage (a bug of the caller: names come from the process).
        """
        return next(s for s in self.process.stages if s.name == name)
