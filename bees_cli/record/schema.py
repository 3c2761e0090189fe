"""Every table of ``record.db`` and its ordered migrations, counted by ``PRAGMA user_version``.

Version 1 is exactly the tables the local record had before it was versioned (those of
``record/local.py``, ``record/fires.py`` and ``record/sync.py``, all ``IF NOT EXISTS``, so
a file made then becomes version 1 unchanged). Each later version only adds (a column, a
table, an index; version 6 rewrote stored times as :func:`bees_cli.utc.format_utc` text): a
file keeps its rows. Version 7 adds where a handed-over fact and item came from
(:mod:`bees_cli.record.story`); version 9 indexes what ``bees status`` reads
(:mod:`bees_cli.record.listing`); version 11 keeps a model call's retry beside the reason
(:class:`~bees_cli.record.views.ModelRetry`).
Opening a file runs the pending migrations in one transaction; a file from a newer Bees
(a version this code does not know) is refused, never guessed at (STYLE.md, habit 21).
A new value of a closed set stored here (a ``Status``, a ``WaitKind``) is a migration too,
even one with no statement, so an older Bees refuses the file instead of misreading a row.

Tables (what each holds is described where it is used)::

    items, events, approvals, journal, slots, controls   bees_cli.record.local
    intents (version 3)                                   bees_cli.record.local
    fires, fired_keys, claims                             bees_cli.record.fires
    sync_outbox, team_items, sync_meta (+ two triggers)   bees_cli.record.sync
    sync_refused (version 3)                              bees_cli.record.sync
    pieces (version 10)                                   bees_cli.record.pieces
    team_items.generation, claims.epoch (version 12)      bees_cli.record.sync, .fires
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from bees_cli.errors import UserError
from bees_cli.utc import format_utc, parse_utc

NOW_MS = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
"""SQLite's clock as UTC ISO 8601 with milliseconds: what the triggers of versions 1-5 wrote."""

NOW_UTC = "strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'"
"""SQLite's clock as :func:`bees_cli.utc.format_utc` text (its clock has milliseconds; the
microseconds are padded with zeros): the origin time of a change, from version 6."""

UTC_FUNCTION = "bees_utc"
"""The SQL function :func:`upgrade` adds for migrations: old UTC text -> format_utc text."""


@dataclass(frozen=True)
class Migration:
    """One step of the record's schema: ``version`` reached after running ``statements``."""

    version: int
    what: str
    statements: tuple[str, ...]


V1 = Migration(1, "the tables of record.db before it was versioned", (
    """CREATE TABLE IF NOT EXISTS items (
    id TEXT PRIMARY KEY,
    process TEXT NOT NULL,
    title TEXT NOT NULL,
    workspace TEXT NOT NULL,
    run_folder TEXT NOT NULL,
    stage TEXT,
    status TEXT NOT NULL,
    reason TEXT,
    agent TEXT,
    since TEXT NOT NULL,
    created TEXT NOT NULL,
    input TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id TEXT NOT NULL REFERENCES items(id),
    key TEXT NOT NULL,
    at TEXT NOT NULL,
    kind TEXT NOT NULL,
    stage TEXT,
    round INTEGER,
    data TEXT NOT NULL,
    UNIQUE (item_id, key)
)""",
    """CREATE TABLE IF NOT EXISTS approvals (
    item_id TEXT NOT NULL,
    id INTEGER NOT NULL,
    stage TEXT NOT NULL,
    status TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (item_id, id)
)""",
    """CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id TEXT NOT NULL,
    stage TEXT NOT NULL,
    action TEXT NOT NULL,
    digest TEXT NOT NULL,
    exit_code INTEGER NOT NULL,
    at TEXT NOT NULL,
    data TEXT NOT NULL,
    UNIQUE (item_id, stage, action, digest, at)
)""",
    """CREATE TABLE IF NOT EXISTS slots (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    agent TEXT NOT NULL,
    item_id TEXT NOT NULL,
    stage TEXT NOT NULL,
    requested TEXT NOT NULL,
    granted INTEGER NOT NULL DEFAULT 0,
    UNIQUE (item_id, stage)
)""",
    """CREATE TABLE IF NOT EXISTS controls (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id TEXT NOT NULL,
    name TEXT NOT NULL,
    payload TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'queued',
    at TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS fires (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    schedule_id TEXT NOT NULL,
    key TEXT NOT NULL,
    scheduled TEXT NOT NULL,
    local TEXT NOT NULL,
    handled TEXT NOT NULL,
    outcome TEXT NOT NULL,
    detail TEXT,
    tries INTEGER NOT NULL DEFAULT 0,
    UNIQUE (schedule_id, scheduled)
)""",
    """CREATE TABLE IF NOT EXISTS fired_keys (
    key TEXT PRIMARY KEY,
    scheduled TEXT NOT NULL,
    at TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS claims (
    item_id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    computer TEXT,
    detail TEXT,
    tried TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS sync_outbox (
    item_id TEXT PRIMARY KEY,
    origin TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS team_items (
    item_id TEXT PRIMARY KEY,
    fields TEXT NOT NULL,
    origin_us INTEGER NOT NULL,
    machine_id TEXT NOT NULL,
    digest TEXT NOT NULL,
    person TEXT NOT NULL,
    seq INTEGER NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS sync_meta (
    key TEXT PRIMARY KEY,
    value TEXT
)""",
    f"""CREATE TRIGGER IF NOT EXISTS sync_item_added AFTER INSERT ON items BEGIN
    INSERT OR REPLACE INTO sync_outbox (item_id, origin) VALUES (NEW.id, {NOW_MS});
END""",
    f"""CREATE TRIGGER IF NOT EXISTS sync_item_changed
AFTER UPDATE OF stage, status, reason, agent, title ON items BEGIN
    INSERT OR REPLACE INTO sync_outbox (item_id, origin) VALUES (NEW.id, {NOW_MS});
END""",
))

