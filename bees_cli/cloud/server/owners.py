"""Owners: who holds each work item, one row per generation (epoch), never deleted."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bees_cli.cloud import wire
from bees_cli.cloud.server.engine import Database
from bees_cli.cloud.server.machines import Machines
from bees_cli.cloud.server.offer_rows import mark_claimed, open_offer, refuse_ended, was_offered
from bees_cli.cloud.server.people import People, Principal, Who
from bees_cli.cloud.server.refusals import Conflict, Forbidden, NotFound
from bees_cli.cloud.server.tables import owners, people
from bees_cli.utc import format_utc, from_us

CLAIM_LOOKS = 50
"""Times a claim looks again when the item is held and released between its reads."""


def owner_select() -> sa.Select[Any]:
    """Return ``SELECT owners.*, people.email`` (the columns :func:`owner_of` reads)."""
    return sa.select(owners, people.c.email).join(people, people.c.id == owners.c.person_id)


OWNER_LATEST = (
    owner_select()
    .where(owners.c.team_id == sa.bindparam("team_id"), owners.c.item_id == sa.bindparam("item_id"))
    .order_by(owners.c.epoch.desc())
    .limit(1)
)
"""The latest owner row of (``team_id``, ``item_id``), with the person's email; built once."""
CLAIM_COLUMNS = (
    "team_id",
    "item_id",
    "epoch",
    "machine_id",
    "computer_name",
    "person_id",
    "since_us",
)


def claim_statement(db: Database) -> Any:
    """Return the claim's one statement: insert the item's next epoch unless it is held.

    ``INSERT INTO owners … SELECT …, COALESCE(MAX(epoch), 0) + 1 … ON CONFLICT DO NOTHING
    RETURNING owners.*``: a new row (the asker won) or none (the item is held, or a
    concurrent claim of the same epoch won; the partial unique index and the epoch's unique
    constraint decide). Parameters: the names of :data:`CLAIM_COLUMNS` but ``epoch``.
    """
    typed = {
        "team_id": sa.Integer,
        "item_id": sa.String,
        "machine_id": sa.String,
        "computer_name": sa.String,
        "person_id": sa.Integer,
        "since_us": sa.BigInteger,
    }
    values = [
        (sa.func.coalesce(sa.func.max(owners.c.epoch), 0) + 1)
        if name == "epoch"
        else sa.bindparam(name, type_=typed[name])
        for name in CLAIM_COLUMNS
    ]
    next_epoch = sa.select(*values).where(
        owners.c.team_id == sa.bindparam("team_id"), owners.c.item_id == sa.bindparam("item_id")
    )
    return (
        db.insert(owners)
        .from_select(list(CLAIM_COLUMNS), next_epoch)
        .on_conflict_do_nothing()
        .returning(*owners.c)
    )


def owner_of(row: Any, email: str | None = None) -> wire.Owner:
    """Return the wire owner of a row of :func:`owner_select` (or of ``owners`` with the
    person's ``email`` given).

    The models are built without checking them again (``model_construct``): every value was
    checked by the wire model of the request that wrote the row, and the times are UTC. Why:
    the checks cost a tenth of a claim's CPU (issue 29, point 5); the answer's JSON is the
    same (tests/cloud/test_claim_statements.py).
    """
    release = None
    if row.released_us is not None:
        release = wire.Release.model_construct(
            released_at=from_us(row.released_us),
            restart_stages=json.loads(row.restart_stages or "{}"),
            checkpoint_sha256=row.checkpoint_sha256 or "",
        )
    return wire.Owner.model_construct(
        item_id=row.item_id,
        epoch=row.epoch,
        machine_id=row.machine_id,
        computer_name=row.computer_name,
        person=row.email if email is None else email,
        since=from_us(row.since_us),
        release=release,
    )


def claim_answer(who: Principal, claim: wire.OwnerClaim, won: Any, latest: Any) -> wire.OwnerAnswer:
    """Return the answer to ``claim``: ``owner`` with the row it inserted (``won``), else
    ``owner`` or ``taken`` with the unreleased ``latest`` row of the item.

    Raises:
        Conflict: ``busy`` when neither row is there (the item changed hands
            :data:`CLAIM_LOOKS` times during the claim).
    """
    if won is not None:
        return wire.OwnerAnswer.model_construct(status="owner", owner=owner_of(won, who.email))
    if latest is None:
        raise Conflict("busy", "the item changed hands too often; try again")
    mine = latest.machine_id == claim.machine_id and latest.person_id == who.person_id
    status = "owner" if mine else "taken"
    return wire.OwnerAnswer.model_construct(status=status, owner=owner_of(latest))


