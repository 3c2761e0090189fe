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
    debug: Annotated[
        bool,
        typer.Option("--debug", help="Show a bug's Python traceback (same as BEES_DEBUG=1)."),
    ] = False,
) -> None:
    """Run multi-stage agent work on your own computers, with no central dispatcher."""
    if debug:
        import os

        from bees_cli.cli.errors import DEBUG_ENV

        os.environ[DEBUG_ENV] = "1"


def _register() -> None:
    """Attach every command module to ``app`` (explicit, no auto-import magic)."""
    import importlib

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
    "schedules",
    "doctor",
    "handover",
    "model",
]


def run() -> None:
    """Console entry point: register the commands and run the app (errors are mapped by
    :mod:`bees_cli.cli.errors`)."""
    _register()
    app()
