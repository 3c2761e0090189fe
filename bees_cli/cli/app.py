"""``bees app``: serve the Bees app, a local web page over the CLI's use cases (issue 17)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from bees_cli.cli.context import bees_here
from bees_cli.cli.errors import touches_engine
from bees_cli.cli.options import JsonOpt, WorkspaceOpt
from bees_cli.cli.output import exit_hard, say

if TYPE_CHECKING:
    from bees_cli.app.instance import Serving
    from bees_cli.app.security import Guard


@touches_engine
def app(
    workspace: WorkspaceOpt = None,
    port: Annotated[int, typer.Option(
        "--port", min=0, max=65535,
        help="TCP port, held on 127.0.0.1 and ::1 (0: a free one).")] = 0,
    no_open: Annotated[bool, typer.Option(
        "--no-open", help="Do not open the page in the default browser.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Serve the Bees app on loopback until Ctrl-C: the team's items live, approvals to
    read and answer, retry, relinquish and continue, schedules and doctor.

    Prints its URL first (http://bees-RANDOM.localhost:PORT/?secret=…: a name of its own,
    which browsers resolve to this computer, so its session reaches no other program on
    another port; the secret lets a browser in; with --json as one line {"version", "url",
    "port"}) and opens it unless --no-open. Works beside 'bees run', starting nothing
    itself. One app serves a computer: when one serves already, prints (and
    opens) its URL instead and exits 0; refused (exit 3) when it serves another workspace.

    Example: bees app --no-open
    """
    import asyncio

    from bees_cli.app.serve import serve

    if workspace is not None:  # a wrong -w is said now, not on the first page that needs it
        from bees_cli.workspace.loader import load_workspace

        load_workspace(workspace)

    def first_line(url: str, port: int) -> None:
        import json
        import sys

        from bees_cli.cli import json_models as out

        if as_json:  # one line, not emit()'s indented document: a reader waits for it
            typer.echo(json.dumps(out.AppOut(url=url, port=port).to_json()))
        else:
            typer.echo(f"Bees app: {url}")
        sys.stdout.flush()

    def open_page(url: str) -> None:
        if not no_open:
            import webbrowser

            webbrowser.open(url)

    def announce(guard: Guard) -> None:
        first_line(guard.url(), guard.port)
        say("serving until Ctrl-C (the URL holds this session's secret: do not share it)")
        open_page(guard.url())

    def already(other: Serving) -> None:
        if workspace is not None and str(workspace.resolve()) != other.workspace:
            from bees_cli.errors import Refused

            raise Refused(
                f"bees app is already serving this computer at {other.address} (pid "
                f"{other.pid}), for {other.workspace or 'the default workspace'}, not "
                f"{workspace}", hint="stop it first (Ctrl-C where it runs), or use it")
        first_line(other.url, other.port)
        said = "its URL is above" if no_open else "opened it"
        say(f"bees app is already serving this computer at {other.address} (pid "
            f"{other.pid}): {said}; no second one started")
        open_page(other.url)

    asyncio.run(serve(bees_here(), port=port, workspace=workspace, announce=announce,
                      already=already))
    exit_hard(0)


def register(root: typer.Typer) -> None:
    """Attach ``app`` to the root app."""
    root.command("app")(app)
