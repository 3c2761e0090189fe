"""``bees app``: serve the Bees app, a local web page over the CLI's use cases (issue 17)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from bees_cli.cli.context import bees_here
from bees_cli.cli.errors import touches_engine
from bees_cli.cli.options import JsonOpt, WorkspaceOpt
from bees_cli.cli.output import exit_hard, say

if TYPE_CHECKING:
    from bees_cli.app.security import Guard


@touches_engine
def app(
    workspace: WorkspaceOpt = None,
    port: Annotated[int, typer.Option(
        "--port", min=0, max=65535, help="TCP port on 127.0.0.1 (0: a free one).")] = 0,
    no_open: Annotated[bool, typer.Option(
        "--no-open", help="Do not open the page in the default browser.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Serve the Bees app on 127.0.0.1 until Ctrl-C: the team's items live, approvals to
    read and answer, retry, relinquish and continue, schedules and doctor.

    Prints its URL first (it holds the secret that lets a browser in; with --json as one
    line {"version", "url", "port"}) and opens it unless --no-open. Works beside `bees run`,
    starting nothing itself.

    Example: bees app --no-open
    """
    import asyncio

    from bees_cli.app.serve import serve

    if workspace is not None:  # a wrong -w is said now, not on the first page that needs it
        from bees_cli.workspace.loader import load_workspace

        load_workspace(workspace)

    def announce(guard: Guard) -> None:
        import json
        import sys

        from bees_cli.cli import json_models as out

        url = guard.url()
        if as_json:  # one line, not emit()'s indented document: a reader waits for it
            typer.echo(json.dumps(out.AppOut(url=url, port=guard.port).to_json()))
        else:
            typer.echo(f"Bees app: {url}")
        sys.stdout.flush()
        say("serving until Ctrl-C (the URL holds this session's secret: do not share it)")
        if not no_open:
            import webbrowser

            webbrowser.open(url)

    asyncio.run(serve(bees_here(), port=port, workspace=workspace, announce=announce))
    exit_hard(0)


def register(root: typer.Typer) -> None:
    """Attach ``app`` to the root app."""
    root.command("app")(app)
