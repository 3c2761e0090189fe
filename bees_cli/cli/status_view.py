"""The text views of ``bees status`` (and ``--watch``) and ``bees approvals``: fitted tables.

Each view is a pure function from rows to lines at a given width (:mod:`bees_cli.cli.table`),
so tests assert exact lines; the commands in :mod:`bees_cli.cli.engine` and
:mod:`bees_cli.cli.control` only choose the width, the colour and the stream.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TextIO

from bees_cli.cli.table import Cell, Column, Emphasis, render
from bees_cli.record.states import Status
from bees_cli.utc import display_utc, parse_utc

EMPHASIS: dict[str, Emphasis] = {
    Status.FAILED: Emphasis.FAILED, Status.LOST: Emphasis.FAILED,
    Status.PENDING: Emphasis.WAITING, Status.WAITING: Emphasis.WAITING,
    Status.WAITING_FOR_APPROVAL: Emphasis.WAITING, Status.WAITING_FOR_PERSON: Emphasis.WAITING,
}
"""The emphasis of a status cell, by the item's status (others are plain)."""

ID = Column("item", least=12, first=True, mark=False)
"""An item id: cut bare to 12 characters first (a prefix of 6 or more names the item)."""

STATUS_COLUMNS = (ID, Column("process", least=8, drop=2), Column("title", least=10),
                  Column("stage", least=6), Column("status", least=28, weight=2),
                  Column("agent", least=6, drop=1), Column("since", least=None))
"""At 80 columns: item, title, stage, status and since; process and agent when they fit."""

APPROVAL_COLUMNS = (ID, Column("request", least=None), Column("title", least=10, drop=1),
                    Column("stage", least=6), Column("action", least=16),
                    Column("input", least=16, weight=2), Column("asked", least=None))
"""At 80 columns: item, request, stage, action, input and asked; title when it fits."""


def age(text: str, now: datetime) -> str:
    """Return how long before ``now`` the UTC time ``text`` was: ``5s ago``… (``?`` when
    ``text`` is not a time)."""
    from bees_cli.record.local import human_since

    try:
        return human_since(text, now)
    except ValueError:
        return "?"


def when(text: str, now: datetime, *, wide: bool) -> str:
    """Return a time cell: its age (``2m ago``), or with ``wide`` the UTC time and its age."""
    if not wide:
        return age(text, now)
    try:
        return f"{display_utc(parse_utc(text))} ({age(text, now)})"
    except ValueError:
        return text


def status_cell(row: Mapping[str, Any], held: Mapping[str, str], now: datetime) -> Cell:
    """Return the status cell of a ``bees status`` row: its ``status_text``, except that an
    item waiting for approval shows what waits (``waiting for approval: mail.send``), not
    the held action's input (``bees approvals`` and ``bees item show`` show that), or, once
    a person answered all of it while ``bees run`` was down, the decision (``approved by
    maya@example.com 2m ago: delivered when bees run starts``; issue 23, point 2); a run
    with live pieces adds their count (``running (2 pieces)``)."""
    status = str(row.get("status") or "")
    text = str(row.get("status_text") or status or "?")
    queued = row.get("queued_decisions") or []
    if not row.get("team") and status == Status.WAITING_FOR_APPROVAL and row["id"] in held:
        text = f"{status}: {held[row['id']]}"
    elif queued and status == Status.WAITING_FOR_APPROVAL:
        # imported here: its models (pydantic, the workspace's) only when a row shows one
        from bees_cli.record.views import QueuedDecision, decisions_words

        text = decisions_words([QueuedDecision.model_validate(d) for d in queued], now)
    live = int(row.get("pieces") or 0)  # issue 14: the run's pieces waiting or running
    if live:
        text += f" ({live} piece{'' if live == 1 else 's'})"
    return Cell(text, EMPHASIS.get(status))


def status_lines(rows: Sequence[Mapping[str, Any]], held: Mapping[str, str], *,
                 now: datetime, width: int | None, wide: bool = False,
                 colour: bool = False) -> list[str]:
    """Return the ``bees status`` table: item, process, title, stage, status, agent, since.

    Args:
        rows: the rows of :class:`~bees_cli.usecases.models.StatusView` (this computer's,
            then the team's).
        held: item id → what its approval waits for (``StatusView.held``).
        now: the clock the ages are counted from (UTC).
        width: the width to fit, or None; ``wide`` ignores it.
        wide: every cell whole, and ``since`` as UTC time with its age.
        colour: emphasise failed and waiting statuses.
    """
    cells: list[list[str | Cell]] = [
        [str(r["id"]), str(r.get("process") or "-"), str(r.get("title") or "-"),
         str(r.get("stage") or "-"), status_cell(r, held, now), str(r.get("agent") or "-"),
         when(str(r["since"]), now, wide=wide)] for r in rows]
    return render(cells, STATUS_COLUMNS, width=None if wide else width, colour=colour)


def more_line(more: int) -> str | None:
    """Return the footer of a list cut at its limit (``120 more; --all to show all``)."""
    return f"{more} more; --all to show all" if more > 0 else None


def field_text(value: Any) -> str:
    """Return one input field's value as a person reads it: a text as it is, anything
    else as JSON (``["maya@example.com"]``)."""
    import json

    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def input_text(row: Any) -> str:
    """Return a held action's input on one line, field by field, recipients first
    (``to: wrong@example.org, subject: …, body: …``, issue 23, point 8); the request's
    ``summary`` for a finish, an empty input, or one that is not a JSON object."""
    from bees_cli.usecases.approvals import input_fields, request_input

    extra = row.model_extra or {}
    fields = input_fields(request_input(extra.get("input")))
    if not fields:
        return str(extra.get("summary") or "-")
    return ", ".join(f"{key}: {field_text(value)}" for key, value in fields)


