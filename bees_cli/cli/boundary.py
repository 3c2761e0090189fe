"""The typer-free half of the CLI's error boundary: exit codes, what an exception is rendered as,
how a closed pipe ends a command (:func:`leave_closed_pipe`), and :func:`run_guarded` for the
commands :mod:`bees_cli.cli.quick` runs without typer."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import IntEnum
from typing import NoReturn

from bees_cli.errors import BeesError, IoFailure, disk_error_of, os_path

DEBUG_ENV = "BEES_DEBUG"
"""Set to 1 (or run `bees --debug`) to keep tracebacks: the SDK's on the console, and a bug's
(a bug report wants them)."""

JSON_PARAM = "as_json"
"""The parameter name every command gives its ``--json`` option (``JsonOpt``)."""


class ExitCode(IntEnum):
    """How a ``bees`` command ends, for scripts (the README's exit-code table)."""

    OK = 0
    FAILURE = 1
    USAGE = 2
    REFUSED = 3
    INTERRUPTED = 130
    CLOSED_PIPE = 141
    """The reader of stdout (or stderr) went away, as in ``bees item show ID | head -1``:
    the command ends quietly with the status a shell gives a program SIGPIPE stopped
    (128 + 13)."""


class Bug(BeesError):
    """An exception Bees did not raise on purpose (exit 1): one line, its traceback only
    under ``bees --debug``."""

    code = "bug"


def debugging() -> bool:
    """True under ``bees --debug`` or ``BEES_DEBUG=1``: a bug keeps its traceback."""
    return os.environ.get(DEBUG_ENV) == "1"


def leave_closed_pipe(*, hard: bool = False) -> NoReturn:
    """End the command quietly because the reader of its stdout (or stderr) went away
    (:attr:`ExitCode.CLOSED_PIPE`): both streams are pointed at the null device, so nothing
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
        os._exit(ExitCode.CLOSED_PIPE)
    raise SystemExit(ExitCode.CLOSED_PIPE)


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


def as_bees_error(raised: Exception) -> BeesError | None:
    """Return the :class:`BeesError` the boundary renders for ``raised``, or None to let it
    propagate (a bug under :func:`debugging`)."""
    if isinstance(raised, BeesError):
        return raised
    if isinstance(raised, OSError):
        disk = disk_error_of(raised)
        if disk is not None:
            return disk
        if raised.filename is not None:
            return IoFailure(f"cannot use {os_path(raised.filename)}: "
                             f"{raised.strerror or raised}",
                             hint="check that path (and BEES_HOME, if set)")
    if debugging():
        return None
    first = (str(raised).splitlines() or [""])[0]
    return Bug(f"unexpected {type(raised).__name__}: {first}",
               hint="run it again with bees --debug to see the traceback, and report it")


def run_guarded(body: Callable[[], None], *, as_json: bool) -> int:
    """Run a command's ``body`` as :func:`bees_cli.cli.errors.error_boundary` runs a typer
    command, for a command line parsed without typer: an error is rendered once (text on
    stderr, or JSON on stdout when ``as_json``) and its exit code returned; Ctrl-C prints
    ``interrupted`` (130); a closed stdout ends it quietly (141,
    :func:`closed_pipe_ends_quietly`); a bug propagates with its traceback only under
    :func:`debugging`.

    Returns:
        The exit code: 0, or the error's (``BeesError.exit_code``, which agrees with
        :data:`bees_cli.cli.errors.EXIT_CODES`).
    """
    from bees_cli.cli.output import render_error

    with closed_pipe_ends_quietly():
        try:
            body()
        except KeyboardInterrupt:
            sys.stderr.write("interrupted\n")
            return ExitCode.INTERRUPTED
        except BrokenPipeError:
            raise
        except Exception as raised:
            error = as_bees_error(raised)
            if error is None:
                raise
            render_error(error, as_json=as_json)
            return error.exit_code
    return ExitCode.OK
