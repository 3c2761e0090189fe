"""``bees init``, ``bees validate`` and ``bees schemas write``: the workspace commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bees_cli.cli.options import JsonOpt, WorkspaceOpt

DirArg = Annotated[
    Path | None,
    typer.Argument(help="Workspace folder (same as -w).", show_default=False),
]


def validate(
    ctx: typer.Context, directory: DirArg = None, workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check every file of the workspace; print each problem as FILE:LINE:COL  field  message.

    Exit 0 when the workspace is valid, 2 when it has problems. A .yml file (or bees.yml)
    is an error: Bees reads only .yaml. Other files inside a kind folder, and root folders
    such as agent/ that look like a misspelt kind, are warnings.

    Example: bees validate examples/weekly-report
    """
    from bees_cli.cli.quick import validate_workspace

    source = ctx.get_parameter_source("workspace")  # typer's own click: compare by name
    validate_workspace(directory, workspace, as_json=as_json,
                       from_env=getattr(source, "name", None) == "ENVIRONMENT")


def init(
    directory: Annotated[
        Path, typer.Argument(help="Folder to create the workspace in (default: here).")
    ] = Path("."),
    as_json: JsonOpt = False,
) -> None:
    """Create a starter workspace: a draft → review → done process, two agents, schemas.

    Refuses (exit 2) when the folder already holds bees.yaml or any starter file.

    Example: bees init my-workspace && bees validate my-workspace
    """
    from bees_cli.cli import json_models as out
    from bees_cli.cli.output import say
    from bees_cli.workspace.starter import create

    written = create(directory)
    if as_json:
        out.emit(out.InitOut(workspace=str(directory.expanduser().absolute()),
                             files=[str(path) for path in written]))
    say(f"created a workspace in {directory} ({len(written)} files)")
    say(f"next: bees validate {directory}")


schemas_app = typer.Typer(
    name="schemas",
    help="JSON Schemas of the workspace files, for editors.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@schemas_app.command("write", short_help="Write the JSON Schema of each YAML kind into DIR.")
def schemas_write(
    directory: Annotated[
        Path, typer.Argument(help="Folder to write the *.json files into.")
    ] = Path("schemas"),
    as_json: JsonOpt = False,
) -> None:
    """Write the JSON Schema of each YAML kind (workspace, process, agent…) into DIR.

    Example: bees schemas write schemas
    """
    from bees_cli.cli import json_models as out
    from bees_cli.workspace.schemas import write

    written = [str(path) for path in write(directory)]
    if as_json:
        out.emit(out.SchemasWriteOut(files=written))
        return
    for path in written:
        typer.echo(path)


def register(app: typer.Typer) -> None:
    """Add ``init``, ``validate`` and the ``schemas`` group to ``app``."""
    app.command("init")(init)
    app.command("validate")(validate)
    app.add_typer(schemas_app)
