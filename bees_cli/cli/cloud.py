"""The ``bees cloud`` group: serve Bees Cloud, manage its teams and people, show status."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bees_cli.cli.options import JsonOpt
from bees_cli.cli.output import say

if TYPE_CHECKING:
    from bees_cli.cli.json_models import PersonAddOut, RunnerAddOut
    from bees_cli.cloud.admin import Target

CONTEXT = {"help_option_names": ["-h", "--help"]}

ServeDbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Database URL: sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"
        " (default: cloud.db in this computer's data folder; a bare path is refused).",
        show_default=False,
    ),
]
DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Work offline on this database (sqlite:///PATH or postgresql+psycopg://USER@HOST/DB);"
        " it must exist: an admin command never creates one.",
        show_default=False,
    ),
]
ServerOpt = Annotated[
    str | None,
    typer.Option(
        "--server",
        help="The running Bees Cloud to change, e.g. https://cloud.example.com"
        " (default: $BEES_CLOUD_URL, unless --db is given).",
        show_default=False,
    ),
]
TokenFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--admin-token-file",
        help="The admin token file the server wrote at its first start"
        " (or set BEES_ADMIN_TOKEN to the token).",
        show_default=False,
    ),
]
InsecureOpt = Annotated[
    bool, typer.Option("--insecure", help="Allow plain http:// to a host other than this one.")
]
TeamOpt = Annotated[str, typer.Option("--team", help="The team's name.")]


def _target(server: str | None, db: str | None, token_file: Path | None,
            insecure: bool) -> Target:
    import os

    from bees_cli.cloud.admin import admin_target

    if server is None and db is None:  # --db for offline work wins over the environment
        server = os.environ.get("BEES_CLOUD_URL", "").strip() or None
    return admin_target(server, db, token_file=token_file,
                        token=os.environ.get("BEES_ADMIN_TOKEN"), insecure=insecure)


def serve(
    db: ServeDbOpt = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="TCP port (0 picks a free one).")
    ] = 8765,
    admin_token_file: Annotated[
        Path | None,
        typer.Option("--admin-token-file", show_default=False,
                     help="Where the first start writes the admin token, mode 0600"
                     " (default: cloud-admin.token in this computer's data folder)."),
    ] = None,
) -> None:
    """Run the Bees Cloud server until interrupted (migrates the database first).

    The first start makes the admin token and says where it wrote it; the admin commands
    ('bees cloud team add --server URL'...) need it.

    Example: bees cloud serve --db postgresql+psycopg://bees@db/bees --host 0.0.0.0
    """
    from bees_cli.cloud.admin import serve as run

    run(db, host, port, announce=lambda line: say(f"Bees Cloud {line}"),
        admin_token_file=admin_token_file)


def team_add(
    name: Annotated[str, typer.Argument(help="Team name (letters, digits, . _ : @ + = -).")],
    server: ServerOpt = None,
    admin_token_file: TokenFileOpt = None,
    db: DbOpt = None,
    insecure: InsecureOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Create a team on a running server (admin token) or, offline, on its database.

    Example: bees cloud team add acme --server URL --admin-token-file cloud-admin.token
    """
    from bees_cli.cloud.admin import add_team

    target = _target(server, db, admin_token_file, insecure)
    created = add_team(target, name)
    if as_json:
        from bees_cli.cli import json_models as out

        out.emit(out.TeamAddOut(team=name, created=created, server=target.server,
                                database=target.database))
        return
    say(f"team {name} {'created' if created else 'exists already'} on {target.shown}")


def _show_token(answer: PersonAddOut | RunnerAddOut, as_json: bool, *, whose: str,
                use: str) -> None:
    """Show a new token the one time it is shown: with ``as_json`` the JSON ``answer`` (it
    holds the token) on stdout; else the token alone on stdout, then on stderr whose it is
    and ``use``, how to hand it on."""
    from bees_cli.cli import json_models as out

    if as_json:
        out.emit(answer)
        return
    typer.echo(answer.token)
    say(f"token for {whose} (shown once; {use})")


