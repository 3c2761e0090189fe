"""Commands about this computer: whoami, link, unlink, links, addons."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bees_cli.cli.complete import complete_folders, complete_linked_folders
from bees_cli.cli.options import JsonOpt, WorkspaceOpt
from bees_cli.cli.output import print_table, say


def whoami(
    set_person: Annotated[
        str | None,
        typer.Option("--set-person", help="Sign this computer in as this person (email)."),
    ] = None,
    set_computer: Annotated[
        str | None, typer.Option("--set-computer", help="Rename this computer (default: hostname).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show this computer's machine id, name and signed-in person.

    Example: bees whoami --set-person maya@example.com
    """
    from bees_cli.cli import json_models as out
    from bees_cli.machine.identity import load_identity, set_identity

    if set_person is not None or set_computer is not None:
        identity = set_identity(person=set_person, computer=set_computer)
    else:
        identity = load_identity()
    if as_json:
        out.emit(out.WhoamiOut(machine_id=identity.machine_id, computer=identity.computer,
                               person=identity.person))
        return
    typer.echo(f"machine id  {identity.machine_id}")
    typer.echo(f"computer    {identity.computer}")
    typer.echo(f"person      {identity.person or '(not set: bees whoami --set-person EMAIL)'}")


def link(
    folder: Annotated[str, typer.Argument(help="A folder declared in folders/.",
                                          autocompletion=complete_folders)],
    path: Annotated[Path, typer.Argument(help="An existing directory on this computer.")],
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Link a declared folder to a directory on this computer.

    Example: bees link team-notes ~/Dropbox/notes
    """
    from bees_cli.cli import json_models as out
    from bees_cli.machine.links import link_folder
    from bees_cli.workspace.loader import load_workspace

    loaded = load_workspace(workspace)
    target = link_folder(folder, path, sorted(loaded.folders))
    if as_json:
        out.emit(out.LinkOut(folder=folder, path=str(target)))
    say(f"linked {folder} → {target}")


def unlink(
    folder: Annotated[str, typer.Argument(help="A folder linked with bees link.",
                                          autocompletion=complete_linked_folders)],
    as_json: JsonOpt = False,
) -> None:
    """Remove this computer's link of a folder.

    Example: bees unlink team-notes
    """
    from bees_cli.cli import json_models as out
    from bees_cli.machine.links import unlink_folder

    unlink_folder(folder)
    if as_json:
        out.emit(out.UnlinkOut(folder=folder))
    say(f"unlinked {folder}")


def links(workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """List each declared folder, where it resolves here, and whether it is linked.

    Example: bees links --json
    """
    from bees_cli.cli import json_models as out
    from bees_cli.machine.report import folder_links
    from bees_cli.workspace.loader import load_workspace

    rows = folder_links(load_workspace(workspace))
    if as_json:
        out.emit(out.LinksOut(folders=[
            out.FolderLink(folder=r.name, path=str(r.path) if r.path else None,
                           linked=r.linked, reason=r.reason) for r in rows]))
        return
    print_table(
        [[r.name, str(r.path or "-"), "yes" if r.linked else "no", r.reason] for r in rows],
        headers=["folder", "path", "linked", "reason"],
    )


def addons(workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """List each add-on and whether it is connected on this computer, with what is missing.

    A listing: it exits 0 whatever it finds, as bees links does; bees doctor is the check
    that exits 1 when an add-on is not connected.

    Example: bees addons
    """
    import asyncio

    from bees_cli.agents.mcp_addon import addon_connections
    from bees_cli.cli import json_models as out
    from bees_cli.workspace.loader import load_workspace
    from bees_cli.workspace.summary import tool_kind_lines

    rows = asyncio.run(addon_connections(load_workspace(workspace)))
    tools = {r.name: list(getattr(r, "tools", ())) for r in rows}  # an MCP server's, listed
    if as_json:
        out.emit(out.AddonsOut(addons=[
            out.AddonConnection(addon=r.name, connected=r.connected, missing=r.missing,
                                tools=[out.ToolKindOut(addon=t.addon, tool=t.tool,
                                                       kind=t.kind, why=t.why)
                                       for t in tools[r.name]])
            for r in rows]))
        return
    print_table(
        [[r.name, "yes" if r.connected else "no", ", ".join(r.missing) or "-"] for r in rows],
        headers=["add-on", "connected", "missing"],
    )
    for r in rows:
        for line in tool_kind_lines(tools[r.name], live=True):
            typer.echo(line)


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    app.command()(whoami)
    app.command()(link)
    app.command()(unlink)
    app.command()(links)
    app.command()(addons)
