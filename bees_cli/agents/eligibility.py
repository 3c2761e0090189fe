"""Eligibility: can this computer run a stage of an item now (DESIGN.md, Rules: eligibility)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bees_cli.agents.selection import WHY_UNDECLARED, Pick, choose_agent
from bees_cli.agents.snapshot import ItemSnapshot
from bees_cli.errors import NotFound
from bees_cli.machine.connections import AddonConnection, check_connection
from bees_cli.machine.links import FolderLink, resolve_folder
from bees_cli.suggest import did_you_mean
from bees_cli.why import Reason
from bees_cli.workspace.models import Stage


@dataclass(frozen=True)
class Eligibility:
    """The outcome of :func:`check_eligibility`.

    Attributes:
        ok: True when the stage can start here now.
        reasons: one human line per failed check, folders first (in
            :func:`item_reads` order), then the agent; empty when ``ok``.
        pick: the agent choice for the stage (also when not ok: it carries the skip
            reasons); None on a ``done`` stage, which needs no agent.
        folders: folder name → absolute linked path, for every folder of
            :func:`item_reads` that is linked here (all of them when ``ok``).
        whys: ``reasons`` as codes with their values, in the same order (issue 24,
            point 3: the engine stores them as they are); not in :meth:`to_json`.
    """

    ok: bool
    reasons: tuple[str, ...]
    pick: Pick | None
    folders: dict[str, str] = field(default_factory=dict)
    whys: tuple[Reason, ...] = field(default=(), compare=False)

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-safe dict ``{"ok", "reasons", "pick", "folders"}``."""
        return {
            "ok": self.ok,
            "reasons": list(self.reasons),
            "pick": None if self.pick is None else self.pick.to_json(),
            "folders": dict(self.folders),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Eligibility:
        """Rebuild from :meth:`to_json` output."""
        pick = data.get("pick")
        return cls(
            ok=bool(data["ok"]),
            reasons=tuple(str(r) for r in data.get("reasons", ())),
            pick=None if pick is None else Pick.from_json(pick),
            folders={str(k): str(v) for k, v in dict(data.get("folders", {})).items()},
        )


def find_stage(snapshot: ItemSnapshot, stage_name: str) -> Stage:
    """Return the stage ``stage_name`` of the snapshot's process.

    Raises:
        NotFound: the process has no such stage (the message suggests the near name).
    """
    names = [stage.name for stage in snapshot.process.stages]
    for stage in snapshot.process.stages:
        if stage.name == stage_name:
            return stage
    raise NotFound(
        f"process {snapshot.process_name} has no stage '{stage_name}'"
        f"{did_you_mean(stage_name, names)}",
        hint=f"its stages: {', '.join(names)}",
    )


def item_reads(snapshot: ItemSnapshot) -> list[str]:
    """Return every folder the item reads, each once: the item's folders, then each stage's
    ``reads`` and ``writes`` in process order (a folder a stage writes must be linked too).

    Why all stages and not only the next one: an item that can start here should be able
    to finish here, so a missing folder is reported before any work starts.
    """
    names = list(snapshot.item_folders)
    for stage in snapshot.process.stages:
        names.extend(stage.reads)
        names.extend(stage.writes)
    return list(dict.fromkeys(names))


def linked_reads(snapshot: ItemSnapshot) -> tuple[dict[str, str], list[Reason]]:
    """Resolve every folder the item reads on this computer (DESIGN.md, Rules: eligibility).

    Returns:
        ``(folders, reasons)``: folder name → its directory here for each linked one, and a
        reason (``folder_*``, worded ``"folder NAME: …"``) for each that is not.
    """
    root = Path(snapshot.workspace_root)
    reasons: list[Reason] = []
    folders: dict[str, str] = {}
    for name in item_reads(snapshot):
        link = resolve_folder(name, snapshot.folders.get(name), root)
        if link.linked and link.path is not None:
            folders[name] = str(link.path)
        else:
            reasons.append(folder_reason(link))
    return folders, reasons


def folder_reason(link: FolderLink) -> Reason:
    """Return why folder ``link`` is not usable here as its code (``folder_not_linked``,
    ``folder_link_not_dir``, ``folder_default_not_dir``, ``folder_env_unset``) with its
    values; ``other`` (its words) should a code not word it as the link does."""
    code = {"not_linked": "folder_not_linked", "link_not_dir": "folder_link_not_dir",
            "default_not_dir": "folder_default_not_dir", "env_unset": "folder_env_unset"}
    why = Reason.model_validate({
        "code": code.get(link.how, "other"), "folder": link.name,
        "path": link.default if link.how == "env_unset" else
        None if link.path is None else str(link.path), "env": link.env})
    words = f"folder {link.name}: {link.reason}"
    return why if why.words() == words else Reason(code="other", text=words)


def connection_check(snapshot: ItemSnapshot) -> Callable[[str], AddonConnection]:
    """Return the live check of an add-on's connection here that agent choice uses: an add-on
    the snapshot does not declare is never connected (``WHY_UNDECLARED``); an MCP add-on is
    connected when its server answers within its bound and has every tool the workspace
    names (:func:`~bees_cli.agents.mcp_addon.check_mcp`)."""
    def connected(name: str) -> AddonConnection:
        addon = snapshot.addons.get(name)
        if addon is None:
            return AddonConnection(name, False, [WHY_UNDECLARED])
        if addon.mcp is not None:  # connected means it answers here (issue 25, point 3)
            from bees_cli.agents.mcp_addon import check_mcp
            from bees_cli.workspace.summary import named_tools

            return check_mcp(name, addon, named_tools(name, addon, snapshot.agents),
                             root=snapshot.workspace_root)
        return check_connection(name, addon)

    return connected


def check_eligibility(
    *, snapshot: ItemSnapshot, stage_name: str, reviewed_by: str | None,
    connected: Callable[[str], AddonConnection] | None = None,
) -> Eligibility:
    """Check whether this computer can run stage ``stage_name`` of the item now.

    Checks, in this order: every folder of :func:`item_reads` resolves to an existing
    directory here (:func:`~bees_cli.machine.links.resolve_folder` with the snapshot's
    folder and workspace root); then, on a work or review stage, an agent is usable
    (:func:`~bees_cli.agents.selection.choose_agent` with the add-on connections checked
    live on this computer). Reads the folder links and the environment; writes nothing.

    Args:
        snapshot: the item's snapshot.
        stage_name: the stage about to start.
        reviewed_by: on a review stage, the agent whose work is under review.
        connected: an add-on's connection here by name, when the caller already asked
            (``bees doctor`` asks each add-on once); default :func:`connection_check`.

    Returns:
        The :class:`Eligibility`. Reasons read like
        ``"folder team-notes: not linked on this computer (bees link team-notes PATH)"``
        and ``"no enabled agent for Draft: writer disabled"``.

    Raises:
        NotFound: the process has no stage ``stage_name`` (a bug of the caller).
    """
    stage = find_stage(snapshot, stage_name)
    folders, whys = linked_reads(snapshot)
    if connected is None:
        connected = connection_check(snapshot)
    pick: Pick | None = None
    if stage.kind != "done":
        pick = choose_agent(
            process=snapshot.process_name,
            stage=stage,
            item_agents=snapshot.item_agents,
            default_agent=snapshot.default_agent,
            agents=snapshot.agents,
            addon_connected=connected,
            reviewed_by=reviewed_by,
        )
        if pick.agent is None:
            assert pick.why is not None
            whys.append(pick.why)
    return Eligibility(ok=not whys, reasons=tuple(r.words() for r in whys), pick=pick,
                       folders=folders, whys=tuple(whys))
