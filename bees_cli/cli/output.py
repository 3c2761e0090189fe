"""Rendering helpers: tables and JSON to stdout, talk and errors to stderr."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

from bees_cli.cli.pipes import leave_closed_pipe, write_stdout
from bees_cli.errors import BeesError


def print_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout (dates and paths via ``str``)."""
    write_stdout(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


def print_table(rows: Iterable[Sequence[Any]], headers: Sequence[str]) -> None:
    """Print rows as a plain text table on stdout (tabulate, ``simple`` format)."""
    from tabulate import tabulate

    sys.stdout.write(tabulate(list(rows), headers=list(headers), tablefmt="simple") + "\n")


def say(message: str) -> None:
    """Print a line of talk or progress on stderr (stdout stays machine-readable)."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def render_error(error: BeesError, *, as_json: bool, model: Any = None,
                 top: dict[str, Any] | None = None) -> None:
    """Print ``error`` on stderr as ``error: …`` plus ``hint: …``, or as JSON on stdout.

    JSON mode prints ``{"version", "error": {"code", "message", "hint", …}}`` on stdout
    (:class:`~bees_cli.cli.json_models.ErrorOut`), so a script reading stdout always gets a
    JSON document; a command that declared its answer's keys
    (:func:`bees_cli.cli.errors.error_answer`) gets ``model`` with ``top`` beside ``error``.
    """
    if as_json:
        from bees_cli.cli.json_models import ErrorOut, emit

        emit((model or ErrorOut).model_validate({**(top or {}), "error": error.to_json()}))
        return
    problems = getattr(error, "problems", None)
    if problems:
        for problem in problems:
            sys.stderr.write(problem.format() + "\n")
    sys.stderr.write(f"{_label(error)} {error.text}\n")
    if error.hint:
        sys.stderr.write(f"hint: {error.hint}\n")


def _label(error: BeesError) -> str:
    """``error:``, red on a terminal (bold for a refusal, exit 3), plain when piped or with
    ``NO_COLOR`` (:func:`bees_cli.cli.table.colour_on`)."""
    from bees_cli.cli.table import Emphasis, colour_on, paint

    emphasis = Emphasis.REFUSED if error.exit_code == 3 else Emphasis.FAILED
    return paint("error:", emphasis, colour=colour_on(sys.stderr))


def exit_hard(code: int) -> NoReturn:
    """Flush stdout and stderr and leave with ``os._exit(code)``.

    Why: a process that used a temporalio client can crash at interpreter exit
    (DESIGN.md, measured facts; sdk-python issue 300), so commands that touched
    Temporal skip interpreter teardown. A reader of stdout or stderr that went away
    makes it leave quietly with 141 instead (issue 23, point 8).
    """
    try:
        try:
            sys.stdout.flush()
        finally:
            sys.stderr.flush()
    except BrokenPipeError:
        leave_closed_pipe(hard=True)
    os._exit(code)
