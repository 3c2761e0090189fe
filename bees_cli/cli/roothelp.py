"""``bees --help`` without importing typer: the root's help from the command table, its commands
in panels (:data:`~bees_cli.cli.commands.PANELS`), laid out as click lays out a definition list
(the typer app's root help writes the same panels, tests/cli/test_startup.py compares the two
at every terminal width).

Why not typer's ``rich_help_panel=``: typer draws panels only through rich, and importing rich
would make ``bees --help`` several times slower (issue 16, point 4; issue 28, point 3)."""

from __future__ import annotations

import os
import sys
import textwrap

from bees_cli.cli.commands import COMMANDS, HELP, PANELS

USAGE = "Usage: bees [OPTIONS] COMMAND [ARGS]..."
OPTIONS = [
    ("--version", "Print the version and exit."),
    ("--debug", "Show a bug's Python traceback (same as BEES_DEBUG=1)."),
    ("-h, --help", "Show this message and exit."),
]
INDENT = 2


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns`` without importing shutil (and its archivers):
    ``COLUMNS`` when a positive number, else stdout's terminal, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def width() -> int:
    """The help's width in columns: the terminal's (or ``COLUMNS``), less 2, within 50–78."""
    return max(min(terminal_columns(), 80) - 2, 50)


def short_help(text: str, limit: int) -> str:
    """The first sentence of ``text``'s first paragraph when it fits in ``limit`` columns,
    else as many words as fit followed by ``...`` (click's rule for a command's short help)."""
    words = text.split("\n\n")[0].split()
    length = 0
    for i, word in enumerate(words):
        length += len(word) + (i > 0)
        if length > limit:
            break
        if word.endswith("."):
            return " ".join(words[: i + 1])
        if length == limit and i != len(words) - 1:
            break
    else:
        return " ".join(words)
    length += len("...")
    while i > 0:
        length -= len(words[i]) + (i > 0)
        if length <= limit:
            break
        i -= 1
    return " ".join(words[:i]) + "..."


def _definitions(rows: list[tuple[str, str]], columns: int, names: int = 0) -> list[str]:
    """Two columns, the second wrapped and aligned (click's definition list, indent 2); the
    first at least ``names`` wide (so that several lists align)."""
    first_col = min(max(names, *(len(name) for name, _ in rows)), 30) + 2
    lines = []
    for name, text in rows:
        head = " " * INDENT + name
        if len(name) <= first_col - 2:
            head += " " * (first_col - len(name))
        else:
            lines.append(head)
            head = " " * (first_col + INDENT)
        wrapped = textwrap.wrap(text, max(columns - first_col - 2, 10), replace_whitespace=False)
        lines.append(head + wrapped[0])
        lines.extend(" " * (first_col + INDENT) + line for line in wrapped[1:])
    return lines


def panels(columns: int) -> list[str]:
    """The commands of :data:`~bees_cli.cli.commands.PANELS`, a titled list per panel, their
    summaries shortened to ``columns`` as click shortens a command's help, all aligned.

    Args:
        columns: the width to lay them out in.
    """
    names = max(len(name) for name in COMMANDS)
    limit = columns - 6 - names
    lines: list[str] = []
    for title, members in PANELS.items():
        rows = [(name, short_help(COMMANDS[name].help, limit)) for name in members]
        lines += ["", f"{title}:", *_definitions(rows, columns, names)]
    return lines


def render(columns: int | None = None) -> str:
    """The root's help text, without the final newline.

    Args:
        columns: the width to lay it out in (default: :func:`width`).
    """
    columns = width() if columns is None else columns
    lines = [USAGE, ""]
    lines += textwrap.wrap(HELP, columns, initial_indent=" " * INDENT,
                           subsequent_indent=" " * INDENT, replace_whitespace=False)
    lines += ["", "Options:", *_definitions(OPTIONS, columns), *panels(columns)]
    return "\n".join(lines)
