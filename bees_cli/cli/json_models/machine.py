"""``--json`` documents of this computer and its workspace: whoami, links, add-ons, init…"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from bees_cli.cli.json_models.base import Out, Part


class WhoamiOut(Out):
    """``bees whoami``."""

    machine_id: str
    computer: str
    person: str | None


class LinkOut(Out):
    """``bees link``: the folder and the absolute directory it now resolves to."""

    folder: str
    path: str


class UnlinkOut(Out):
    """``bees unlink``: the folder whose link of this computer was removed."""

    folder: str


class FolderLink(Part):
    """One declared folder: where it resolves here, whether linked, and why."""

    folder: str
    path: str | None
    linked: bool
    reason: str


class LinksOut(Out):
    """``bees links``."""

    folders: list[FolderLink]


class ToolKindOut(Part):
    """An MCP add-on's tool, its kind and why: ``declared`` (the add-on's ``kinds``),
    ``read_only_hint`` (the server marks it read-only) or ``undeclared`` (gated: held for
    approval on an approval stage)."""

    addon: str
    tool: str
    kind: str
    why: Literal["declared", "read_only_hint", "undeclared"]


class AddonConnection(Part):
    """One add-on: connected here, or what it misses (an MCP add-on: why its server is not
    connected); an MCP add-on's tools as its server lists them, with their kinds."""

    addon: str
    connected: bool
    missing: list[str]
    tools: list[ToolKindOut] = Field(
        default_factory=list,
        description="An MCP add-on's tools as its server lists them (empty when not "
        "connected, and for a script add-on).")


class AddonsOut(Out):
    """``bees addons``."""

    addons: list[AddonConnection]


class InitOut(Out):
    """``bees init``: the workspace folder and every file written."""

    workspace: str
    files: list[str]


class ValidateOut(Out):
    """``bees validate`` of a valid workspace (an invalid one is an error, exit 2)."""

    ok: Literal[True]
    workspace: str
    name: str
    counts: dict[str, int]
    warnings: list[dict[str, Any]]
    tools: list[ToolKindOut] = Field(
        default_factory=list,
        description="Each tool the workspace names of its MCP add-ons, with the kind known "
        "without the server (bees addons asks the server).")


class SchemasWriteOut(Out):
    """``bees schemas write``: every schema file written."""

    files: list[str]
