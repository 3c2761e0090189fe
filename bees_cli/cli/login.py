"""``bees login`` and ``bees logout``: sign this computer in to Bees Cloud, or out."""

from __future__ import annotations

from typing import Annotated

import typer

from bees_cli.cli.options import WorkspaceOpt
from bees_cli.cli.output import say


def login(
    url: Annotated[
        str | None,
        typer.Argument(
            help="Bees Cloud URL (default: the workspace's `cloud:` URL).", show_default=False
        ),
    ] = None,
    token: Annotated[
        str,
        typer.Option(
            "--token",
            help="Bearer token from `bees cloud person add`.",
            prompt=True,
            hide_input=True,
        ),
    ] = "",
    workspace: WorkspaceOpt = None,
    check: Annotated[
        bool, typer.Option("--check/--no-check", help="Ask the server who the token is first.")
    ] = True,
) -> None:
    """Sign this computer in to Bees Cloud (the token is stored with mode 0600).

    Example: bees login https://cloud.example.com --token bees.0123abcd….…
    """
    from bees_cli.cloud.login import login as sign_in

    stored, me = sign_in(url, token, workspace=workspace, check=check)
    if me is not None:
        say(f"signed in to {stored.url} as {me.person} (team {me.team})")
    else:
        say(f"stored the token for {stored.url} (not checked)")


def logout() -> None:
    """Forget this computer's Bees Cloud token.

    Example: bees logout
    """
    from bees_cli.cloud.login import clear_login

    say("signed out" if clear_login() else "not signed in")


def register(app: typer.Typer) -> None:
    """Attach ``login`` and ``logout`` to the root app."""
    app.command("login")(login)
    app.command("logout")(logout)