def person_add(
    email: Annotated[str, typer.Argument(help="The person's email address.")],
    team: TeamOpt,
    server: ServerOpt = None,
    admin_token_file: TokenFileOpt = None,
    db: DbOpt = None,
    insecure: InsecureOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Add a person to a team and print a new bearer token (shown this once only).

    Example: bees cloud person add maya@example.com --team acme --server https://cloud.example.com
    """
    from bees_cli.cli import json_models as out
    from bees_cli.cloud.admin import add_person

    target = _target(server, db, admin_token_file, insecure)
    token = add_person(target, email, team)
    _show_token(out.PersonAddOut(email=email.lower(), team=team, token=token,
                                 server=target.server, database=target.database), as_json,
                whose=f"{email} in team {team} on {target.shown}",
                use="give it to `bees login URL --with-token`")


def person_revoke(
    email: Annotated[str, typer.Argument(help="The person's email address.")],
    team: TeamOpt,
    server: ServerOpt = None,
    admin_token_file: TokenFileOpt = None,
    db: DbOpt = None,
    insecure: InsecureOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Revoke every token of a person; their owners and keys stay on record.

    Example: bees cloud person revoke sam@example.com --team acme --server https://cloud.example.com
    """
    from bees_cli.cloud.admin import revoke_person

    target = _target(server, db, admin_token_file, insecure)
    count = revoke_person(target, email, team)
    if as_json:
        from bees_cli.cli import json_models as out

        out.emit(out.PersonRevokeOut(email=email.lower(), team=team, revoked=count,
                                     server=target.server, database=target.database))
        return
    say(f"revoked {count} token{'s' if count != 1 else ''} of {email} in team {team}"
        f" on {target.shown}")


def runner_add(
    name: Annotated[str, typer.Argument(
        help="The runner's name (letters, digits, . _ : @ + = -).")],
    pool: Annotated[str, typer.Option("--pool", help="The pool it takes work from.")],
    team: TeamOpt,
    server: ServerOpt = None,
    admin_token_file: TokenFileOpt = None,
    db: DbOpt = None,
    insecure: InsecureOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Add a runner (a headless computer) to a pool and print its token (shown this once only).

    The runner signs in with it (BEES_CLOUD_URL and BEES_TOKEN) and runs 'bees run --runner
    POOL'; it takes only work a person hands to the pool (docs/runners.md).

    Example: bees cloud admin runner add runner-1 --pool build --team acme --server URL
    """
    from bees_cli.cli import json_models as out
    from bees_cli.cloud.admin import add_runner

    target = _target(server, db, admin_token_file, insecure)
    token = add_runner(target, name, pool, team)
    _show_token(out.RunnerAddOut(name=name, pool=pool, team=team, token=token,
                                 server=target.server, database=target.database), as_json,
                whose=f"runner {name} of pool {pool} in team {team} on {target.shown}",
                use="give it to the runner as BEES_TOKEN")


def runner_retire(
    name: Annotated[str, typer.Argument(help="The runner's name.")],
    team: TeamOpt,
    server: ServerOpt = None,
    admin_token_file: TokenFileOpt = None,
    db: DbOpt = None,
    insecure: InsecureOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Retire a runner that is gone for good: its token and machine id are revoked first, so
    anything it sends later is refused (fenced); then each item it held is offered back to
    its pool, to restart its unfinished stage from the checkpoint it was handed over with
    (an action whose intent is open in the run folder's journal is held for a person as
    "may already have run"). Nothing else ever moves a runner's items.

    Example: bees cloud admin runner retire runner-2 --team acme --server URL
    """
    from bees_cli.cloud.admin import retire_runner

    target = _target(server, db, admin_token_file, insecure)
    done = retire_runner(target, name, team)
    if as_json:
        from bees_cli.cli import json_models as out

        out.emit(out.RunnerRetireOut.model_validate(done.model_dump(mode="json")))
        return
    if done.revoked == 0 and not done.offered:
        say(f"runner {name} of pool {done.pool} was retired already")
        return
    say(f"runner {name} of pool {done.pool} retired: token revoked, machine id "
        f"{done.machine_id or '(never heard)'} fenced")
    for item in done.offered:
        typer.echo(item)
    if done.offered:
        say(f"offered back to pool {done.pool}: {', '.join(done.offered)}")
    if done.not_offered:
        say(f"released but not offered (no checkpoint to restart from; a person continues "
            f"them): {', '.join(done.not_offered)}")
    if done.ended:
        say(f"ended, kept as they are (never offered again): {', '.join(done.ended)}")


def admin_token(
    db: Annotated[str, typer.Option("--db", help="The server's database URL (it must exist).")],
    file: Annotated[Path, typer.Option("--file", help="Where to write the new token (0600).")],
) -> None:
    """Replace the server's admin token (the old one stops working), offline on its database.

    For a lost token file; a running server accepts the new token at once.

    Example: bees cloud admin-token --db sqlite:///srv/bees/cloud.db --file cloud-admin.token
    """
    from bees_cli.cloud.admin import rotate_admin_token, shown_url

    written = rotate_admin_token(db, file)
    say(f"admin token of database {shown_url(db)} replaced; written to {written} (mode 0600)")


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
    team = typer.Typer(help="Manage teams (on a server, or its database offline).",
                       no_args_is_help=True)
    person = typer.Typer(help="Manage people and tokens (on a server, or its database offline).",
                         short_help="Manage people and tokens.", no_args_is_help=True)
    cloud.command("serve", short_help="Run the Bees Cloud server until interrupted.")(serve)
    cloud.command("status", short_help="Show whether Bees Cloud answers, and as whom.")(status)
    cloud.command("admin-token", short_help="Replace the server's admin token.")(
        admin_token)
    team.command("add", short_help="Create a team.")(team_add)
    person.command("add", short_help="Add a person to a team; print a new token.")(
        person_add)
    person.command("revoke", short_help="Revoke every token of a person.")(
        person_revoke)
    admin = typer.Typer(help="Administer the team's runners (on a server, or its database"
                        " offline).", short_help="Administer the team's runners.",
                        no_args_is_help=True)
    runner = typer.Typer(help="Runner identities: headless computers that take work handed"
                         " to their pool.", short_help="Runner identities of a pool.",
                         no_args_is_help=True)
    runner.command("add", short_help="Add a runner identity to a pool; print its token.")(
        runner_add)
    runner.command("retire", short_help="Retire a runner: fence it, offer its items back.")(
        runner_retire)
    admin.add_typer(runner, name="runner", context_settings=CONTEXT)
    cloud.add_typer(admin, name="admin", context_settings=CONTEXT)
    cloud.add_typer(team, name="team", context_settings=CONTEXT)
    cloud.add_typer(person, name="person", context_settings=CONTEXT)
    app.add_typer(cloud, name="cloud", context_settings=CONTEXT)
