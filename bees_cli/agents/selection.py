"""Agent choice for a stage (DESIGN.md, Rules: agent choice); pure and deterministic.

Candidates come in four tiers, and the first usable one wins:

1. the agents named on the work item (not on a review stage),
2. the stage's agents in the process,
3. the workspace's default agent,
4. every declared agent in name order.

A candidate is usable when it is declared, enabled (a command or a model runner) and every
add-on its tools use is connected on this computer. On a review
stage, the agent that did the work under review is never used. Each candidate looked at
and not used is kept with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from bees_cli.machine.connections import AddonConnection
from bees_cli.why import AddonMissing, Reason, SkippedAgent

if TYPE_CHECKING:  # types only: `bees item show` reads picks without the workspace's models
    from bees_cli.workspace.models import Agent, Stage

REASON_ITEM = "named on the item"
REASON_DEFAULT = "workspace default"
REASON_BY_NAME = "first enabled agent by name"

REASON_CALLER = "named by the caller"
"""The pick reason of the agent a piece's caller asked for (the first tier of a piece's
choice, :func:`bees_cli.agents.pieces.choose_piece_agent`)."""

PickTier = Literal["item", "stage", "default", "by_name", "caller", "none"]
"""Which tier of agent choice yielded the agent (``none``: no agent was usable): what
``--json`` gives for a pick's reason, worded by :func:`pick_words`."""

PICK_WORDS: dict[str, str] = {
    "item": REASON_ITEM, "stage": "the stage's agents", "default": REASON_DEFAULT,
    "by_name": REASON_BY_NAME, "caller": REASON_CALLER, "none": "no enabled agent"}
"""How people read each :data:`PickTier`."""

WHY_UNDECLARED = "not declared in the workspace"
WHY_DISABLED = "disabled"
WHY_REVIEWED = "did the work under review"


@dataclass(frozen=True)
class Skipped:
    """A candidate agent that was looked at and not used, and why (one short phrase).

    ``why`` is one of ``"not declared in the workspace"``, ``"did the work under review"``,
    ``"disabled"`` or ``"add-on NAME not connected (MISSING, …)"`` (several add-ons are
    joined with ``", "``).
    """

    agent: str
    why: str

    def to_json(self) -> dict[str, str]:
        """Return ``{"agent", "why"}``."""
        return {"agent": self.agent, "why": self.why}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Skipped:
        """Rebuild from :meth:`to_json` output."""
        return cls(agent=str(data["agent"]), why=str(data["why"]))


