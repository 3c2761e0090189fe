"""The CLI's one error boundary: a :class:`BeesError` becomes a message, a hint and an exit code.

Exit codes (DESIGN.md, Interfaces): 0 ok, 1 failure, 2 bad usage or invalid workspace,
3 refused. JSON mode is read from the command's parsed ``--json`` option (its ``as_json``
parameter), never from ``sys.argv``; in JSON mode stdout gets ``{"error": {"code",
"message", "hint"}}``. An ``OSError`` that means a read-only or full disk (or no permission)
on a named file is rendered as :class:`~bees_cli.errors.DiskError`. Bugs are not caught: they
keep their traceback (STYLE habit 3).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from bees_cli.errors import BeesError, disk_error_of

F = TypeVar("F", bound=Callable[..., Any])

JSON_PARAM = "as_json"
"""The parameter name every command gives its ``--json`` option (``JsonOpt``)."""

ENGINE_ATTR = "__bees_touches_engine__"


def touches_engine(fn: F) -> F:
    """Mark a command that may use a temporalio client: the boundary leaves it with
    :func:`~bees_cli.cli.output.exit_hard` (DESIGN.md, measured facts: sdk-python issue 300)."""
    setattr(fn, ENGINE_ATTR, True)
    return fn


class ParseRefusal:
    """An argument's parser refused its value (e.g. an item id that is not one, see
    :data:`bees_cli.cli.options.ItemArg`): the boundary raises ``error`` before the command
    runs.

    Why: click reports a parser's own error as a usage screen, never as JSON; carried here,
    it is rendered once, like any other error, in the mode the command was asked for.

    Args:
        error: the error to raise (a :class:`~bees_cli.errors.UserError`: exit 2).
    """

    def __init__(self, error: BeesError) -> None:
        self.error = error


def error_boundary(fn: F) -> F:
    """Wrap command ``fn``: a :class:`BeesError` it raises, or that a parser refused an
    argument with (:class:`ParseRefusal`, raised before ``fn`` runs), is rendered once (text
    on stderr, or JSON on stdout when its parsed ``--json`` is set) and ends the process
    with the error's exit code. A command marked :func:`touches_engine` leaves by
    ``os._exit``.
    """
    hard = bool(getattr(fn, ENGINE_ATTR, False))

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from bees_cli.cli.output import exit_hard, render_error

        try:
            for value in (*args, *kwargs.values()):
                if isinstance(value, ParseRefusal):
                    raise value.error
            return fn(*args, **kwargs)
        except (BeesError, OSError) as raised:
            # a read-only or full disk is one line naming the file (issue 12, point 7);
            # any other OSError is a bug and keeps its traceback
            error = raised if isinstance(raised, BeesError) else disk_error_of(raised)
            if error is None:
                raise
            render_error(error, as_json=bool(kwargs.get(JSON_PARAM, False)))
            if hard:
                exit_hard(error.exit_code)
            raise typer.Exit(error.exit_code) from None
        except KeyboardInterrupt:
            sys.stderr.write("interrupted\n")
            if hard:
                exit_hard(130)
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def guard_all(app: typer.Typer) -> None:
    """Put :func:`error_boundary` around every command of ``app`` and of its groups, once."""
    for command in app.registered_commands:
        if command.callback is not None and not hasattr(command.callback, "__wrapped__"):
            command.callback = error_boundary(command.callback)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            guard_all(group.typer_instance)
