"""What this computer has of a workspace: each folder's link and each add-on's connection."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bees_cli.machine.connections import AddonConnection, check_connection
from bees_cli.machine.links import FolderLink, resolve_folder

if TYPE_CHECKING:
    from bees_cli.workspace.loader import Workspace


def folder_links(workspace: Workspace) -> list[FolderLink]:
    """Return how every declared folder resolves here, sorted by folder name."""
    return [
        resolve_folder(name, folder, workspace.root)
        for name, folder in sorted(workspace.folders.items())
    ]


def addon_connections(workspace: Workspace) -> list[AddonConnection]:
    """Return whether every declared add-on is connected here, sorted by add-on name."""
    return [check_connection(name, addon) for name, addon in sorted(workspace.addons.items())]
