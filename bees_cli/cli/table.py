"""Text tables that fit the terminal: long cells cut with ``…``, emphasis only on a terminal.

Why not tabulate or rich here: tabulate sniffs every cell for numbers (most of the time of
``bees status`` over many items, issue 16) and rich's console costs more start-up than the
whole table on the path of ``bees status`` (``python -X importtime``); a table of strings
padded to fitted widths needs neither. Widths count characters (``len``), not terminal
cells: a wide (East Asian) character counts as one.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TextIO

from bees_cli.text import printable

GAP = "  "
"""Between two columns."""

CUT = "…"
"""Ends a cell cut to fit."""


class Emphasis(StrEnum):
    """What a cell draws the eye to on a terminal (issue 15, point 6)."""

    FAILED = "failed"
    """A failure or a lost run: red."""
    WAITING = "waiting"
    """Something waits (for a person, an approval, the engine, an agent): yellow."""
    REFUSED = "refused"
    """Refused (by Bees Cloud, by a rule): bold red."""


SGR: dict[Emphasis, str] = {Emphasis.FAILED: "31", Emphasis.WAITING: "33",
                            Emphasis.REFUSED: "1;31"}
"""ANSI Select Graphic Rendition codes of each emphasis."""


@dataclass(frozen=True)
class Column:
    """One column: its header and how far it may be narrowed to fit the width.

    Args:
        header: the heading.
        least: the narrowest it may become (characters); None: never cut.
        first: when the row is too wide, cut to ``least`` (whole or at its least, never in
            between) before any other column is cut.
        mark: end a cut cell with ``…``; False cuts it bare (an item id's prefix stays a
            valid id for every command).
        weight: a cut column gets this many shares of the room (a status 2, a title 1).
        drop: left out when the columns at their ``least`` do not fit, lowest first;
            None: always shown.
    """

    header: str
    least: int | None = 8
    first: bool = False
    mark: bool = True
    weight: int = 1
    drop: int | None = None


@dataclass(frozen=True)
class Cell:
    """A cell with an emphasis (a plain ``str`` cell has none)."""

    text: str
    emphasis: Emphasis | None = None


def table_width(stream: TextIO | None = None) -> int | None:
    """Return the width a table on ``stream`` (default stdout) must fit, or None for no limit.

    ``COLUMNS`` when set (a number), else the terminal's width when ``stream`` is a
    terminal, else None: piped output is never cut (as ``gh``, ``kubectl`` and ``ls`` do).
    """
    given = os.environ.get("COLUMNS", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    stream = stream or sys.stdout
    if _is_terminal(stream):
        return shutil.get_terminal_size((80, 24)).columns
    return None


def colour_on(stream: TextIO | None = None) -> bool:
    """Return whether to emphasise on ``stream`` (default stdout): never when ``NO_COLOR``
    is set and not empty (no-color.org) or ``TERM`` is ``dumb``; else only on a terminal."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return _is_terminal(stream or sys.stdout)


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def paint(text: str, emphasis: Emphasis | None, *, colour: bool) -> str:
    """Return ``text`` wrapped in its emphasis' escape codes when ``colour``, else as is."""
    if not colour or emphasis is None or not text:
        return text
    return f"\x1b[{SGR[emphasis]}m{text}\x1b[0m"


def cut(text: str, width: int, *, mark: bool = True) -> str:
    """Return ``text`` cut to ``width`` characters, ending with ``…`` when ``mark``."""
    if len(text) <= width:
        return text
    if not mark:
        return text[:width]
    return text[: max(0, width - 1)] + CUT if width > 0 else ""


