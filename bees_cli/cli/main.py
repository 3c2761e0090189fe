"""The root ``bees`` app: registers each command group explicitly and maps errors to exit codes."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from bees_cli import __version__
from bees_cli.errors import BeesError

CONTEXT = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    name="bees",
    help="Run multi-stage agent work on your own computers, with no central dispatcher.",
    no_args_is_help=True,
    context_settings=CONTEXT,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    add_completion=True,
)


def _version(value: bool) -> None:
    if value:
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
    """Attach every command module to ``app`` (explicit, no auto-import magic)."""
    import importlib

    for module_name in COMMAND_MODULES:
        module = importlib.import_module(f"bees_cli.cli.{module_name}")
        module.register(app)


# Each module has ``register(app)``; its heavy imports stay inside command bodies.
COMMAND_MODULES: list[str] = [
    "machine",
    "engine",
    "workspace",
    "cloud",
    "login",
    "checkpoint",
    "control",
    "schedules",
    "doctor",
    "handover",
]


def run() -> None:
    """Console entry point: run the app; a :class:`BeesError` becomes a message and exit code."""
    _register()
    as_json = "--json" in sys.argv[1:]
    try:
        app()
    except BeesError as error:
        from bees_cli.cli.output import render_error

        render_error(error, as_json=as_json)
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
