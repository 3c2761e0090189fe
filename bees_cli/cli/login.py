"""``bees login`` and ``bees logout``: sign this computer in to Bees Cloud, or out."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from bees_cli.cli.options import JsonOpt, WorkspaceOpt
from bees_cli.cli.output import say


def login(
    url: Annotated[
        str | None,
        typer.Argument(
            envvar="BEES_CLOUD_URL",
            help="Bees Cloud URL (default: the workspace's cloud: URL).", show_default=False
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="Bearer token from 'bees cloud person add' (asked for when omitted).",
            show_default=False,
        ),
    ] = None,
    with_token: Annotated[
        bool, typer.Option("--with-token", help="Read the token from standard input (CI).")
    ] = False,
    workspace: WorkspaceOpt = None,
    check: Annotated[
        bool, typer.Option("--check/--no-check", help="Ask the server who the token is first.")
    ] = True,
    insecure: Annotated[
        bool,
        typer.Option("--insecure",
                     help="Allow sending the token over plain http:// to another computer."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Sign this computer in to Bees Cloud (the token is stored with mode 0600).

    A checked sign-in also makes the token's person this computer's person
    ('bees whoami'). The URL is resolved, and shown, before the token is asked for;
    plain http:// is refused for any host but this computer unless --insecure.

    With --json, stdout is {"version", "url", "checked", "person", "team",
    "person_before", "person_changed"}; the talk stays on stderr.

    Example: echo "$TOKEN" | bees login https://cloud.example.com --with-token
    """
    from bees_cli.cli import json_models as out
    from bees_cli.cloud.login import check_transport, resolve_url
    from bees_cli.cloud.login import login as sign_in
    from bees_cli.errors import UserError

    if token is not None and with_token:
        raise UserError("give --token or --with-token, not both",
                        hint="--with-token reads the token from standard input")
    resolved = check_transport(resolve_url(url, workspace), insecure=insecure)
    say(f"sending the token to {resolved}")
    if with_token:
        token = sys.stdin.readline()
    elif token is None:
        token = typer.prompt("Token", hide_input=True, err=True)
    done = sign_in(resolved, token, check=check)
    me = done.me
    if as_json:
        out.emit(out.LoginOut(
            url=done.login.url, checked=me is not None,
            person=None if me is None else me.person, team=None if me is None else me.team,
            person_before=done.person_before, person_changed=done.person_changed))
    if me is None:
        say(f"stored the token for {done.login.url} (not checked)")
        return
    say(f"signed in to {done.login.url} as {me.person} (team {me.team})")
    if done.person_changed and done.person_before:
        say(f"person changed from {done.person_before} to {me.person}")
    elif done.person_changed:
        say(f"this computer's person is now {me.person}")


def logout(as_json: JsonOpt = False) -> None:
    """Forget this computer's Bees Cloud token (this computer's person stays as it is).

    With --json, stdout is {"version", "signed_out"} (false: no token was stored).

    Example: bees logout
    """
    from bees_cli.cli import json_models as out
    from bees_cli.cloud.login import clear_login

    cleared = clear_login()
    if as_json:
        out.emit(out.LogoutOut(signed_out=cleared))
    say("signed out" if cleared else "not signed in")


def register(app: typer.Typer) -> None:
    """Attach ``login`` and ``logout`` to the root app."""
    app.command("login")(login)
    app.command("logout")(logout)
