"""The CLI's one error boundary and its one table of exit codes (:data:`EXIT_CODES`).

Exit codes (DESIGN.md, Interfaces; issue 15, point 3): 0 ok; 1 failure, including "not
found" and I/O errors; 2 bad usage or an invalid workspace; 3 refused (not the owner, key
taken, checkpoint invalid, wrong state); 130 interrupted; 141 the reader of stdout went
away (``bees item show ID | head -1``: quiet, issue 23, point 8). JSON mode is read from
the command's parsed ``--json`` option (its ``as_json`` parameter), never from
``sys.argv``; in JSON mode stdout gets ``{"version", "error": {"code", "message",
"hint"}}``. An ``OSError`` that means a read-only or full disk (or no permission) on a named
file is rendered as :class:`~bees_cli.errors.DiskError`, any other as
:class:`~bees_cli.errors.IoFailure`. No error shows a Python traceback, except a bug under
``bees --debug`` (or ``BEES_DEBUG=1``, STYLE habit 3).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup

from bees_cli.cli.boundary import (
    JSON_PARAM,
    Bug,
    ExitCode,
    IoFailure,
    as_bees_error,
    debugging,
)
from bees_cli.cli.helptext import HelpCommand, HelpGroup
from bees_cli.cli.pipes import closed_pipe_ends_quietly
from bees_cli.errors import (
    Ambiguous,
    BeesError,
    CloudRefused,
    NotFound,
    Refused,
    UserError,
)

F = TypeVar("F", bound=Callable[..., Any])

ENGINE_ATTR = "__bees_touches_engine__"

__all__ = ["EXIT_CODES", "JSON_PARAM", "Bug", "ErrorAnswer", "ExitCode", "IoFailure",
           "as_bees_error", "debugging", "error_answer", "error_boundary", "exit_code_for",
           "exit_code_of", "guard_all"]


EXIT_CODES: tuple[tuple[type[BaseException], ExitCode, str], ...] = (
    (Refused, ExitCode.REFUSED, "not the owner, checkpoint invalid, wrong state"),
    (Ambiguous, ExitCode.USAGE, "an item id prefix matches several items"),
    (NotFound, ExitCode.FAILURE, "a named item, agent, folder… does not exist"),
    (UserError, ExitCode.USAGE, "bad usage, an invalid workspace or state file"),
    (CloudRefused, ExitCode.REFUSED, "Bees Cloud answered no: not the owner, key taken"),
    (BeesError, ExitCode.FAILURE, "the engine, Bees Cloud, a model or a disk failed"),
    (BrokenPipeError, ExitCode.CLOSED_PIPE, "the reader of stdout went away (| head -1): "
     "nothing said"),
    (OSError, ExitCode.FAILURE, "an I/O error"),
    (typer.TyperException, ExitCode.USAGE, "a command line that does not parse"),
    (KeyboardInterrupt, ExitCode.INTERRUPTED, "Ctrl-C"),
    (Exception, ExitCode.FAILURE, "a bug (its traceback only under bees --debug)"),
)
"""The one table: the first row whose class the error is an instance of gives its exit
code (so a subclass row comes before its base's, and a refusal that is also "not here",
``OwnedElsewhere``, is a refusal). ``BeesError.exit_code`` agrees with it
(tests/cli/test_exit_codes.py)."""


def exit_code_of(error: BaseException) -> ExitCode:
    """Return the exit code of ``error`` from :data:`EXIT_CODES`."""
    return exit_code_for(type(error))


def exit_code_for(kind: type[BaseException]) -> ExitCode:
    """Return the exit code of an error of class ``kind`` from :data:`EXIT_CODES`."""
    for row, code, _why in EXIT_CODES:
        if issubclass(kind, row):
            return code
    return ExitCode.FAILURE


def exit_code_of_code(code: str) -> ExitCode:
    """Return the exit code of the :class:`BeesError` class whose ``code`` is ``code`` (as a
    report carries it, e.g. ``invalid_workspace``); 1 for a code no class has."""
    kinds: list[type[BeesError]] = [BeesError]
    while kinds:
        kind = kinds.pop()
        if kind.code == code:
            return exit_code_for(kind)
        kinds.extend(kind.__subclasses__())
    return ExitCode.FAILURE


@dataclass
class ErrorAnswer:
    """What a command's JSON error carries at its top level, beside ``error``: the keys
    every answer of that command has, success or not (``item create``: ``item_id``).

    Attributes:
        model: the error document's model (an :class:`~bees_cli.cli.json_models.ErrorOut`
            with those keys).
        keys: their values, filled in by the command as it learns them.
    """

    model: Any
    keys: dict[str, Any] = field(default_factory=dict)


_ANSWER: ContextVar[ErrorAnswer | None] = ContextVar("bees_error_answer", default=None)


def error_answer(model: Any, **keys: Any) -> dict[str, Any]:
    """Declare that the running command's JSON error is ``model`` with ``keys`` at its top
    level (their values so far); return the dict the command fills in as it learns them.

    Why: a script reads ``.item_id`` of ``bees item create --json`` whether the wait ended
    well or not (issue 23, point 8); an error raised after the item was made must still
    name it, wherever it is raised, and the boundary renders it once.

    Example: ``answer = error_answer(out.ItemCreateErrorOut, item_id=None)``, then
    ``answer["item_id"] = created.id`` once the item exists.
    """
    answer = ErrorAnswer(model=model, keys=dict(keys))
    _ANSWER.set(answer)
    return answer.keys


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
    """Wrap command ``fn``: an error it raises, or that a parser refused an argument with
    (:class:`ParseRefusal`, raised before ``fn`` runs), is rendered once (text on stderr,
    or JSON on stdout when its parsed ``--json`` is set) and ends the process with the
    table's exit code (:func:`exit_code_of`). A bug propagates with its traceback only
    under :func:`debugging`. A command marked :func:`touches_engine` leaves by
    ``os._exit``. A closed stdout (``| head -1``) ends it quietly with 141, its output
    flushed inside the boundary so a late failure is caught too
    (:func:`~bees_cli.cli.pipes.closed_pipe_ends_quietly`).
    """
    hard = bool(getattr(fn, ENGINE_ATTR, False))

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from bees_cli.cli.output import exit_hard, render_error

        declared = _ANSWER.set(None)  # the command may declare its own (error_answer)
        with closed_pipe_ends_quietly(hard=hard):
            try:
                for value in (*args, *kwargs.values()):
                    if isinstance(value, ParseRefusal):
                        raise value.error
                return fn(*args, **kwargs)
            except (typer.Exit, typer.Abort, typer.TyperException, BrokenPipeError):
                raise  # click's own ways out (a usage error is exit 2 already); a closed pipe
            except KeyboardInterrupt:
                sys.stderr.write("interrupted\n")
                if hard:
                    exit_hard(ExitCode.INTERRUPTED)
                raise typer.Exit(ExitCode.INTERRUPTED) from None
            except Exception as raised:
                # a read-only or full disk is one line naming the file (issue 12, point 7)
                error = as_bees_error(raised)
                if error is None:
                    raise
                answer = _ANSWER.get()
                render_error(error, as_json=bool(kwargs.get(JSON_PARAM, False)),
                             model=None if answer is None else answer.model,
                             top=None if answer is None else answer.keys)
                code = exit_code_of(error)
                if hard:
                    exit_hard(code)
                raise typer.Exit(code) from None
            finally:
                _ANSWER.reset(declared)

    return wrapper  # type: ignore[return-value]


class JsonUsageCommand(HelpCommand):
    """A command whose own usage errors (a missing option, a bad value) are JSON on stdout
    when its arguments hold ``--json``, like every other error in JSON mode (exit 2).

    Why: click reports a usage error before the command runs, so its parsed ``--json`` is
    not known yet; the raw ``--json`` among the command's own arguments is the best sign.
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Parse as click does; render a usage error as JSON when ``--json`` was given."""
        wants_json = "--json" in args and any(
            "--json" in getattr(p, "opts", ()) for p in self.params)
        try:
            return list(super().parse_args(ctx, args))
        except typer.TyperException as error:
            if not wants_json or getattr(error, "exit_code", 1) != ExitCode.USAGE:
                raise
            from bees_cli.cli.output import render_error

            message = error.format_message() if hasattr(error, "format_message") else str(error)
            render_error(UserError(message, hint=f"see {ctx.command_path} -h"), as_json=True)
            raise typer.Exit(ExitCode.USAGE) from None


def guard_all(app: typer.Typer) -> None:
    """Put :func:`error_boundary` around every command of ``app`` and of its groups, once,
    and make each a :class:`JsonUsageCommand` (each group a
    :class:`~bees_cli.cli.helptext.HelpGroup`)."""
    for command in app.registered_commands:
        if command.cls in (None, TyperCommand):
            command.cls = JsonUsageCommand
        if command.callback is not None and not hasattr(command.callback, "__wrapped__"):
            command.callback = error_boundary(command.callback)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            if group.typer_instance.info.cls in (None, TyperGroup) or not isinstance(
                    group.typer_instance.info.cls, type):
                group.typer_instance.info.cls = HelpGroup
            guard_all(group.typer_instance)
            info = group.typer_instance.registered_callback  # a group that lists by itself
            if (info is not None and info.callback is not None
                    and not hasattr(info.callback, "__wrapped__")):
                info.callback = error_boundary(info.callback)
