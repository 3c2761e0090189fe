"""The ``bees cloud`` group: serve Bees Cloud, manage its teams and people, show status."""

from __future__ import annotations

from typing import Annotated

import typer

from bees_cli.cli.options import JsonOpt
from bees_cli.cli.output import say

CONTEXT = {"help_option_names": ["-h", "--help"]}

DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Database URL: sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"
        " (default: cloud.db in this computer's data folder; a bare path is refused).",
        show_default=False,
    ),
]
TeamOpt = Annotated[str, typer.Option("--team", help="The team's name.")]


def serve(
    db: DbOpt = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="TCP port (0 picks a free one).")
    ] = 8765,
) -> None:
    """Run the Bees Cloud server until interrupted (migrates the database first).

    Example: bees cloud serve --db postgresql+psycopg://bees@db/bees --host 0.0.0.0
    """
    from bees_cli.cloud.admin import serve as run

    run(db, host, port, announce=lambda line: say(f"Bees Cloud {line}"))


def team_add(
    name: Annotated[str, typer.Argument(help="Team name (letters, digits, . _ : @ + = -).")],
    db: DbOpt = None,
) -> None:
    """Create a team.

    Example: bees cloud team add acme
    """
    from bees_cli.cloud.admin import add_team

    created = add_team(db, name)
    say(f"team {name} created" if created else f"team {name} exists already")


def person_add(
    email: Annotated[str, typer.Argument(help="The person's email address.")],
    team: TeamOpt,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a person to a team and print a new bearer token (shown this once only).

    Example: bees cloud person add maya@example.com --team acme
    """
    from bees_cli.cli import json_models as out
    from bees_cli.cloud.admin import add_person

    token = add_person(db, email, team)
    if as_json:
        out.emit(out.PersonAddOut(email=email.lower(), team=team, token=token))
        return
    typer.echo(token)
    say(f"token for {email} in team {team} (shown once; give it to `bees login URL --token T`)")


def person_revoke(
    email: Annotated[str, typer.Argument(help="The person's email address.")],
    team: TeamOpt,
    db: DbOpt = None,
) -> None:
    """Revoke every token of a person; their owners and keys stay on record.

    Example: bees cloud person revoke sam@example.com --team acme
    """
    from bees_cli.cloud.admin import revoke_person

    count = revoke_person(db, email, team)
    say(f"revoked {count} token{'s' if count != 1 else ''} of {email} in team {team}")


def status(as_json: JsonOpt = False) -> None:
    """Show whether Bees Cloud answers, who this computer is signed in as, and clock skew.

    Exits 1 when the server cannot be reached or refuses the token.

    Example: bees cloud status --json
    """
    from bees_cli.cli import json_models as out
    from bees_cli.cloud.login import status as read_status

    result = read_status()
    ok = result["reachable"] and result["error"] is None
    if as_json:
        out.emit(out.CloudStatusOut.model_validate(result))
    else:
        typer.echo(f"url        {result['url']}")
        typer.echo(f"reachable  {'yes' if result['reachable'] else 'no'}")
        if ok:
            typer.echo(f"person     {result['person']}")
            typer.echo(f"team       {result['team']}")
            typer.echo(f"server     {result['server_time']}")
            typer.echo(
                f"skew       {result['skew_seconds']:+.3f} s (server minus this computer;"
                f" round trip {result['round_trip_seconds']:.3f} s)"
            )
        else:
            error = result["error"]
            say(f"error: {error['message']}")
            if error.get("hint"):
                say(f"hint: {error['hint']}")
    if not ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Attach the ``cloud`` group to the root app."""
    cloud = typer.Typer(
        name="cloud",
        help="Bees Cloud: run the server, manage teams and people, check the connection.",
        no_args_is_help=True,
        context_settings=CONTEXT,
    )
    team = typer.Typer(help="Manage teams (on the database).", no_args_is_help=True)
    person = typer.Typer(help="Manage people and tokens (on the database).", no_args_is_help=True)
    cloud.command("serve")(serve)
    cloud.command("status")(status)
    team.command("add")(team_add)
    person.command("add")(person_add)
    person.command("revoke")(person_revoke)
    cloud.add_typer(team, name="team", context_settings=CONTEXT)
    cloud.add_typer(person, name="person", context_settings=CONTEXT)
    app.add_typer(cloud, name="cloud", context_settings=CONTEXT)
