"""Secrets by reference (issue 27, point 3): the names of the environment variables a stage's
work needs, never their values; an offer to a pool of runners carries them, and a runner
that lacks one refuses the offer, naming it, instead of running with another key."""

from __future__ import annotations

import os
from collections.abc import Mapping

from bees_cli.agents.eligibility import find_stage
from bees_cli.agents.selection import choose_agent, tool_addons
from bees_cli.agents.snapshot import ItemSnapshot
from bees_cli.machine.connections import AddonConnection
from bees_cli.workspace.runners import ModelRunner


def secret_names(snapshot: ItemSnapshot, stage_name: str) -> list[str]:
    """Return the names of the secrets stage ``stage_name`` of the item needs, sorted: the
    model agent's ``api_key_env`` and, of each add-on its tools use, its ``connection.env``
    and its MCP server's ``env`` and header variables.

    The agent is the one agent choice gives with every add-on taken as connected
    (:func:`~bees_cli.agents.selection.choose_agent`: the offering computer does not know
    the runner's connections); a ``done`` stage, or none usable, needs none.

    Raises:
        NotFound: the process has no stage ``stage_name``.
    """
    stage = find_stage(snapshot, stage_name)
    if stage.kind == "done":
        return []
    pick = choose_agent(
        process=snapshot.process_name, stage=stage, item_agents=snapshot.item_agents,
        default_agent=snapshot.default_agent, agents=snapshot.agents,
        addon_connected=lambda name: AddonConnection(name, True, []), reviewed_by=None)
    agent = None if pick.agent is None else snapshot.agents.get(pick.agent)
    if agent is None:
        return []
    names: set[str] = set()
    if isinstance(agent.runner, ModelRunner) and agent.runner.model.api_key_env:
        names.add(agent.runner.model.api_key_env)
    for addon_name in tool_addons(agent):
        addon = snapshot.addons.get(addon_name)
        if addon is not None:
            names.update(addon.connection.env)
            if addon.mcp is not None:  # a local server's env, a remote one's header keys
                names.update(addon.mcp.env)
                names.update(addon.mcp.headers.values())
    return sorted(names)


def missing_secrets(names: list[str], environ: Mapping[str, str] | None = None) -> list[str]:
    """Return the names of ``names`` unset or empty in ``environ`` (default ``os.environ``)."""
    env = os.environ if environ is None else environ
    return [name for name in names if not env.get(name)]
