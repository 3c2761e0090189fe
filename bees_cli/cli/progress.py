"""The progress line of hashing (``bees checkpoint verify``, ``bees continue``), without typer:
rich is imported only when stderr is a terminal."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.progress import TaskID


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