V2 = Migration(2, "items.wait: why a waiting item waits (a WaitKind value)", (
    "ALTER TABLE items ADD COLUMN wait TEXT",
    # the kinds older Bees wrote only as reason text, read once here and never again
    "UPDATE items SET wait = 'engine_not_running' WHERE status = 'waiting'"
    " AND reason = 'the engine is not running (bees run)'",
    "UPDATE items SET wait = 'owned_elsewhere' WHERE status = 'waiting'"
    " AND reason LIKE 'owned by %'",
    "UPDATE items SET wait = 'claim_pending' WHERE status = 'waiting'"
    " AND reason LIKE 'cannot claim owner%'",
))

V3 = Migration(3, "fired_keys: the schedule, workspace, when the key was held here and the "
               "item it made (a held key becomes exactly one item)", (
    "ALTER TABLE fired_keys ADD COLUMN schedule_id TEXT",
    "ALTER TABLE fired_keys ADD COLUMN workspace TEXT",
    "ALTER TABLE fired_keys ADD COLUMN held TEXT",
    "ALTER TABLE fired_keys ADD COLUMN item_id TEXT",
))

V4 = Migration(4, "intents: an add-on action about to run, written before it runs", (
    """CREATE TABLE IF NOT EXISTS intents (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id TEXT NOT NULL,
    stage TEXT NOT NULL,
    action TEXT NOT NULL,
    digest TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    at TEXT NOT NULL,
    ended TEXT
)""",
    "CREATE INDEX IF NOT EXISTS intents_action ON intents (item_id, stage, action, digest)",
))

V5 = Migration(5, "sync_refused: record changes Bees Cloud refused, with why", (
    """CREATE TABLE IF NOT EXISTS sync_refused (
    item_id TEXT PRIMARY KEY,
    origin TEXT NOT NULL,
    code TEXT NOT NULL,
    message TEXT NOT NULL,
    offset_seconds REAL,
    owner TEXT,
    at TEXT NOT NULL
)""",
))


UTC_COLUMNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("items", ("since", "created")),
    ("events", ("at",)),
    ("journal", ("at",)),
    ("slots", ("requested",)),
    ("controls", ("at",)),
    ("intents", ("at", "ended")),
    ("fires", ("scheduled", "handled")),
    ("fired_keys", ("scheduled", "at", "held")),
    ("claims", ("tried",)),
    ("sync_outbox", ("origin",)),
    ("sync_refused", ("origin", "at")),
)
"""Every column of UTC text, by table (``sync_meta`` values are read with parse_utc only)."""


def _rewrite(table: str, columns: tuple[str, ...]) -> str:
    sets = ", ".join(f"{c} = {UTC_FUNCTION}({c})" for c in columns)
    return f"UPDATE {table} SET {sets}"


V6 = Migration(6, "one UTC text: every stored time rewritten as format_utc writes it "
               "(microseconds and Z), so equal times are equal text and text order is time "
               "order; the sync triggers write that text too", (
    *(_rewrite(table, columns) for table, columns in UTC_COLUMNS),
    "DROP TRIGGER IF EXISTS sync_item_added",
    "DROP TRIGGER IF EXISTS sync_item_changed",
    f"""CREATE TRIGGER sync_item_added AFTER INSERT ON items BEGIN
    INSERT OR REPLACE INTO sync_outbox (item_id, origin) VALUES (NEW.id, {NOW_UTC});
END""",
    f"""CREATE TRIGGER sync_item_changed
AFTER UPDATE OF stage, status, reason, agent, title ON items BEGIN
    INSERT OR REPLACE INTO sync_outbox (item_id, origin) VALUES (NEW.id, {NOW_UTC});
END""",
))


V7 = Migration(7, "items.status may be 'lost' (the engine's database was replaced while "
               "the item was under way): a new value of a closed set, no statement", ())
