"""``bees status``, ``bees validate``, ``bees item show`` and ``bees checkpoint verify`` without
typer: their usual command lines parsed here, the rest (help, completion, errors, ``--watch``…)
left to the typer app; both share the bodies (issue 16 point 4, issue 29 point 3)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bees_cli.usecases.item_details import ItemDetails
    from bees_cli.usecases.models import TeamItemDetails

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


def _parse_item_show(args: list[str]) -> dict[str, object] | None:
    """``ITEM [--json]`` (in any order) into the keyword arguments of :func:`item_show`, or
    None for any other line: no ITEM or two, an ITEM that is empty or starts with ``-``,
    any other option."""
    items = [arg for arg in args if arg != "--json"]
    if len(items) != 1 or not items[0] or items[0].startswith("-"):
        return None
    return {"item": items[0], "as_json": "--json" in args}


def _parse_checkpoint_verify(args: list[str]) -> dict[str, object] | None:
    """``DIR [--digest SHA256] [--json]`` (in any order; ``--digest=SHA256`` too) into the
    keyword arguments of :func:`checkpoint_verify`, or None for any other line: no DIR or
    two, a DIR or a digest that is empty or starts with ``-``, a second ``--digest``…"""
    folder: Path | None = None
    digest: str | None = None
    as_json = False
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--json":
            as_json = True
            continue
        if arg == "--digest" or arg.startswith("--digest="):
            value = arg.partition("=")[2] if "=" in arg else (rest.pop(0) if rest else "")
            if digest is not None or not value or value.startswith("-"):
                return None
            digest = value
            continue
        if arg.startswith("-") or not arg or folder is not None:
            return None
        folder = Path(arg)
    if folder is None:
        return None
    return {"folder": folder, "digest": digest, "as_json": as_json}


def parse(args: list[str], environ: Mapping[str, str]) -> tuple[str, dict[str, object]] | None:
    """Return the command (``status``, ``validate``, ``item show`` or ``checkpoint verify``)
    and its keyword arguments when ``args`` (``sys.argv[1:]``) is a line this path answers
    exactly as typer would, else None (a shell asking for completions included)."""
    from bees_cli.cli.commands import COMPLETE_VAR

    if not args or COMPLETE_VAR in environ:
        return None
    name, rest = args[0], args[1:]
    if name == "validate":
        values = _parse_validate(rest, environ)
    elif name == "status":
        values = _parse_status(rest)
    elif args[:2] == ["item", "show"]:
        name, values = "item show", _parse_item_show(args[2:])
    elif args[:2] == ["checkpoint", "verify"]:
        name, values = "checkpoint verify", _parse_checkpoint_verify(args[2:])
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
    bodies: dict[str, Callable[..., None]] = {
        "validate": validate_workspace, "status": status, "item show": item_show,
        "checkpoint verify": checkpoint_verify}
    body = bodies[name]
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


def item_show(item: str, *, as_json: bool) -> None:
    """The body of ``bees item show ITEM``: an item of this computer (its row, run folder,
    logs, model use, pieces and history, :func:`echo_item`) or a team item another computer
    runs; ``--json``'s document with ``as_json`` (the JSON models only then, issue 29
    point 3).

    Raises:
        UserError: ``item`` is not an item id nor a prefix of 6 or more (exit 2, as typer's
            parser of ``ItemArg`` refuses it).
        NotFound, Ambiguous: no item or several match (exit 2).
    """
    from bees_cli.cli.context import bees_here
    from bees_cli.ids import check_item_id
    from bees_cli.usecases.models import TeamItemDetails

    check_item_id(item, prefix=True)  # refused before the disk is touched
    # blocking, no event loop
    found = bees_here().item_details_now(item.strip())
    if isinstance(found, TeamItemDetails):
        _team_item_show(found, as_json)
        return
    if as_json:
        from bees_cli.cli import json_models as out

        out.emit(out.ItemShowOut.of(found.to_json()))
        return
    echo_item(found)


def _echo(line: str) -> None:
    """Write ``line`` on stdout made printable: text from the record (a title, a reason, an
    agent's words) may hold control characters another computer let in; never sent raw."""
    from bees_cli.text import printable

    sys.stdout.write(printable(line) + "\n")


def echo_item(found: ItemDetails) -> None:
    """Print ``bees item show``'s text of an item of this computer on stdout: its row, run
    folder and logs, each model stage's use, its pieces, then its history (the story)."""
    from bees_cli.record.views import ItemShow
    from bees_cli.utc import display_utc, parse_utc, utc_now

    details = ItemShow.of(found.to_json())
    row = details.item
    echo = _echo
    echo(f"item        {row.item_id}  {row.title}")
    echo(f"process     {row.process}")
    echo(f"stage       {row.stage}")
    echo(f"status      {details.status_words(utc_now())}")
    echo(f"agent       {row.agent or '-'}")
    echo(f"since       {display_utc(parse_utc(row.since))} ({found.since_human})")
    echo(f"created     {display_utc(parse_utc(row.created))} on {row.created_on or '-'}")
    echo(f"run folder  {row.run_folder}")
    echo(f"engine log  {details.engine_log}")
    for log in details.logs:
        echo(f"log         {log}")
    from bees_cli.handover.problems import plural

    for used in details.models:
        cost = "" if used.cost is None else f", est. cost {used.cost:.4f}"
        echo(f"model       {used.stage}: {used.model}, {plural(used.turns, 'turn')}, "
             f"{used.tokens_in} tokens in, {used.tokens_out} out{cost}")
    if details.pieces:
        from bees_cli.record.views import piece_tree

        echo("pieces")
        for line in piece_tree(details.pieces):
            echo(line)
    echo("history")
    for event in details.events():
        echo(f"  {display_utc(parse_utc(event.at))}  {event.render()}")
    sys.stdout.flush()


def _team_item_show(team: TeamItemDetails, as_json: bool) -> None:
    """Render a team item another computer runs: its team row and where it runs."""
    if as_json:
        from bees_cli.cli import json_models as out

        data = team.to_json()
        out.emit(out.TeamItemShow.model_validate({"item_id": data["id"], **{
            key: value for key, value in data.items() if key not in out.DISPLAY_KEYS}}))
        return
    for line in (f"item        {team.id}  {team.title or '-'}",
                 f"process     {team.process or '-'}", f"stage       {team.stage or '-'}",
                 f"status      {team.status_text}", f"agent       {team.agent or '-'}",
                 f"since       {team.since}",
                 f"runs on     {team.computer} ({team.person}); not on this computer"):
        _echo(line)  # another computer's words: never sent raw
    sys.stdout.write("(its team row in the shared record; history and logs are on that "
                     "computer)\n")
    sys.stdout.flush()


def checkpoint_verify(folder: Path, *, digest: str | None, as_json: bool) -> None:
    """The body of ``bees checkpoint verify DIR [--digest SHA256]``: hash every listed file
    (a progress line on stderr when it is a terminal), then print ``valid: …`` (or
    ``--json``'s document; the JSON models only then, issue 29 point 3).

    Raises:
        CheckpointInvalid: any problem (exit 3).
        NotFound, UserError: no such folder, or a digest that is not 64 hex digits (exit 2).
    """
    from bees_cli.cli.progress import progress_printer
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
    if as_json:
        from bees_cli.cli import json_models as out

        out.emit(out.VerifyOut.model_validate(
            {k: v for k, v in result.to_json().items() if k != "problems"}))
        return
    sys.stdout.write(f"valid: {result.files:,} files, {result.total_bytes:,} bytes, "
                     f"checkpoint sha256 {result.sha256}\n")
    sys.stdout.flush()
