"""``bees help``: a command's help (as ``bees COMMAND --help`` shows it) or a topic
(:mod:`bees_cli.cli.topics`)."""

from __future__ import annotations

from typing import Annotated

import typer

from bees_cli.cli.topics import TOPICS


def help_(
    ctx: typer.Context,
    words: Annotated[
        list[str] | None,
        typer.Argument(metavar="[COMMAND]... | TOPIC", show_default=False,
                       help="A command (with its subcommands), or a topic: "
                       + ", ".join(TOPICS) + "."),
    ] = None,
) -> None:
    """Show a command's help, or a topic: json, exit-codes.

    bees help COMMAND is the same as bees COMMAND --help, also for a subcommand. The topic
    json says how --json output and errors look; exit-codes lists every exit code.

    Example: bees help cloud person add
    """
    from bees_cli.cli.roothelp import width
    from bees_cli.cli.topics import render

    words = words or []
    if len(words) == 1 and words[0] in TOPICS:
        typer.echo(render(words[0], width()))
        return
    root = ctx.find_root().command
    root.main([*words, "--help"], prog_name=ctx.find_root().info_name)


def register(app: typer.Typer) -> None:
    """Attach ``help`` to the root app."""
    app.command("help")(help_)
