"""``bees status`` and ``bees validate`` without typer: their usual command lines parsed here, the
rest (help, completion, errors, ``--watch``…) left to the typer app; both share the bodies."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

STATUS_FLAGS = {"--json": "as_json", "--mine": "mine", "--all": "show_all", "--wide": "wide"}
"""The options ``bees status`` takes on this path (``--watch`` goes through typer)."""

WORKSPACE_ENV = "BEES_WORKSPACE"
"""The environment variable of ``-w``/``--workspace`` (``WorkspaceOpt`` in
:mod:`bees_cli.cli.options`)."""


def _parse_validate(args: list[str], environ: Mapping[str, str]) -> dict[str, object] | None:
    """``validate [DIR] [-w|--workspace DIR] [--json]`` (in any order) into the keyword
    arguments of :func:`validate_workspace`, or None for any other line: an option value
    that is empty or starts with ``-``, a second DIR or ``-w``, ``-h``, ``--``, an empty
    ``BEES_WORKSPACE``…"""
    directory: Path | None = None
    workspace: Path | None = None
    as_json = False
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--json":
            as_json = True
            continue
        if arg in ("-w", "--workspace") or arg.startswith("--workspace="):
            value = arg.partition("=")[2] if "=" in arg else (rest.pop(0) if rest else "")
            if workspace is not None or not value or value.startswith("-"):
                return None
            workspace = Path(value)
            continue
        if arg.startswith("-") or not arg or directory is not None:
            return None
        directory = Path(arg)
    from_env = False
    if workspace is None and WORKSPACE_ENV in environ:
        if not environ[WORKSPACE_ENV]:
            return None
        workspace, from_env = Path(environ[WORKSPACE_ENV]), True
    return {"directory": directory, "workspace": workspace, "from_env": from_env,
            "as_json": as_json}


def _parse_status(args: list[str]) -> dict[str, object] | None:
    """``status`` with any of ``--json --mine --all --wide`` into the keyword arguments of
    :func:`status`, or None for any other line."""
    values: dict[str, object] = dict.fromkeys(STATUS_FLAGS.values(), False)
    for arg in args:
        if arg not in STATUS_FLAGS:
            return None
        values[STATUS_FLAGS[arg]] = True
    return values


def parse(args: list[str], environ: Mapping[str, str]) -> tuple[str, dict[str, object]] | None:
    """Return the command (``status`` or ``validate``) and its keyword arguments when
    ``args`` (``sys.argv[1:]``) is a line this path answers exactly as typer would, else
    None (a shell asking for completions included)."""
    from bees_cli.cli.commands import COMPLETE_VAR

    if not args or COMPLETE_VAR in environ:
        return None
    name, rest = args[0], args[1:]
    if name == "validate":
        values = _parse_validate(rest, environ)
    elif name == "status":
        values = _parse_status(rest)
    else:
        return None
    return None if values is None else (name, values)


def run(args: list[str]) -> int | None:
    """Run ``bees ARGS`` when :func:`parse` takes it, behind the typer-free boundary.

    Returns:
        The exit code, or None when the typer app must answer ``args``.
    """
    from bees_cli.cli.boundary import run_guarded

    parsed = parse(args, os.environ)
    if parsed is None:
        return None
    name, values = parsed
    body: Callable[..., None] = validate_workspace if name == "validate" else status
    return run_guarded(lambda: body(**values), as_json=bool(values["as_json"]))


def validate_workspace(directory: Path | None, workspace: Path | None, *, from_env: bool,
                       as_json: bool) -> None:
    """The body of ``bees validate``: load the workspace, print its warnings on stderr and
    its summary (or ``--json``'s document) on stdout.

    Args:
        directory: the DIR argument.
        workspace: ``-w`` (or ``BEES_WORKSPACE``).
        from_env: ``workspace`` came from ``BEES_WORKSPACE``: a DIR given wins over it.

    Raises:
        WorkspaceInvalid, UserError: the workspace does not load (exit 2).
    """
    from bees_cli.cli.output import say
    from bees_cli.workspace.loader import load_workspace, workspace_argument
    from bees_cli.workspace.summary import (
        declared_tool_kinds,
        summary_json,
        summary_line,
        tool_kind_lines,
    )

    if directory is not None and from_env:
        workspace = None  # BEES_WORKSPACE is a default: the DIR given here wins
    loaded = load_workspace(workspace_argument(directory, workspace))
    if as_json:
        from bees_cli.cli import json_models as out

        out.emit(out.ValidateOut.model_validate(summary_json(loaded)))
        return
    for warning in loaded.warnings:
        say(warning.format())
    sys.stdout.write(summary_line(loaded) + "\n")
    for line in tool_kind_lines(declared_tool_kinds(loaded), live=False):
        sys.stdout.write(line + "\n")  # each MCP tool's kind and why (issue 25)
    sys.stdout.flush()


def status(*, as_json: bool, mine: bool, show_all: bool, wide: bool) -> None:
    """The body of ``bees status`` (not ``--watch``): the warnings on stderr, then the table
    (or ``--json``'s document) and the footer of rows left out."""
    from bees_cli.cli.context import bees_here
    from bees_cli.cli.output import say
    from bees_cli.cli.status_view import more_line, status_lines
    from bees_cli.cli.table import Emphasis, colour_on, paint, table_width
    from bees_cli.record.listing import STATUS_LIMIT
    from bees_cli.usecases.items import status_now
    from bees_cli.utc import utc_now

    limit = None if show_all else STATUS_LIMIT
    # the use case's blocking part, without an event loop: asyncio stays off this path
    here = bees_here()
    view = status_now(here, mine=mine, limit=limit)
    if view.warning:
        warm = colour_on(sys.stderr)
        say("\n".join(paint(line, Emphasis.WAITING, colour=warm)
                      for line in view.warning.splitlines()))
    rows = view.rows
    footer = more_line(view.more)
    if as_json:
        from bees_cli.cli import json_models as out

        out.emit(out.status_out(view))
    elif not rows:
        say("no work items on this computer yet (bees item create PROCESS)")
    else:
        lines = status_lines(rows, view.held, now=utc_now(), width=table_width(), wide=wide,
                             colour=colour_on())
        sys.stdout.write("".join(f"{line}\n" for line in lines))
    if footer:
        say(footer)
    if not as_json:
        from bees_cli.usecases.runner_words import kept_runner_lines

        # the team's runners as the last sync here heard them (issue 27, point 4)
        runners = kept_runner_lines(here.computer.record_path)
        if runners:
            sys.stdout.write("".join(f"runner {line}\n" for line in runners))
