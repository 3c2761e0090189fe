"""Commands about checkpoints: ``bees checkpoint verify``."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO

import typer

from bees_cli.cli.options import JsonOpt

if TYPE_CHECKING:
    from rich.progress import TaskID

checkpoint_app = typer.Typer(
    name="checkpoint",
    help="Check the checkpoint a run folder carries on a handover.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
)


class ProgressLine:
    """A ``progress(done, total)`` callback drawing rich's progress bar for hashing on one
    terminal line: ``hashing ━━━━━━ 12.0/250.0 MB 0:00:03``.

    Redraws at most once per ``every`` seconds, and always on the last byte (then ends the
    line). Call :meth:`close` when hashing stopped early, so the next output starts a line.
    """

    def __init__(self, stream: TextIO, *, every: float = 0.1) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.every = every
        self.last = float("-inf")
        self.bar = Progress(TextColumn("hashing"), BarColumn(), DownloadColumn(),
                            TimeRemainingColumn(), console=Console(file=stream),
                            auto_refresh=False, redirect_stdout=False)
        self.task: TaskID | None = None
        self.open = False

    def __call__(self, done: int, total: int) -> None:
        """Draw ``done`` of ``total`` bytes (at most once per ``every`` seconds)."""
        if self.task is None:
            self.bar.start()
            self.open = True
            self.task = self.bar.add_task("hashing", total=total)
        self.bar.update(self.task, completed=done, total=total)
        now = time.monotonic()
        if done >= total:
            self.close()
        elif now - self.last >= self.every:
            self.last = now
            self.bar.refresh()

    def close(self) -> None:
        """End the progress line if one is still open (drawn as it stands)."""
        if self.open:
            self.bar.stop()
            self.open = False


def progress_printer(stream: TextIO, *, every: float = 0.1) -> ProgressLine | None:
    """Return a :class:`ProgressLine` on ``stream``, or None when it is not a terminal.

    Why: progress is for people; pipes and logs stay clean.
    """
    if not stream.isatty():
        return None
    return ProgressLine(stream, every=every)


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
    from bees_cli.handover.checkpoint import verify_checkpoint

    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    progress = progress_printer(sys.stderr)
    try:
        result = verify_checkpoint(folder, expected_sha256=digest, progress=progress)
    finally:
        if progress is not None:
            progress.close()
    result.raise_if_invalid()
    if as_json:  # the JSON models only for --json (issue 29, point 3)
        from bees_cli.cli import json_models as out

        out.emit(out.VerifyOut.model_validate(
            {k: v for k, v in result.to_json().items() if k != "problems"}))
        return
    typer.echo(f"valid: {result.files:,} files, {result.total_bytes:,} bytes, "
               f"checkpoint sha256 {result.sha256}")


def register(app: typer.Typer) -> None:
    """Attach the ``checkpoint`` group to the root app (its ``verify`` once, however many
    apps it is attached to: a second copy would miss the error boundary)."""
    if not checkpoint_app.registered_commands:
        checkpoint_app.command(
            short_help="Verify a run folder's checkpoint and every file it lists.")(verify)
    app.add_typer(checkpoint_app, name="checkpoint")
