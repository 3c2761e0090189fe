"""What ``bees status`` and ``bees doctor`` say about the shared record: skew, refusals, age.

Rules (issue 11, points 4 and 5): a change Bees Cloud refused is shown until it is sent
("your changes are refused: this computer's clock is 412 s ahead"); the team's rows are
said to be old when the last sync is older than two sync intervals
(:data:`bees_cli.rules.SYNC_EVERY`): "team rows as of 3 min ago: Bees Cloud unreachable".
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from bees_cli import rules
from bees_cli.record.sync import SKEW_WARN, Refusal, SharedRecord
from bees_cli.utc import parse_utc

STALE_AFTER: timedelta = 2 * rules.SYNC_EVERY
"""Age of the last sync past which ``bees status`` says how old the team rows are."""


def refusal_reason(refusal: Refusal) -> str:
    """Return why one change was refused, for a person: ``this computer's clock is 412 s
    ahead``, ``owned by maya-desktop``, or the server's message."""
    if refusal.code == "clock_ahead" and refusal.offset_seconds is not None:
        return f"this computer's clock is {refusal.offset_seconds:.0f} s ahead"
    if refusal.code == "not_owner" and refusal.owner:
        return f"owned by {refusal.owner}"
    return refusal.message


def _shared(record: Path | SharedRecord) -> SharedRecord:
    """``record`` opened as a :class:`SharedRecord` (a caller asking several notes opens it
    once: each opening checks the record's tables)."""
    return record if isinstance(record, SharedRecord) else SharedRecord(record)


def refusal_lines(record: Path | SharedRecord) -> list[str]:
    """Return one line per reason of the changes Bees Cloud refused and that wait to be
    sent: ``your changes are refused: this computer's clock is 412 s ahead (2 items;
    kept until they can be sent)``; empty when nothing is refused."""
    by_reason: dict[str, list[str]] = {}
    for refusal in _shared(record).refused():
        by_reason.setdefault(refusal_reason(refusal), []).append(refusal.item_id)
    lines = []
    for reason, items in by_reason.items():
        which = items[0] if len(items) == 1 else f"{len(items)} items"
        lines.append(f"your changes are refused: {reason} ({which}; kept until they can "
                     "be sent)")
    return lines


def age_text(seconds: float) -> str:
    """Return an age for a person: ``40 s ago``, ``3 min ago``, ``2 h ago``, ``3 days ago``."""
    if seconds < 120:
        return f"{max(seconds, 0):.0f} s ago"
    if seconds < 2 * 3600:
        return f"{seconds // 60:.0f} min ago"
    if seconds < 2 * 86400:
        return f"{seconds // 3600:.0f} h ago"
    return f"{seconds // 86400:.0f} days ago"


def stale_line(record: Path | SharedRecord, now: datetime) -> str | None:
    """Return ``team rows as of 3 min ago: Bees Cloud unreachable`` when the last sync is
    older than :data:`STALE_AFTER` (None when it is recent, or when this computer never
    synced and never tried).

    The reason: ``Bees Cloud unreachable`` when the last round could not reach it, the last
    error otherwise, else ``bees run is not syncing (is it up?)``.
    """
    shared = _shared(record)
    last, error, code = shared.meta("last_sync"), shared.meta("error"), shared.meta("error_code")
    if last is None and error is None:
        return None
    if last is not None and now - parse_utc(last) <= STALE_AFTER:
        return None
    if code == "cloud_unreachable":
        why = "Bees Cloud unreachable"
    elif error:
        why = error
    else:
        why = "bees run is not syncing (is it up?)"
    if last is None:
        return f"team rows not synced yet: {why}"
    return f"team rows as of {age_text((now - parse_utc(last)).total_seconds())}: {why}"


def skew_warning(record: Path | SharedRecord) -> str | None:
    """Return a warning line when the last measured skew is over :data:`SKEW_WARN` s."""
    skew = _shared(record).skew
    if skew is None or abs(skew) <= SKEW_WARN:
        return None
    side = "behind" if skew > 0 else "ahead of"
    return (f"warning: this computer's clock is {abs(skew):.1f} s {side} Bees Cloud's;"
            " the shared record trusts each computer's clock (fix the system clock)")