def fit(natural: Sequence[int], columns: Sequence[Column], width: int | None
        ) -> list[int | None]:
    """Return each column's width so that the row, gaps included, fits ``width``.

    While the columns at their ``least`` (or their whole width) and the gaps do not fit,
    the column with the lowest ``drop`` is left out (None). Then columns marked ``first``
    are cut to their ``least`` (all of the way); then the others are cut alike, to one
    common cap times their ``weight``, never under their ``least``. Columns without
    ``least`` keep their width; when even the narrowest layout is too wide, it is kept
    (the terminal wraps).

    Args:
        natural: each column's widest cell (header included).
        columns: the columns, in order.
        width: the width to fit (characters), or None for no limit.
    """
    if width is None:
        return list(natural)
    shown = list(range(len(columns)))
    droppable = sorted((n for n, c in enumerate(columns) if c.drop is not None),
                       key=lambda n: columns[n].drop or 0)

    def narrowest(n: int) -> int:
        least = columns[n].least
        return natural[n] if least is None else min(natural[n], least)

    while droppable and (sum(narrowest(n) for n in shown)
                         + len(GAP) * (len(shown) - 1)) > width:
        shown.remove(droppable.pop(0))
    widths: dict[int, int] = {n: natural[n] for n in shown}
    room = width - len(GAP) * (len(shown) - 1)
    over = sum(widths.values()) - room
    for n in shown:
        if columns[n].first and over > 0:
            over -= widths[n] - narrowest(n)
            widths[n] = narrowest(n)
    if over > 0:
        cuttable = [n for n in shown if columns[n].least is not None and not columns[n].first]
        fixed = sum(w for n, w in widths.items() if n not in cuttable)

        def capped(n: int, cap: int) -> int:
            return max(min(natural[n], cap * columns[n].weight), narrowest(n))

        low, high = 0, max((natural[n] for n in cuttable), default=0)
        while low < high:  # the largest cap whose total fits (or 0)
            mid = (low + high + 1) // 2
            if fixed + sum(capped(n, mid) for n in cuttable) <= room:
                low = mid
            else:
                high = mid - 1
        for n in cuttable:
            widths[n] = capped(n, low)
    return [widths.get(n) for n in range(len(columns))]


def render(rows: Sequence[Sequence[str | Cell]], columns: Sequence[Column], *,
           width: int | None, colour: bool = False) -> list[str]:
    """Return the table's lines: the headers, a rule of dashes, then one line per row.

    Args:
        rows: the cells of each row (``str``, or :class:`Cell` with an emphasis); a cell's
            line breaks and tabs become spaces, its other control characters U+FFFD
            (:func:`bees_cli.text.printable`). Columns :func:`fit` leaves out are not printed.
        columns: the columns, in order (as many as each row has cells).
        width: the width to fit (:func:`fit`), or None for no limit.
        colour: paint emphasised cells (:func:`colour_on`).

    Returns:
        Lines without trailing spaces or line ends.
    """
    texts = [[_text(c) for c in row] for row in rows]
    natural = [max([len(col.header), *(len(r[n]) for r in texts)])
               for n, col in enumerate(columns)]
    widths = fit(natural, columns, width)
    keep = [n for n, w in enumerate(widths) if w is not None]
    kept = [columns[n] for n in keep]
    sized = [w for w in widths if w is not None]
    lines = [_line([col.header for col in kept], sized, kept),
             _line(["-" * w for w in sized], sized, kept)]
    for row, text in zip(rows, texts, strict=True):
        emphases = [_emphasis(row[n]) for n in keep]
        lines.append(_line([text[n] for n in keep], sized, kept, emphases, colour))
    return lines


def _emphasis(cell: str | Cell) -> Emphasis | None:
    return cell.emphasis if isinstance(cell, Cell) else None


def _text(cell: str | Cell) -> str:
    text = cell.text if isinstance(cell, Cell) else cell
    return printable(text.replace("\r\n", " "))


def _line(cells: Sequence[str], widths: Sequence[int], columns: Sequence[Column],
          emphases: Sequence[Emphasis | None] | None = None, colour: bool = False) -> str:
    parts = []
    for n, text in enumerate(cells):
        shown = cut(text, widths[n], mark=columns[n].mark)
        padded = shown.ljust(widths[n])
        if emphases is not None and emphases[n] is not None and colour:
            padded = paint(shown, emphases[n], colour=True) + " " * (widths[n] - len(shown))
        parts.append(padded)
    return GAP.join(parts).rstrip()