V8 = Migration(8, "the story travels with a handover: events.origin and events.computer (the "
               "machine id and name of the computer that recorded a fact another computer "
               "handed over; NULL: this one) and items.created_on (the computer that created "
               "the item; NULL: this one)", (
    "ALTER TABLE events ADD COLUMN origin TEXT",
    "ALTER TABLE events ADD COLUMN computer TEXT",
    "ALTER TABLE items ADD COLUMN created_on TEXT",
))


ENDED_FIRST = "status IN ('done', 'cancelled')"
"""1 for an item that ended (done, cancelled), else 0: the first key of ``bees status``'s
order, written exactly so in its query and in the index of version 9."""

V9 = Migration(9, "items_listing and items_status: bees status reads its most relevant rows "
               "(not ended first, then the latest changed) and the free ones by index, not "
               "by a scan of every item and its input (issue 16, point 3)", (
    f"CREATE INDEX IF NOT EXISTS items_listing ON items (({ENDED_FIRST}), since DESC, id DESC)",
    "CREATE INDEX IF NOT EXISTS items_status ON items (status)",
))

V10 = Migration(10, "pieces: work an agent handed to another agent inside its stage "
                "(issue 14), one row per piece with its model as JSON", (
    """CREATE TABLE IF NOT EXISTS pieces (
    item_id TEXT NOT NULL,
    stage TEXT NOT NULL,
    piece TEXT NOT NULL,
    round INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    parent TEXT,
    depth INTEGER NOT NULL,
    agent TEXT,
    status TEXT NOT NULL,
    ask_digest TEXT NOT NULL,
    data TEXT NOT NULL,
    updated TEXT NOT NULL,
    PRIMARY KEY (item_id, stage, piece)
)""",
    "CREATE INDEX IF NOT EXISTS pieces_ask ON pieces (item_id, stage, ask_digest, status)",
    "CREATE INDEX IF NOT EXISTS pieces_status ON pieces (status)",
))


V11 = Migration(11, "a model call that waits for its next try (issue 23, point 7): items.wait "
                "may be 'model' (a new value of a closed set), and items.model_retry holds "
                "which try, of how many, until when and why (JSON; NULL otherwise)", (
    "ALTER TABLE items ADD COLUMN model_retry TEXT",
))


V12 = Migration(12, "team_items.generation: the owner generation of each team row, which "
                "orders an item's changes before the origin time (0: a row pulled before, or "
                "from a server without generations); claims.epoch: the owner generation a "
                "claim made here was granted (NULL: not known); sync_refused.code may be "
                "'superseded' (issue 23, point 4)", (
    "ALTER TABLE team_items ADD COLUMN generation INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE claims ADD COLUMN epoch INTEGER",
))


MIGRATIONS: tuple[Migration, ...] = (V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12)
"""Every migration, in order; version N is ``MIGRATIONS[N - 1]``. Only ever append."""

LATEST = MIGRATIONS[-1].version
"""The version this code writes and reads."""


def version(db: sqlite3.Connection) -> int:
    """Return the file's ``PRAGMA user_version`` (0: made before versions existed, or new)."""
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def upgrade(db: sqlite3.Connection, path: Path,
            migrations: tuple[Migration, ...] = MIGRATIONS) -> int:
    """Bring the open record ``db`` to the latest version; return the version it had.

    The pending migrations run in one ``BEGIN IMMEDIATE`` transaction, together with the
    new ``user_version``: a crash or a failing step leaves the file as it was, and two
    processes opening it at once migrate it once (the second finds it done).

    Args:
        db: an autocommit connection (``isolation_level=None``) to the record file.
        path: the file, for messages.
        migrations: the ordered steps (tests pass their own).

    Returns:
        The version found before upgrading (0 for a new or unversioned file).

    Raises:
        UserError: the file has a version newer than this code knows (a newer Bees wrote it).
    """
    latest = migrations[-1].version
    found = version(db)
    if found == latest:
        return found
    _refuse_newer(found, latest, path)
    db.create_function(UTC_FUNCTION, 1, _utc_text, deterministic=True)
    db.execute("BEGIN IMMEDIATE")
    try:
        found = version(db)  # another process may have migrated it meanwhile
        _refuse_newer(found, latest, path)
        for step in migrations:
            if step.version > found:
                for statement in step.statements:
                    db.execute(statement)
        db.execute(f"PRAGMA user_version = {int(latest)}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return found


def _utc_text(text: str | bytes | int | float | None) -> str | bytes | int | float | None:
    """Return stored UTC ``text`` as format_utc writes it; anything else (NULL, text that is
    not a time with a zone) unchanged, so a migration never loses a value."""
    if not isinstance(text, str):
        return text
    try:
        return format_utc(parse_utc(text))
    except ValueError:
        return text


def _refuse_newer(found: int, latest: int, path: Path) -> None:
    if found > latest:
        raise UserError(
            f"{path} was written by a newer Bees (record version {found}; this Bees reads "
            f"up to {latest})",
            hint="upgrade Bees (pip install --upgrade bees-cli), or move the file aside "
                 f"(mv {path} {path}.newer) and Bees starts an empty one")
