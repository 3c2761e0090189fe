"""The item snapshot: the parts of the workspace a work item runs with, frozen at creation."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from bees_cli.errors import NotFound
from bees_cli.suggest import did_you_mean
from bees_cli.workspace.models import Addon, Agent, Folder, Process

if TYPE_CHECKING:
    from bees_cli.workspace.loader import Workspace


class ItemSnapshot(BaseModel):
    """Everything a run of one work item needs from the workspace, copied at creation.

    Why: a later edit of the workspace must not change an item that is already
    running. The engine stores it once per item, by :meth:`digest`
    (:mod:`bees_cli.engine.snapshot_store`), and passes Temporal only its own view
    (:class:`bees_cli.engine.snapshot.EngineSnapshot`) and the digest, so the YAML
    models can change without breaking the replay of running items. It round-trips
    through JSON (``model_dump(mode="json")`` / ``model_validate``).

    Attributes:
        process_name: the process's name (its file name).
        process: the process with its stages.
        agents: every agent declared in the workspace, name → model (the last tier of
            agent choice may pick any of them).
        addons: every declared add-on, name → model.
        folders: every declared folder, name → model.
        default_agent: the workspace's ``default_agent``, or None.
        workspace_root: the workspace folder, absolute; relative folder paths and
            ``${BEES_WORKSPACE}`` start here.
        item_folders: folders named on the item (``--folder`` or the schedule), in order.
        item_agents: agents named on the item (``--agent`` or the schedule), in order.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    process_name: str
    process: Process
    agents: dict[str, Agent] = Field(default_factory=dict)
    addons: dict[str, Addon] = Field(default_factory=dict)
    folders: dict[str, Folder] = Field(default_factory=dict)
    default_agent: str | None = None
    workspace_root: str
    item_folders: list[str] = Field(default_factory=list)
    item_agents: list[str] = Field(default_factory=list)
    max_piece_depth: int = 2
    """How deep pieces may nest (``bees.yaml``'s ``max_piece_depth``; issue 14)."""

    def canonical_json(self) -> str:
        """Return the snapshot as compact JSON with sorted keys (the input of :meth:`digest`)."""
        return json.dumps(
            self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )

    def digest(self) -> str:
        """Return the SHA-256 of :meth:`canonical_json` as 64 lowercase hex digits.

        Equal snapshots give equal digests, whatever the order their dicts were built in.
        """
        return hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()


def _check_names(kind: str, plural: str, names: Iterable[str], declared: Sequence[str]) -> None:
    for name in names:
        if name not in declared:
            listed = ", ".join(declared) if declared else "none"
            raise NotFound(
                f"no {kind} named '{name}' in the workspace{did_you_mean(name, declared)}",
                hint=f"declared {plural}: {listed}",
            )


def make_snapshot(
    workspace: Workspace,
    process: str,
    *,
    item_agents: Sequence[str] = (),
    item_folders: Sequence[str] = (),
) -> ItemSnapshot:
    """Freeze what a new work item of ``process`` needs from ``workspace``.

    Args:
        workspace: the loaded workspace.
        process: the process's name.
        item_agents: agents named on the item, in order of preference.
        item_folders: folders the item reads, in order.

    Returns:
        The :class:`ItemSnapshot` (all agents, add-ons and folders of the workspace).

    Raises:
        NotFound: ``process``, an agent of ``item_agents`` or a folder of
            ``item_folders`` is not declared; the message suggests the near name.
    """
    _check_names("process", "processes", [process], list(workspace.processes))
    _check_names("agent", "agents", item_agents, list(workspace.agents))
    _check_names("folder", "folders", item_folders, list(workspace.folders))
    return ItemSnapshot(
        process_name=process,
        process=workspace.processes[process],
        agents=dict(workspace.agents),
        addons=dict(workspace.addons),
        folders=dict(workspace.folders),
        default_agent=workspace.config.default_agent,
        workspace_root=str(workspace.root.resolve()),
        item_folders=list(dict.fromkeys(item_folders)),
        item_agents=list(dict.fromkeys(item_agents)),
        max_piece_depth=workspace.config.max_piece_depth,
    )
