"""The typer-free half of the CLI's error boundary: exit codes, what an exception is rendered as,
and :func:`run_guarded` for the commands :mod:`bees_cli.cli.quick` runs without typer (a
closed pipe: :mod:`bees_cli.cli.pipes`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from enum import IntEnum

from bees_cli.cli.pipes import CLOSED_PIPE, closed_pipe_ends_quietly
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
    CLOSED_PIPE = CLOSED_PIPE
    """The reader of stdout (or stderr) went away, as in ``bees item show ID | head -1``:
    the command ends quietly with the status a shell gives a program SIGPIPE stopped
    (128 + 13; :mod:`bees_cli.cli.pipes`)."""


class Bug(BeesError):
    """An exception Bees did not raise on purpose (exit 1): one line, its traceback only
    under ``bees --debug``."""

    code = "bug"


def debugging() -> bool:
    """True under ``bees --debug`` or ``BEES_DEBUG=1``: a bug keeps its traceback."""
    return os.environ.get(DEBUG_ENV) == "1"


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
    :func:`~bees_cli.cli.pipes.closed_pipe_ends_quietly`); a bug propagates with its
    traceback only under :func:`debugging`.

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
