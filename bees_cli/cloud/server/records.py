"""The shared record: per item the greatest :class:`~bees_cli.cloud.wire.RecordKey` wins."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from bees_cli.cloud import wire
from bees_cli.cloud.server.engine import Database
from bees_cli.cloud.server.owners import owner_of, owner_select
from bees_cli.cloud.server.people import People, Who
from bees_cli.cloud.server.refusals import Conflict
from bees_cli.cloud.server.tables import owners, people, record, teams
from bees_cli.utc import from_us


class Records:
    """The shared record of one database (DESIGN.md "Shared record").

    Per item the record keeps the change with the greatest key (origin time, machine
    id, content digest; :class:`~bees_cli.cloud.wire.RecordKey`): the same on every
    server and computer whatever the order of arrival. Each applied change takes a
    fresh per-team sequence number; pushes of one team are serialised on the team row,
    so sequence numbers become visible in order and a pull ``since`` a cursor never
    misses one.

    Args:
        db: the database.
        people: authenticates the asker inside each operation's transaction.
    """

    def __init__(self, db: Database, people: People) -> None:
        self.db = db
        self.people = people

    def push(self, who: Who, batch: wire.RecordPush) -> wire.PushAnswer:
        """Apply a batch of record changes; per item the greatest key wins.

        Any order and any split into batches ends in the same record. The whole batch
        is refused, nothing written, when a change comes from a machine other than the
        item's current owner.

        Raises:
            Unauthorized: unknown or revoked token.
            Conflict: ``not_owner`` naming the item and its owner.
        """
        changes = batch.changes
        item_ids = sorted({c.item_id for c in changes})
        with self.db.transaction() as conn:
            who = self.people.principal(conn, who)
            if not changes:
                return wire.PushAnswer(received=0, applied=0)
            held = {
                row.item_id: row
                for row in conn.execute(
                    owner_select().where(
                        owners.c.team_id == who.team_id,
                        owners.c.item_id.in_(item_ids),
                        owners.c.released_us.is_(None),
                    )
                )
            }
            for change in changes:
                row = held.get(change.item_id)
                if row is not None and row.machine_id != change.machine_id:
                    owner = owner_of(row)
                    raise Conflict(
                        "not_owner",
                        f"item {change.item_id} is owned by {owner.computer_name}"
                        f" (machine {owner.machine_id}); machine {change.machine_id}"
                        " may not change it",
                        hint="only the owning computer sends changes to an item",
                        owner=owner,
                    )
            last = conn.execute(
                teams.update()
                .where(teams.c.id == who.team_id)
                .values(record_seq=teams.c.record_seq + len(changes))
                .returning(teams.c.record_seq)
            ).scalar_one()
            seq = int(last) - len(changes)
            applied = 0
            for change in changes:
                seq += 1
                key = wire.RecordKey.of(change)
                values = {
                    "team_id": who.team_id,
                    "item_id": change.item_id,
                    "fields": wire.canonical_json(change.fields),
                    "digest": key.digest,
                    "origin_us": key.origin_us,
                    "machine_id": key.machine_id,
                    "person_id": who.person_id,
                    "seq": seq,
                }
                stmt = self.db.insert(record).values(**values)
                result = conn.execute(
                    stmt.on_conflict_do_update(
                        index_elements=["team_id", "item_id"],
                        set_={k: stmt.excluded[k] for k in values if k != "team_id"},
                        where=self._key(stmt.excluded) > self._key(record.c),
                    ).returning(record.c.id)
                )
                applied += len(result.all())  # a row comes back only when written
        return wire.PushAnswer(received=len(changes), applied=applied)

    def _key(self, columns: Any) -> Any:
        """Return the SQL tuple that orders rows as :class:`~bees_cli.cloud.wire.RecordKey`."""
        return sa.tuple_(
            columns.origin_us,
            self.db.bytewise(columns.machine_id),
            self.db.bytewise(columns.digest),
        )

    def pull(self, who: Who, since: int, limit: int = wire.MAX_PULL) -> wire.PullAnswer:
        """Return the team's items whose sequence number is greater than ``since``.

        Cost depends on the number of changes returned, not on the record's size
        (index on team and sequence).

        Args:
            who: the asker.
            since: the cursor of the previous pull (0 for everything).
            limit: most entries returned; ``more`` says whether another page may follow.

        Raises:
            Unauthorized: unknown or revoked token.
        """
        with self.db.transaction(write=False) as conn:
            who = self.people.principal(conn, who)
            rows = conn.execute(
                sa.select(record, people.c.email)
                .join(people, people.c.id == record.c.person_id)
                .where(record.c.team_id == who.team_id, record.c.seq > since)
                .order_by(record.c.seq)
                .limit(limit + 1)
            ).all()
        more = len(rows) > limit
        entries = [
            wire.RecordEntry(
                item_id=row.item_id,
                fields=json.loads(row.fields),
                origin_time=from_us(row.origin_us),
                machine_id=row.machine_id,
                person=row.email,
                seq=row.seq,
            )
            for row in rows[:limit]
        ]
        cursor = entries[-1].seq if entries else since
        return wire.PullAnswer(changes=entries, cursor=cursor, more=more)
