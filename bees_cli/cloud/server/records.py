"""The shared record: per item the greatest :class:`~bees_cli.cloud.wire.RecordKey` wins."""

from __future__ import annotations

import functools
import hashlib
import json
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from bees_cli.cloud import wire
from bees_cli.cloud.server.engine import Database
from bees_cli.cloud.server.machines import Machines
from bees_cli.cloud.server.owners import owner_of, owner_select
from bees_cli.cloud.server.people import People, Who
from bees_cli.cloud.server.tables import owners, people, record, teams
from bees_cli.utc import format_utc, from_us, to_us


class Records:
    """The shared record of one database (DESIGN.md "Shared record").

    Per item the record keeps the change with the greatest key (owner generation, origin
    time, machine id, content digest; :class:`~bees_cli.cloud.wire.RecordKey`): the same on
    every server and computer whatever the order of arrival. A change's generation is the
    epoch of the item's latest owner row when it is taken (the writer's own: any other
    machine is refused), 0 for an item never claimed; the computer does not send it, so an
    older Bees is ordered by generation too. Each applied change takes a
    fresh per-team sequence number; pushes of one team are serialised on the team row
    (locked before the checks of a push), so sequence numbers become visible in order,
    a pull ``since`` a cursor never misses one, and the first writer of an item never
    claimed is decided once.

    Args:
        db: the database.
        people: authenticates the asker inside each operation's transaction.
        machines: binds machine ids to people.
    """

    def __init__(self, db: Database, people: People, machines: Machines) -> None:
        self.db = db
        self.people = people
        self.machines = machines

    def push(
        self, who: Who, batch: wire.RecordPush, *, generations: bool = False
    ) -> wire.PushAnswer:
        """Apply a batch of record changes; per item the greatest key wins.

        Any order and any split into batches ends in the same record. Each change is
        first checked, and refused on its own (listed in the answer, nothing written
        for it) when:

        - its machine id belongs to another person (``machine_not_yours``);
        - its origin time is ahead of the server clock by more than
          :data:`~bees_cli.cloud.wire.CLOCK_TOLERANCE_SECONDS` (``clock_ahead``);
        - its fields are larger than :data:`~bees_cli.cloud.wire.MAX_FIELDS_BYTES`
          (``too_large``);
        - it does not come from the item's writer (``not_owner``): the machine of the
          item's latest owner row (holding it, or having released it last); for an
          item never claimed, the machine that first wrote its record (the first
          accepted change binds it).

        With ``generations`` (a Bees that knows them asked), a checked change that lost to
        a greater key is listed too (``superseded``), so the computer keeps it and shows it
        instead of dropping it; an exact repeat of the change the record holds (a retried
        push) is not.

        Raises:
            Unauthorized: unknown or revoked token.
        """
        changes = batch.changes
        item_ids = sorted({c.item_id for c in changes})
        with self.db.transaction() as conn:
            who = self.people.principal(conn, who)
            if not changes:
                return wire.PushAnswer(received=0, applied=0)
            # Pushes of one team take turns from here (the team row is locked), so the
            # checks below see every change committed before and none half-made.
            conn.execute(sa.select(teams.c.id).where(teams.c.id == who.team_id).with_for_update())
            # Machine ids are bound in sorted order, so two pushes never wait on each other.
            mine = {
                m: self.machines.is_mine(conn, who, m)
                for m in sorted({c.machine_id for c in changes})
            }
            now = self.db.clock()
            latest, writers = self._owners_and_writers(conn, who.team_id, item_ids)
            accepted: list[tuple[wire.RecordChange, str, int]] = []
            refused: list[wire.RefusedChange] = []
            for change in changes:
                text = wire.canonical_json(change.fields)
                refusal = self._refusal(
                    change,
                    text,
                    now,
                    mine[change.machine_id],
                    latest.get(change.item_id),
                    writers.get(change.item_id),
                )
                if refusal is not None:
                    refused.append(refusal)
                    continue
                owner_row = latest.get(change.item_id)
                if owner_row is None:
                    writers.setdefault(change.item_id, change.machine_id)
                generation = 0 if owner_row is None else int(owner_row.epoch)
                accepted.append((change, text, generation))
            lost = self._write(conn, who.team_id, who.person_id, accepted)
            if generations and lost:
                refused += self._superseded(conn, who.team_id, lost)
        applied = len(accepted) - len(lost)
        return wire.PushAnswer(received=len(changes), applied=applied, refused=refused)

    @staticmethod
    def _owners_and_writers(
        conn: Any, team_id: int, item_ids: list[str]
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """Return, for the items ``item_ids`` of team ``team_id``, the latest owner row of
        each claimed one and the machine that wrote the record of each written one."""
        latest: dict[str, Any] = {}
        for row in conn.execute(
            owner_select()
            .where(owners.c.team_id == team_id, owners.c.item_id.in_(item_ids))
            .order_by(owners.c.epoch)
        ):
            latest[row.item_id] = row  # the greatest epoch comes last
        writers: dict[str, str] = {
            row.item_id: row.machine_id
            for row in conn.execute(
                sa.select(record.c.item_id, record.c.machine_id).where(
                    record.c.team_id == team_id, record.c.item_id.in_(item_ids)
                )
            )
        }
        return latest, writers

    @staticmethod
    def _refusal(
        change: wire.RecordChange,
        text: str,
        now: datetime,
        mine: bool,
        owner_row: Any,
        writer: str | None,
    ) -> wire.RefusedChange | None:
        """Return why ``change`` is refused (see :meth:`push`), or None when it may apply."""

        def refuse(code: wire.RefusalCode, message: str, **extra: Any) -> wire.RefusedChange:
            return wire.RefusedChange(
                item_id=change.item_id,
                origin_time=change.origin_time,
                machine_id=change.machine_id,
                code=code,
                message=message,
                **extra,
            )

        if not mine:
            return refuse(
                "machine_not_yours",
                f"machine {change.machine_id} belongs to another person of the team",
            )
        offset = (change.origin_time - now).total_seconds()
        if offset > wire.CLOCK_TOLERANCE_SECONDS:
            return refuse(
                "clock_ahead",
                f"the change is stamped {offset:.0f} s ahead of the Bees Cloud clock"
                f" (at most {wire.CLOCK_TOLERANCE_SECONDS} s are allowed):"
                " this computer's clock is ahead",
                offset_seconds=offset,
            )
        size = len(text.encode("utf-8"))
        if size > wire.MAX_FIELDS_BYTES:
            return refuse(
                "too_large",
                f"the item's fields are {size} bytes; at most {wire.MAX_FIELDS_BYTES} are allowed",
            )
        if owner_row is not None and owner_row.machine_id != change.machine_id:
            owner = owner_of(owner_row)
            state = "owned" if owner.held else "released last"
            return refuse(
                "not_owner",
                f"item {change.item_id} is {state} by {owner.computer_name}"
                f" (machine {owner.machine_id}); machine {change.machine_id} may not change it",
                owner=owner,
            )
        if owner_row is None and writer is not None and writer != change.machine_id:
            return refuse(
                "not_owner",
                f"item {change.item_id} is written by machine {writer};"
                f" machine {change.machine_id} may not change it",
            )
        return None

    def _write(
        self,
        conn: Any,
        team_id: int,
        person_id: int,
        accepted: list[tuple[wire.RecordChange, str, int]],
    ) -> list[tuple[wire.RecordChange, wire.RecordKey]]:
        """Write the accepted changes (each with its generation) where their key is greater;
        return those that did not win, each with its key, in the order of ``accepted``.

        Each change takes the next sequence number in order. The changes go in one
        prepared upsert executed for all of them (``executemany``; SQLAlchemy sends them as
        multi-row ``INSERT … ON CONFLICT DO UPDATE … WHERE`` statements): the n-th change of
        an item in the batch goes in the n-th such execution, so one statement never
        touches a row twice (PostgreSQL refuses that) and an item's changes apply in their
        order, as if written one by one.
        """
        if not accepted:
            return []
        last = conn.execute(
            teams.update()
            .where(teams.c.id == team_id)
            .values(record_seq=teams.c.record_seq + len(accepted))
            .returning(teams.c.record_seq)
        ).scalar_one()
        seq = int(last) - len(accepted)
        keys: list[wire.RecordKey] = []
        rounds: list[list[dict[str, Any]]] = []
        nth: dict[str, int] = {}
        for change, text, generation in accepted:
            seq += 1
            key = wire.RecordKey(
                generation,
                to_us(change.origin_time),
                change.machine_id,
                hashlib.sha256(text.encode("utf-8")).hexdigest(),  # fields_digest, once
            )
            keys.append(key)
            n = nth[change.item_id] = nth.get(change.item_id, -1) + 1
            if n == len(rounds):
                rounds.append([])
            rounds[n].append(
                {
                    "team_id": team_id,
                    "item_id": change.item_id,
                    "fields": text,
                    "digest": key.digest,
                    "origin_us": key.origin_us,
                    "machine_id": key.machine_id,
                    "person_id": person_id,
                    "seq": seq,
                    "generation": generation,
                }
            )
        # a row comes back only when written; (item, seq) names the change that wrote it
        written = {
            (row.item_id, row.seq)
            for values in rounds
            for row in conn.execute(self._upsert, values)
        }
        first = int(last) - len(accepted) + 1
        return [
            (change, key)
            for n, ((change, _, _), key) in enumerate(zip(accepted, keys, strict=True))
            if (change.item_id, first + n) not in written
        ]

    @functools.cached_property
    def _upsert(self) -> Any:
        """The one prepared statement that writes record changes (see :meth:`_write`)."""
        stmt = self.db.insert(record)
        columns = ("item_id", "fields", "digest", "origin_us", "machine_id", "person_id",
                   "seq", "generation")
        return stmt.on_conflict_do_update(
            index_elements=["team_id", "item_id"],
            set_={k: stmt.excluded[k] for k in columns},
            where=self._key(stmt.excluded) > self._key(record.c),
        ).returning(record.c.item_id, record.c.seq)

    def _superseded(
        self, conn: Any, team_id: int, lost: list[tuple[wire.RecordChange, wire.RecordKey]]
    ) -> list[wire.RefusedChange]:
        """Return a ``superseded`` refusal for each change of ``lost`` whose key is less than
        the key its item holds now (an equal key is a repeat of the held change: not one)."""
        rows = conn.execute(
            sa.select(
                record.c.item_id,
                record.c.generation,
                record.c.origin_us,
                record.c.machine_id,
                record.c.digest,
            ).where(
                record.c.team_id == team_id,
                record.c.item_id.in_(sorted({c.item_id for c, _ in lost})),
            )
        ).all()
        held = {
            r.item_id: wire.RecordKey(r.generation, r.origin_us, r.machine_id, r.digest)
            for r in rows
        }
        refused = []
        for change, key in lost:
            holds = held[change.item_id]
            if holds == key:
                continue
            refused.append(
                wire.RefusedChange(
                    item_id=change.item_id,
                    origin_time=change.origin_time,
                    machine_id=change.machine_id,
                    code="superseded",
                    message=(
                        f"item {change.item_id} holds a change of owner generation"
                        f" {holds.generation} stamped {format_utc(from_us(holds.origin_us))}"
                        f" by machine {holds.machine_id}; this one (generation"
                        f" {key.generation}, stamped {format_utc(change.origin_time)}) sorts"
                        " before it: was this computer's clock set back?"
                    ),
                )
            )
        return refused

    def _key(self, columns: Any) -> Any:
        """Return the SQL tuple that orders rows as :class:`~bees_cli.cloud.wire.RecordKey`."""
        return sa.tuple_(
            columns.generation,
            columns.origin_us,
            self.db.bytewise(columns.machine_id),
            self.db.bytewise(columns.digest),
        )

    def pull(
        self, who: Who, since: int, limit: int = wire.MAX_PULL, *, generations: bool = False
    ) -> wire.PullAnswer:
        """Return the team's items whose sequence number is greater than ``since``.

        Cost depends on the number of changes returned, not on the record's size
        (index on team and sequence).

        Args:
            who: the asker.
            since: the cursor of the previous pull (0 for everything).
            limit: most entries returned; ``more`` says whether another page may follow.
                A page also stops before its fields pass
                :data:`~bees_cli.cloud.wire.MAX_PULL_BYTES` (it holds at least one entry).
            generations: give each entry its owner generation (a Bees that knows them
                asked; an older one refuses the unknown field).

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
        entries: list[wire.RecordEntry] = []
        size = 0
        for row in rows[:limit]:
            size += len(row.fields.encode("utf-8"))
            if entries and size > wire.MAX_PULL_BYTES:
                more = True
                break
            entries.append(
                wire.RecordEntry(
                    item_id=row.item_id,
                    fields=json.loads(row.fields),
                    origin_time=from_us(row.origin_us),
                    machine_id=row.machine_id,
                    person=row.email,
                    seq=row.seq,
                    **({"generation": row.generation} if generations else {}),
                )
            )
        cursor = entries[-1].seq if entries else since
        return wire.PullAnswer(changes=entries, cursor=cursor, more=more)