def request_lines(row: Any) -> list[str]:
    """Return ``bees approvals show``'s lines for one waiting request: its item, request,
    stage, action, when it was asked, then its input with each field on its own line,
    recipients first, whole (a text's lines under its first), its digest, and the commands
    that decide it (issue 23, point 8).

    Args:
        row: an :class:`~bees_cli.usecases.models.ApprovalRow`.
    """
    from bees_cli.usecases.actions import summary_of
    from bees_cli.usecases.approvals import input_fields, request_input

    extra = row.model_extra or {}
    action = extra.get("action")
    lines = [f"item      {row.item_id}  {row.title}", f"request   {row.id}",
             f"stage     {row.stage} (round {extra.get('round', '?')})",
             f"action    {action} ({extra.get('kind')})" if action
             else f"action    finish: {extra.get('summary') or '-'}",
             f"asked     {display_utc(parse_utc(row.asked_at))}"]
    if extra.get("interrupted_at"):
        lines.append(f"note      may already have run (interrupted at "
                     f"{display_utc(parse_utc(extra['interrupted_at']))}): approve with "
                     "--ran (it ran) or --again (run it once more)")
    if extra.get("final_answer") is not None:  # a held finish: what it lets through
        text = str(extra["final_answer"]).rstrip("\n").split("\n")
        lines.append(f"answer    {text[0]}".rstrip())
        lines += [f"          {more}".rstrip() for more in text[1:]]
    for call in extra.get("tool_calls") or []:
        lines.append(f"called    {call['tool']} {summary_of(call['input'])} ({call['outcome']})")
    if extra.get("tools_not_called"):
        lines.append(f"not called {', '.join(extra['tools_not_called'])}")
    value = request_input(extra.get("input"))
    fields = input_fields(value)
    if fields:
        lines.append("input")
        width = max(len(str(key)) for key, _ in fields)
        for key, field in fields:
            text = field_text(field).split("\n")
            lines.append(f"  {str(key):<{width}}  {text[0]}".rstrip())
            lines += [f"  {'':<{width}}  {more}".rstrip() for more in text[1:]]
    elif value is not None:
        lines.append(f"input     {field_text(value)}")
    if extra.get("digest"):
        lines.append(f"digest    {extra['digest']}")
    approve = f"bees approve {row.item_id} --action {row.id}"
    approves = ([f"{approve} --ran", f"{approve} --again"] if extra.get("interrupted_at")
                else [approve])
    lines.append("decide    " + "  |  ".join(
        [*approves, f'bees deny {row.item_id} --action {row.id} --reason "…"']))
    return lines


def approval_lines(rows: Sequence[Any], *, now: datetime, width: int | None,
                   wide: bool = False) -> list[str]:
    """Return the ``bees approvals`` table: item, request, title, stage, the action (or
    ``finish``), its input on one line with the recipients first (:func:`input_text`; after
    ``may already have run:`` for an interrupted action), and when it was asked. ``wide``
    cuts no cell; otherwise the input is cut to the width at its end.

    Args:
        rows: :class:`~bees_cli.usecases.models.ApprovalRow` models (their ``action`` and
            ``summary`` fields as the request has them).
        now: the clock the ages are counted from (UTC).
        width: the width to fit, or None; ``wide`` ignores it.
        wide: every cell whole, and ``asked`` as UTC time with its age.
    """
    cells: list[list[str | Cell]] = []
    for r in rows:
        extra = r.model_extra or {}
        summary = input_text(r)
        if extra.get("interrupted_at"):
            summary = f"may already have run: {summary}"
        cells.append([r.item_id, str(r.id), r.title, r.stage, str(extra.get("action") or
                      "finish"), summary, when(r.asked_at, now, wide=wide)])
    return render(cells, APPROVAL_COLUMNS, width=None if wide else width)


HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"
ERASE_LINE, ERASE_BELOW = "\x1b[K", "\x1b[J"


def redraw(lines: Sequence[str], drawn: int) -> str:
    """Return the text that replaces the ``drawn`` lines last written (the cursor below
    them) with ``lines``: back to their first line, each line then erased to its end, and
    what is left below erased."""
    back = f"\x1b[{drawn}F" if drawn else ""
    return back + "".join(f"{line}{ERASE_LINE}\n" for line in lines) + ERASE_BELOW


def watch(frame: Callable[[int], list[str]], out: TextIO, *, every: float,
          wait: Callable[[float], None], height: int, terminal: bool) -> None:
    """Draw ``frame(rows)`` on ``out`` every ``every`` seconds, in place, until Ctrl-C.

    Args:
        frame: returns the lines of one frame, at most the number of lines it is given.
        out: where to draw.
        every: seconds between frames.
        wait: sleeps that long (tests give one that raises ``KeyboardInterrupt``).
        height: the terminal's lines; a frame gets one less (the cursor's line).
        terminal: ``out`` is a terminal: redraw in place with the cursor hidden; else each
            frame follows the last, after a blank line.
    """
    drawn = 0
    if terminal:
        out.write(HIDE_CURSOR)
    try:
        while True:
            lines = frame(max(1, height - 1))[: max(1, height - 1)]
            if terminal:
                out.write(redraw(lines, drawn))
            else:
                out.write(("\n" if drawn else "") + "".join(f"{ln}\n" for ln in lines))
            out.flush()
            drawn = len(lines)
            wait(every)
    except KeyboardInterrupt:
        pass
    finally:
        if terminal:
            out.write(SHOW_CURSOR)
            out.flush()
