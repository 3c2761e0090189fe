"""What ``bees status`` warns about: the clock skew against Bees Cloud, the changes it
refused, old team rows; as machine values (``--json``) and worded (the text view)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from bees_cli.usecases.models import StatusWarning

if TYPE_CHECKING:
    import sqlite3


def status_warnings(record_path: Path, now: datetime) -> list[str]:
    """Return what ``bees status`` warns about, one line each: the clock skew against Bees
    Cloud, the changes it refused ("your changes are refused: this computer's clock is
    412 s ahead ..."), and old team rows ("team rows as of 3 min ago: Bees Cloud
    unreachable"; issue 11, points 4 and 5): :func:`status_warning_values`, worded."""
    return warning_lines(status_warning_values(record_path, now), now)


def status_warning_values(record_path: Path, now: datetime, *,
                          db: sqlite3.Connection | None = None) -> list[StatusWarning]:
    """Return what ``bees status`` warns about as machine values (``bees status --json``;
    :func:`warning_lines` words them), the shared record opened once: the clock skew, each
    kind of refused change, old team rows.

    Args:
        record_path: this computer's ``record.db``.
        now: this computer's clock (UTC), for the age of the team rows.
        db: read through this connection (``bees status``'s one read,
            :meth:`~bees_cli.record.local.LocalRecord.reading`), not new ones.
    """
    from bees_cli.record.shared import SharedRecord
    from bees_cli.record.sync_notes import is_stale, skews

    shared = SharedRecord(record_path, db=db)
    found: list[StatusWarning] = []
    skew = shared.skew
    if skew is not None and skews(skew):
        found.append(StatusWarning(code="clock_skew", skew_seconds=round(skew, 3)))
    kinds: dict[tuple[str, float | None, str | None], list[tuple[str, str]]] = {}
    for refusal in shared.refused():
        kinds.setdefault((refusal.code, refusal.offset_seconds, refusal.owner),
                         []).append((refusal.item_id, refusal.message))
    found += [StatusWarning(code="changes_refused", refused=code,
                            items=[item for item, _ in refused], offset_seconds=offset,
                            owner=owner, messages=[message for _, message in refused])
              for (code, offset, owner), refused in kinds.items()]
    last, error = shared.meta("last_sync"), shared.meta("error")
    if is_stale(last, error, now):
        found.append(StatusWarning(code="team_rows_stale", last_sync=last,
                                   error=shared.meta("error_code") if error else None,
                                   error_text=error))
    return found


def warning_lines(values: list[StatusWarning], now: datetime) -> list[str]:
    """Return the text view's lines of ``bees status``'s warnings: each value worded
    (:mod:`bees_cli.record.sync_notes`), the refused changes one line per reason where the
    first of them stands.

    Args:
        values: :func:`status_warning_values` (after ``bees_run_gone``, when it is).
        now: this computer's clock (UTC), for the age of the team rows.
    """
    from bees_cli.record.sync_notes import reason_words, refused_words, skew_words, stale_words
    from bees_cli.usecases.liveness import gone_words

    by_reason: dict[str, list[str]] = {}
    lines: list[str | None] = []
    for value in values:
        if value.code == "bees_run_gone":
            lines.append(gone_words(value.pid))
        elif value.code == "clock_skew" and value.skew_seconds is not None:
            lines.append(skew_words(value.skew_seconds))
        elif value.code == "changes_refused" and value.refused is not None:
            if not by_reason:
                lines.append(None)  # where the refused changes' lines stand
            for item, message in zip(value.items, value.messages, strict=True):
                reason = reason_words(value.refused, value.offset_seconds, value.owner, message)
                by_reason.setdefault(reason, []).append(item)
        elif value.code == "team_rows_stale":
            lines.append(stale_words(value.last_sync, value.error_text, value.error, now))
    refused = [refused_words(reason, items) for reason, items in by_reason.items()]
    return [word for line in lines
            for word in ([line] if line is not None else refused)]
