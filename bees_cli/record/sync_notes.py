"""What ``bees status`` and ``bees doctor`` say about the shared record: skew, refusals, age.

Rules (issue 11, points 4 and 5; issue 23, point 4): a change Bees Cloud refused is shown
until it is sent ("the shared record refused 1 change: this computer's clock is 412 s
ahead"); the team's rows are
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
    """Return why one change was refused, for a person (:func:`reason_words`)."""
    return reason_words(refusal.code, refusal.offset_seconds, refusal.owner, refusal.message)


def reason_words(code: str, offset_seconds: float | None, owner: str | None,
                 message: str) -> str:
    """Return why a change was refused, for a person: ``this computer's clock is 412 s
    ahead`` (``clock_ahead``), ``owned by maya-desktop`` (``not_owner``), :data:`SUPERSEDED`
    (``superseded``), or the server's ``message``."""
    if code == "clock_ahead" and offset_seconds is not None:
        return f"this computer's clock is {offset_seconds:.0f} s ahead"
    if code == "superseded":
        return SUPERSEDED
    if code == "not_owner" and owner:
        return f"owned by {owner}"
    return message


SUPERSEDED = ("it holds a change from this computer stamped at or after this one; did its "
              "clock go back?")
"""Why a ``superseded`` change was refused, for a person: within one owner generation only
the owner writes, so the record's greater key is this computer's own, stamped later."""


def _shared(record: Path | SharedRecord) -> SharedRecord:
    """``record`` opened as a :class:`SharedRecord` (a caller asking several notes opens it
    once: each opening checks the record's tables)."""
    return record if isinstance(record, SharedRecord) else SharedRecord(record)


def refusal_lines(record: Path | SharedRecord) -> list[str]:
    """Return one line per reason of the changes Bees Cloud refused and that wait to be
    sent: ``the shared record refused 2 changes: this computer's clock is 412 s ahead (2
    items; kept until they can be sent)``; empty when nothing is refused."""
    by_reason: dict[str, list[str]] = {}
    for refusal in _shared(record).refused():
        by_reason.setdefault(refusal_reason(refusal), []).append(refusal.item_id)
    return [refused_words(reason, items) for reason, items in by_reason.items()]


def refused_words(reason: str, items: list[str]) -> str:
    """Return the line of the changes of ``items`` refused for ``reason``: ``the shared
    record refused N changes: REASON (ITEM, or N items; kept until they can be sent)``
    (one change per item: the outbox keeps an item's latest)."""
    which = items[0] if len(items) == 1 else f"{len(items)} items"
    changes = "1 change" if len(items) == 1 else f"{len(items)} changes"
    return (f"the shared record refused {changes}: {reason} ({which}; kept until they can be"
            " sent)")


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
    synced and never tried; :func:`is_stale`, :func:`stale_words`)."""
    shared = _shared(record)
    last, error, code = shared.meta("last_sync"), shared.meta("error"), shared.meta("error_code")
    return stale_words(last, error, code, now) if is_stale(last, error, now) else None


def is_stale(last: str | None, error: str | None, now: datetime) -> bool:
    """Return whether the team rows are old: the last sync (``last``, UTC text; None:
    never) is older than :data:`STALE_AFTER`, or never came though a sync was tried
    (``error``: the last sync's error)."""
    return (last is not None or error is not None) and (
        last is None or now - parse_utc(last) > STALE_AFTER)


def stale_words(last: str | None, error: str | None, code: str | None, now: datetime) -> str:
    """Return the line of old team rows: ``team rows as of 3 min ago: WHY`` (``team rows not
    synced yet: WHY`` when ``last`` is None).

    WHY: ``Bees Cloud unreachable`` when the last round could not reach it (``code``), the
    last ``error`` otherwise, else ``bees run is not syncing (is it up?)``.
    """
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
    return skew_words(skew) if skew is not None and skews(skew) else None


def skews(skew: float) -> bool:
    """Return whether a measured skew (Bees Cloud's clock minus this one, seconds) is over
    :data:`SKEW_WARN` s: ``bees status`` warns."""
    return abs(skew) > SKEW_WARN


def skew_words(skew: float) -> str:
    """Return the warning line of a skew of ``skew`` s (Bees Cloud's clock minus this one)."""
    side = "behind" if skew > 0 else "ahead of"
    return (f"warning: this computer's clock is {abs(skew):.1f} s {side} Bees Cloud's;"
            " the shared record trusts each computer's clock (fix the system clock)")
