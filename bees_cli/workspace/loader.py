"""Find and load a workspace folder into :class:`Workspace` (first cut: no positions yet)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ruamel.yaml import YAML

from bees_cli.errors import UserError, WorkspaceInvalid
from bees_cli.workspace.models import (
    KINDS,
    Addon,
    Agent,
    Folder,
    Process,
    Schedule,
    WorkspaceConfig,
)


@dataclass(frozen=True)
class Workspace:
    """A loaded, cross-checked workspace; each mapping is name → model, sorted by name."""

    root: Path
    config: WorkspaceConfig
    processes: dict[str, Process]
    agents: dict[str, Agent]
    schedules: dict[str, Schedule]
    folders: dict[str, Folder]
    addons: dict[str, Addon]


def find_workspace(start: Path | None = None) -> Path:
    """Return the workspace folder: ``start`` itself, or else the nearest parent of the cwd with ``bees.yaml``.

    Raises:
        UserError: ``start`` has no ``bees.yaml``, or no parent of the cwd has one.
    """
    if start is not None:
        root = start.expanduser().resolve()
        if not (root / "bees.yaml").is_file():
            raise UserError(
                f"{start}: no bees.yaml here",
                hint="pass the workspace folder with -w, or create one with `bees init DIR`",
            )
        return root
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "bees.yaml").is_file():
            return folder
    raise UserError(
        "no workspace: neither this folder nor a parent holds bees.yaml",
        hint="pass the workspace folder with -w, or create one with `bees init DIR`",
    )


def load_workspace(start: Path | None = None) -> Workspace:
    """Load the workspace at ``start`` (see :func:`find_workspace`).

    Raises:
        UserError: no workspace found.
        WorkspaceInvalid: any file fails to parse or validate.
    """
    root = find_workspace(start)
    yaml = YAML(typ="safe", pure=True)
    config = WorkspaceConfig.model_validate(yaml.load((root / "bees.yaml").read_text("utf-8")))
    loaded: dict[str, dict[str, object]] = {}
    for kind, model in KINDS.items():
        objects: dict[str, object] = {}
        for path in sorted((root / kind).glob("*.yaml")):
            objects[path.stem] = model.model_validate(yaml.load(path.read_text("utf-8")))
        loaded[kind] = objects
    if not loaded:
        raise WorkspaceInvalid([])
    return Workspace(root=root, config=config, **loaded)  # type: ignore[arg-type]
