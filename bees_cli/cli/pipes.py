"""How a command ends when the reader of its output went away (``bees item show ID | head -1``):
quietly, with 141, whichever way it was writing (issue 23, point 8).

Kept apart from the boundary and the renderers (it imports nothing of :mod:`bees_cli.cli`),
so the console entry, the root group, the error boundary,
:func:`~bees_cli.cli.output.exit_hard` and the JSON writer all use the one way out.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

CLOSED_PIPE = 141
"""The exit code of a command whose reader went away: what a shell reports for a program
SIGPIPE stopped (128 + 13), as ``yes | head -1`` shows in ``PIPESTATUS``."""

WRITE_CHARS = 2048
"""The largest piece :func:`write_stdout` hands to ``sys.stdout`` at once (at most 8 KiB of
UTF-8: never more than the stream's buffer)."""


def write_stdout(text: str) -> None:
    """Write ``text`` to stdout in pieces of :data:`WRITE_CHARS` characters.

    Why: CPython loses the ``BrokenPipeError`` of a single write larger than the stream's
    buffer when the reader leaves midway (``bees item show ID --json | head -1``): the rest
    is dropped and the command would end 0. Written in pieces, the closed pipe is raised,
    and the boundary ends the command with 141 (issue 23, point 8).
    """
    for start in range(0, len(text), WRITE_CHARS):
        sys.stdout.write(text[start:start + WRITE_CHARS])


def leave_closed_pipe(*, hard: bool = False) -> NoReturn:
    """End the command quietly because the reader of its stdout (or stderr) went away
    (:data:`CLOSED_PIPE`): both streams are pointed at the null device, so nothing
    buffered fails again on the way out, and the process leaves with 141.

    Why: Python ignores SIGPIPE and raises ``BrokenPipeError`` instead; its documented recipe
    (the ``signal`` module's note on SIGPIPE) points stdout at ``os.devnull`` and exits. Bees
    keeps SIGPIPE ignored (its sockets need it) and exits as a shell expects of a pipe
    reader that left early (``yes | head -1``: 141).

    Args:
        hard: leave by ``os._exit`` (a command that used a temporalio client,
            :func:`bees_cli.cli.output.exit_hard`) instead of ``SystemExit``.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for stream in (sys.stdout, sys.stderr):
            try:
                os.dup2(devnull, stream.fileno())
            except (AttributeError, OSError, ValueError):  # not a file (a test's capture)
                continue
    finally:
        os.close(devnull)
    if hard:
        os._exit(CLOSED_PIPE)
    raise SystemExit(CLOSED_PIPE)


@contextmanager
def closed_pipe_ends_quietly(*, hard: bool = False) -> Iterator[None]:
    """Run the block, then flush stdout (however the block ended); a ``BrokenPipeError``
    from either ends the command with :func:`leave_closed_pipe` (141, nothing said).

    Why: every way a command writes (its body, its error, click's help and usage) passes
    through one of the few places that use this, so ``bees … | head -1`` ends the same
    way for every command, and nothing is left buffered to fail at interpreter exit.
    """
    try:
        try:
            yield
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        leave_closed_pipe(hard=hard)
