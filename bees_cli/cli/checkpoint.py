"""Commands about checkpoints: ``bees checkpoint verify``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bees_cli.cli.options import JsonOpt
from bees_cli.cli.progress import ProgressLine as ProgressLine
from bees_cli.cli.progress import progress_printer as progress_printer

checkpoint_app = typer.Typer(
    name="checkpoint",
    help="Check the checkpoint a run folder carries on a handover.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
)


def verify(
    folder: Annotated[Path, typer.Argument(help="The run folder (it holds checkpoint.json).",
                                           metavar="DIR", show_default=False)],
    digest: Annotated[
        str | None,
        typer.Option("--digest", metavar="SHA256",
                     help="The checkpoint's expected SHA-256 (as released by its owner)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Verify a run folder's checkpoint and every file it lists; exit 3 when invalid.

    Example: bees checkpoint verify ~/Dropbox/bees/runs/01JH2… --digest 9d82cd…
    """
    from bees_cli.cli.quick import checkpoint_verify

    checkpoint_verify(folder, digest=digest, as_json=as_json)


def register(app: typer.Typer) -> None:
    """Attach the ``checkpoint`` group to the root app (its ``verify`` once, however many
    apps it is attached to: a second copy would miss the error boundary)."""
    if not checkpoint_app.registered_commands:
        checkpoint_app.command(
            short_help="Verify a run folder's checkpoint and every file it lists.")(verify)
    app.add_typer(checkpoint_app, name="checkpoint")
