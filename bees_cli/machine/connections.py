"""Add-on connections: an add-on is connected here when its env vars are set and its files exist."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bees_cli.machine.links import expand_path

if TYPE_CHECKING:
    from bees_cli.workspace.models import Addon


@dataclass(frozen=True)
class AddonConnection:
    """Whether add-on ``name`` is connected here, and what is missing (``"env GMAIL_TOKEN"``)."""

    name: str
    connected: bool
    missing: list[str]

    def words(self) -> str:
        """How ``bees doctor`` says it: ``connected``, or ``missing env GMAIL_TOKEN``."""
        return "connected" if self.connected else f"missing {', '.join(self.missing)}"


def check_connection(name: str, addon: Addon) -> AddonConnection:
    """Check add-on ``name`` on this computer: every env var non-empty, every file present."""
    missing = [f"env {var}" for var in addon.connection.env if not os.environ.get(var)]
    for text in addon.connection.files:
        path, problem = expand_path(text)
        if path is None:
            missing.append(f"file {text} ({problem})")
        elif not path.exists():
            missing.append(f"file {path}")
    return AddonConnection(name, not missing, missing)