class Owners:
    """The owners of one database (DESIGN.md "Owners").

    Owners are rows of (team, item, epoch); at most one row per item is unreleased
    (a partial unique index), and only the machine that holds it may release it.
    A release frees the item; the next claim makes epoch + 1. Nothing is deleted.

    Args:
        db: the database.
        people: authenticates the asker inside each operation's transaction.
        machines: binds machine ids to people.
    """

    def __init__(self, db: Database, people: People, machines: Machines) -> None:
        self.db = db
        self.people = people
        self.machines = machines
        self._claim = claim_statement(db)

    @staticmethod
    def _latest(conn: Connection, team_id: int, item_id: str) -> Any:
        return conn.execute(OWNER_LATEST, {"team_id": team_id, "item_id": item_id}).first()

    def claim(self, who: Who, claim: wire.OwnerClaim) -> wire.OwnerAnswer:
        """Claim ``claim.item_id`` for the asking machine; one winner per free epoch.

        A held item answers ``owner`` to its holder (same row, same ``since``: a retry
        is safe) and ``taken`` to everyone else. A free item (never claimed, or
        released) gets a new owner row at the next epoch through one statement,
        :func:`claim_statement`, whose ``RETURNING`` row is the answer; only when it
        inserts nothing is the latest row read to name the holder. In PostgreSQL (READ
        COMMITTED) the insert waits for a concurrent insert of the same epoch and then
        does nothing; each read sees the latest commit.

        Raises:
            Unauthorized: unknown or revoked token.
            Forbidden: ``machine_not_yours`` when another person first used the machine id;
                ``not_offered`` when a runner claims an item not offered to its pool (DESIGN.md,
                Runners: a runner's claim of an offered item marks the offer claimed in the
                same transaction; the owner row's insert decides the one winner).
            Conflict: ``busy`` when the item changed hands :data:`CLAIM_LOOKS` times
                during the claim.
        """
        with self.db.transaction() as conn:
            who = self.people.principal(conn, who)
            self.machines.check(conn, who, claim.machine_id)
            offer = None
            if who.runner is not None:  # a runner takes only work handed to its pool
                offer = self._offered(conn, who, claim)
                if offer is None:
                    latest = self._latest(conn, who.team_id, claim.item_id)
                    return claim_answer(who, claim, None, latest)  # its own claim, again
            values = {
                "team_id": who.team_id,
                "item_id": claim.item_id,
                "machine_id": claim.machine_id,
                "computer_name": claim.computer_name,
                "person_id": who.person_id,
            }
            latest = None
            for _look in range(CLAIM_LOOKS):
                won = conn.execute(self._claim, {**values, "since_us": self.db.now_us()}).first()
                if won is not None:
                    if offer is not None:
                        mark_claimed(self.db, conn, offer.id, claim.machine_id,
                                     who.runner or who.email)
                    break
                latest = self._latest(conn, who.team_id, claim.item_id)
                if latest is not None and latest.released_us is None:
                    break
                latest = None  # held and released again meanwhile: look once more
        # The answer is built after the commit (the write lock is free again).
        return claim_answer(who, claim, won, latest)

    def _offered(self, conn: Connection, who: Principal, claim: wire.OwnerClaim) -> Any:
        """Return the open offer of the claimed item to runner ``who``'s pool; None when the
        runner's claim is answered from the item's latest owner row: it holds the item
        already (a repeated claim), or another runner won the offer (``taken``).

        Raises:
            Forbidden: ``not_offered`` when the item is not offered to the runner's pool.
            Conflict: ``item_ended`` when it is offered but its shared record says it ended.
        """
        assert who.pool is not None
        offer = open_offer(conn, who, claim.item_id, who.pool)
        if offer is not None:
            refuse_ended(conn, who.team_id, claim.item_id)
            return offer
        latest = self._latest(conn, who.team_id, claim.item_id)
        if latest is not None and latest.released_us is None and (
            (latest.machine_id == claim.machine_id and latest.person_id == who.person_id)
            or was_offered(conn, who, claim.item_id, who.pool, latest.epoch - 1)
        ):
            return None
        raise Forbidden(
            "not_offered",
            f"item {claim.item_id} is not offered to pool {who.pool}: a runner takes only "
            "work a person handed to its pool",
            hint=f"a person hands it over with bees relinquish {claim.item_id} --to {who.pool}")

    def get(self, who: Who, item_id: str) -> wire.Owner:
        """Return the latest owner row of ``item_id`` in the asker's team.

        Raises:
            Unauthorized: unknown or revoked token.
            NotFound: ``no_owner`` when the item was never claimed in this team.
        """
        with self.db.transaction(write=False) as conn:
            who = self.people.principal(conn, who)
            row = self._latest(conn, who.team_id, item_id)
        if row is None:
            raise NotFound("no_owner", f"item {item_id} has never been claimed")
        return owner_of(row)

    def history(self, who: Who, item_id: str) -> list[wire.Owner]:
        """Return every owner row of ``item_id`` in the asker's team, oldest epoch first.

        Raises:
            Unauthorized: unknown or revoked token.
        """
        with self.db.transaction(write=False) as conn:
            who = self.people.principal(conn, who)
            rows = conn.execute(
                owner_select()
                .where(owners.c.team_id == who.team_id, owners.c.item_id == item_id)
                .order_by(owners.c.epoch)
            ).all()
        return [owner_of(row) for row in rows]

    def held(self, who: Who) -> list[wire.Owner]:
        """Return the items of the asker's team that are held now, sorted by item id.

        Raises:
            Unauthorized: unknown or revoked token.
        """
        with self.db.transaction(write=False) as conn:
            who = self.people.principal(conn, who)
            rows = conn.execute(
                owner_select()
                .where(owners.c.team_id == who.team_id, owners.c.released_us.is_(None))
                .order_by(owners.c.item_id)
            ).all()
        return [owner_of(row) for row in rows]

    def release(self, who: Who, item_id: str, release: wire.OwnerRelease) -> wire.Owner:
        """Release ``item_id`` by its owning machine; return the released owner row.

        The row keeps the release time, each piece's restart stage and the
        checkpoint's SHA-256. A repeated release of the same epoch by the same
        machine returns the stored answer unchanged.

        Raises:
            Unauthorized: unknown or revoked token.
            NotFound: ``no_owner`` (never claimed, or no such epoch).
            Forbidden: ``machine_not_yours`` when another person first used the
                machine id; ``not_owner`` with the owner row when another machine or
                person holds (or held) it.
        """
        with self.db.transaction() as conn:
            who = self.people.principal(conn, who)
            self.machines.check(conn, who, release.machine_id)
            query = owner_select().where(
                owners.c.team_id == who.team_id, owners.c.item_id == item_id
            )
            if release.epoch is not None:
                row = conn.execute(query.where(owners.c.epoch == release.epoch)).first()
            else:
                row = self._latest(conn, who.team_id, item_id)
            if row is None:
                raise NotFound("no_owner", f"item {item_id} has no such owner")
            if row.machine_id != release.machine_id or row.person_id != who.person_id:
                owner = owner_of(row)
                raise Forbidden(
                    "not_owner",
                    f"item {item_id} is owned by {owner.computer_name} ({owner.person},"
                    f" machine {owner.machine_id}) since {format_utc(owner.since)}",
                    hint="only the owning computer can relinquish it",
                    owner=owner,
                )
            if row.released_us is None:
                conn.execute(
                    owners.update()
                    .where(owners.c.id == row.id, owners.c.released_us.is_(None))
                    .values(
                        released_us=self.db.now_us(),
                        restart_stages=wire.canonical_json(release.restart_stages),
                        checkpoint_sha256=release.checkpoint_sha256,
                    )
                )
                row = conn.execute(query.where(owners.c.id == row.id)).one()
        return owner_of(row)

    def repair(self, who: Who, item_id: str, release: wire.OwnerRelease) -> wire.Owner:
        """Re-send the release of ``item_id`` with a new checkpoint SHA-256 and restart stages.

        Why: a handover whose checkpoint was rewritten after its release (a retry of an older
        version of Bees) strands the item: the cloud keeps a digest no file has. Only the
        machine (and person) that released the item last may repair it, and only while the
        item is still free: the latest owner row must be released and be theirs. The release
        time stays; nothing else changes.

        Raises:
            Unauthorized: unknown or revoked token.
            NotFound: ``no_owner`` (never claimed, or no such epoch).
            Forbidden: ``machine_not_yours`` when another person first used the machine id;
                ``not_owner`` with the owner row when another machine or person released it
                last (or holds it).
            Conflict: ``not_released`` with the owner row when the item is held (by the
                asker too): there is no release to repair.
        """
        with self.db.transaction() as conn:
            who = self.people.principal(conn, who)
            self.machines.check(conn, who, release.machine_id)
            row = self._latest(conn, who.team_id, item_id)
            if row is None or (release.epoch is not None and row.epoch != release.epoch):
                raise NotFound("no_owner", f"item {item_id} has no such owner")
            owner = owner_of(row)
            if row.machine_id != release.machine_id or row.person_id != who.person_id:
                state = "holds it" if row.released_us is None else "released it last"
                raise Forbidden(
                    "not_owner",
                    f"item {item_id}: {owner.computer_name} ({owner.person}, machine "
                    f"{owner.machine_id}) {state}; only the computer that released it last "
                    "can repair its release",
                    hint=f"run bees relinquish {item_id} --repair on {owner.computer_name}",
                    owner=owner,
                )
            if row.released_us is None:
                raise Conflict(
                    "not_released",
                    f"item {item_id} is held by {owner.computer_name}: there is no release "
                    "to repair",
                    owner=owner,
                )
            conn.execute(
                owners.update()
                .where(owners.c.id == row.id, owners.c.released_us.is_not(None))
                .values(
                    restart_stages=wire.canonical_json(release.restart_stages),
                    checkpoint_sha256=release.checkpoint_sha256,
                )
            )
            row = self._latest(conn, who.team_id, item_id)
        return owner_of(row)
