"""The root ``bees`` app: registers each command group explicitly, behind the one error boundary."""

from __future__ import annotations

from typing import Annotated

import typer

from bees_cli import __version__

CONTEXT = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    name="bees",
    help="Run multi-stage agent work on your own computers, with no central dispatcher.",
    no_args_is_help=True,
    context_settings=CONTEXT,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    add_completion=False,  # `bees completion SHELL` prints the script; no rc files edited
)


def _version(ctx: typer.Context, value: bool) -> None:
    if value and not ctx.resilient_parsing:  # not while a shell asks for completions
        typer.echo(f"bees {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Run multi-stage agent work on your own computers, with no central dispatcher."""


def _register() -> None:
    """Attach every command module to ``app`` (explicit, no auto-import magic), once."""
    import importlib

    if app.registered_commands:
        return

    from bees_cli.cli.errors import guard_all

    for module_name in COMMAND_MODULES:
        module = importlib.import_module(f"bees_cli.cli.{module_name}")
        module.register(app)
    guard_all(app)


# Each module has ``register(app)``; its heavy imports stay inside command bodies.
COMMAND_MODULES: list[str] = [
    "machine",
    "engine",
    "workspace",
    "cloud",
    "login",
    "checkpoint",
    "control",
    "delegate",
    "schedules",
    "doctor",
    "handover",
    "model",
    "completion",
]


def run() -> None:
    """Console entry point: register the commands and run the app (errors are mapped by
    :mod:`bees_cli.cli.errors`)."""
    _register()
    from bees_cli.cli.completion import COMPLETE_VAR

    app(complete_var=COMPLETE_VAR)