@dataclass(frozen=True)
class Pick:
    """The outcome of :func:`choose_agent`.

    Attributes:
        agent: the chosen agent's name, or None when no agent can do the stage.
        reason: the tier that yielded the agent (``"named on the item"``,
            ``"stage agents of PROCESS.STAGE"``, ``"workspace default"``,
            ``"first enabled agent by name"``); when ``agent`` is None, a one-line
            explanation: ``"no enabled agent for STAGE: writer disabled; …"``.
        skipped: every candidate looked at and not used, in the order looked at,
            each agent once with its first reason.
        why: when ``agent`` is None, ``reason`` as its code (``no_agent``, each skipped
            agent with its code; issue 24, point 3); not in :meth:`to_json`.

    Why JSON: a pick travels through Temporal and is stored with the item.
    """

    agent: str | None
    reason: str
    skipped: tuple[Skipped, ...] = ()
    why: Reason | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        """Return ``{"agent", "reason", "skipped": [{"agent", "why"}, …]}`` (JSON-safe)."""
        return {
            "agent": self.agent,
            "reason": self.reason,
            "skipped": [s.to_json() for s in self.skipped],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Pick:
        """Rebuild from :meth:`to_json` output."""
        agent = data.get("agent")
        return cls(
            agent=None if agent is None else str(agent),
            reason=str(data["reason"]),
            skipped=tuple(Skipped.from_json(s) for s in data.get("skipped", ())),
        )


def pick_tier(reason: str | None) -> PickTier | None:
    """Return the :data:`PickTier` of a pick's stored ``reason`` (a tier given is returned
    as it is; None stays None)."""
    if reason is None:
        return None
    fixed: dict[str, PickTier] = {REASON_ITEM: "item", REASON_DEFAULT: "default",
                                  REASON_BY_NAME: "by_name", REASON_CALLER: "caller",
                                  "item": "item", "stage": "stage", "default": "default",
                                  "by_name": "by_name", "caller": "caller", "none": "none"}
    if reason in fixed:
        return fixed[reason]
    return "stage" if reason.startswith("stage agents of ") else "none"


def pick_words(reason: str | None) -> str:
    """Return a pick's reason as people read it: a :data:`PickTier` worded
    (:data:`PICK_WORDS`), a stored reason as it is, None as ``not picked yet``."""
    if reason is None:
        return "not picked yet"
    return PICK_WORDS.get(reason, reason)


def tool_addons(agent: Agent) -> list[str]:
    """Return the add-ons ``agent``'s tools use (``ADDON.ACTION`` → ``ADDON``), first use first."""
    names: list[str] = []
    for tool in agent.tools:
        addon = tool.split(".", 1)[0]
        if addon not in names:
            names.append(addon)
    return names


def _tiers(process: str, stage: Stage, item_agents: Sequence[str], default_agent: str | None,
           agents: Mapping[str, Agent]) -> list[tuple[str, Sequence[str]]]:
    """The candidates of :func:`choose_agent` in order, each group with its reason: the
    item's agents (not on a review stage), the stage's, the workspace default, then every
    declared agent by name."""
    tiers: list[tuple[str, Sequence[str]]] = []
    if stage.kind != "review":
        tiers.append((REASON_ITEM, item_agents))
    tiers.append((f"stage agents of {process}.{stage.name}", stage.agents))
    if default_agent is not None:
        tiers.append((REASON_DEFAULT, [default_agent]))
    tiers.append((REASON_BY_NAME, sorted(agents)))
    return tiers


def choose_agent(
    *,
    process: str,
    stage: Stage,
    item_agents: Sequence[str],
    default_agent: str | None,
    agents: Mapping[str, Agent],
    addon_connected: Mapping[str, AddonConnection] | Callable[[str], AddonConnection],
    reviewed_by: str | None,
) -> Pick:
    """Choose the agent for ``stage`` of ``process`` (DESIGN.md, Rules: agent choice).

    Args:
        process: the process name, used in the reason ``"stage agents of PROCESS.STAGE"``.
        stage: the stage to staff.
        item_agents: agents named on the work item, in order; ignored on a review stage.
        default_agent: the workspace's ``default_agent``, or None.
        agents: every declared agent, name → model.
        addon_connected: add-on name → its connection here, as a mapping (an add-on
            missing from it counts as not declared) or a callable (called at most once
            per add-on).
        reviewed_by: on a review stage, the agent whose work is under review; never used.

    Returns:
        The :class:`Pick`; ``agent`` is None when no candidate is usable. Never raises
        for unknown names: they are skipped as not declared.
    """
    is_review = stage.kind == "review"
    tiers = _tiers(process, stage, item_agents, default_agent, agents)
    connections: dict[str, AddonConnection] = {}

    def connection(name: str) -> AddonConnection:
        if name not in connections:
            if callable(addon_connected):
                connections[name] = addon_connected(name)
            else:
                connections[name] = addon_connected.get(
                    name, AddonConnection(name, False, [WHY_UNDECLARED])
                )
        return connections[name]

    def why_not(name: str) -> SkippedAgent | None:
        agent = agents.get(name)
        if agent is None:
            return SkippedAgent(agent=name, why="not_declared")  # WHY_UNDECLARED
        if is_review and reviewed_by is not None and name == reviewed_by:
            return SkippedAgent(agent=name, why="under_review")  # WHY_REVIEWED
        if not agent.enabled:
            return SkippedAgent(agent=name, why="disabled")  # WHY_DISABLED
        missing = [AddonMissing(addon=addon, missing=list(state.missing))
                   for addon in tool_addons(agent)
                   if not (state := connection(addon)).connected]
        return SkippedAgent(agent=name, why="addons_not_connected", addons=missing) \
            if missing else None

    skipped: list[SkippedAgent] = []
    seen: set[str] = set()
    for reason, candidates in tiers:
        for name in candidates:
            if name in seen:
                continue
            seen.add(name)
            why = why_not(name)
            if why is None:
                return Pick(agent=name, reason=reason, skipped=_phrased(skipped))
            skipped.append(why)
    none = Reason(code="no_agent", stage=stage.name, skipped=skipped)
    return Pick(agent=None, reason=none.words(), skipped=_phrased(skipped), why=none)


def _phrased(skipped: list[SkippedAgent]) -> tuple[Skipped, ...]:
    """Return each skipped agent with its reason as a phrase (``add-on gmail not connected
    (env GMAIL_TOKEN)``), as a pick stores it."""
    return tuple(Skipped(s.agent, s.why_words()) for s in skipped)
