"""Runners vouch; a person retires one (DESIGN.md, Runners; issue 27, point 4).

Each runner's sync carries a heartbeat (:meth:`Runners.heard`, every 15 s): Bees Cloud keeps
when it last heard each runner and from which machine id, and answers the team's runners
with what each holds (:meth:`Runners.listed`). Nothing moves on its own: a silent runner is
shown as silent, never replaced. A team admin retires a runner that is gone for good
(:meth:`Runners.retire`): in one transaction its token is revoked and its machine id retired
first (fenced: anything it sends later is refused, ``runner_retired`` or
``machine_retired``), then each item it holds is released at the checkpoint it was handed
over with (the previous release: the unfinished stage restarts from there) and offered
back to its pool.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from bees_cli.cloud import wire
from bees_cli.cloud.server.engine import Database
from bees_cli.cloud.server.machines import Machines
from bees_cli.cloud.server.offer_rows import ended_items
from bees_cli.cloud.server.people import People, Who
from bees_cli.cloud.server.refusals import Forbidden
from bees_cli.cloud.server.tables import machines, offers, owners, runners, teams, tokens
from bees_cli.errors import NotFound
from bees_cli.utc import from_us


class Runners:
    """The runners of one database: heartbeats, the team's view, retiring.

    Args:
        db: the database.
        people: authenticates the asker; forgets kept tokens on a retire.
        machines: binds machine ids; forgets kept bindings on a retire.
    """

    def __init__(self, db: Database, people: People, machines: Machines) -> None:
        self.db = db
        self.people = people
        self.machines = machines

    def heard(self, who: Who, body: wire.RunnerHeard) -> wire.RunnerView:
        """Note that runner ``who`` was heard now from ``body.machine_id``.

        Raises:
            Unauthorized: unknown or revoked token (``runner_retired`` once retired).
            Forbidden: ``not_a_runner`` for a person's token; ``machine_not_yours``;
                ``machine_retired``.
        """
        with self.db.transaction() as conn:
            who = self.people.principal(conn, who)
            if who.runner is None:
                raise Forbidden("not_a_runner", "only a runner's sync vouches for a runner")
            self.machines.check(conn, who, body.machine_id)
            conn.execute(
                runners.update()
                .where(runners.c.team_id == who.team_id, runners.c.name == who.runner)
                .values(heard_us=self.db.now_us(), machine_id=body.machine_id))
            return self._views(conn, who.team_id, runners.c.name == who.runner)[0]

    def listed(self, who: Who) -> wire.RunnerList:
        """Return the team's runners (by pool, then name) with the server's clock.

        Raises:
            Unauthorized: unknown or revoked token.
        """
        with self.db.transaction(write=False) as conn:
            who = self.people.principal(conn, who)
            return wire.RunnerList(runners=self._views(conn, who.team_id, sa.true()),
                                   server_time=self.db.clock())

    def retire(self, name: str, team: str) -> wire.RunnerRetired:
        """Retire runner ``name`` of ``team``: fence it, then offer its items back.

        In one transaction, in this order: its token is revoked and the machine id it was
        last heard from is retired (from then on its requests are refused); then every item
        that machine holds is released with the restart stages and checkpoint digest of the
        release it was claimed from (the checkpoint in its run folder: the unfinished stage
        restarts from there, and an action whose intent the run folder's journal holds open
        is held as "may already have run" for a person) and offered to the runner's pool,
        naming the secrets its last offer named. An item whose shared record says it ended
        (done, cancelled: :data:`wire.ENDED_STATUSES`) stays as it is, neither released nor
        offered (``ended``). Retiring a retired runner changes nothing.

        Raises:
            NotFound: no such team, or no runner ``name`` in it.
        """
        now = self.db.now_us()
        with self.db.transaction() as conn:
            team_id = conn.execute(sa.select(teams.c.id).where(teams.c.name == team)).scalar()
            if team_id is None:
                raise NotFound(f"no team {team!r}")
            row = conn.execute(sa.select(runners).where(
                runners.c.team_id == team_id, runners.c.name == name)).first()
            if row is None:
                raise NotFound(f"no runner {name!r} in team {team!r}",
                               hint="bees runners lists them")
            if row.retired_us is not None:
                return wire.RunnerRetired(name=name, pool=row.pool, team=team,
                                          retired_at=from_us(row.retired_us), revoked=0,
                                          machine_id=row.machine_id, offered=[])
            # 1. fenced first: its token and its machine id
            revoked = conn.execute(
                tokens.update().where(tokens.c.token_id == row.token_id,
                                      tokens.c.revoked_us.is_(None))
                .values(revoked_us=now)).rowcount
            conn.execute(runners.update().where(runners.c.id == row.id)
                         .values(retired_us=now))
            offered: list[str] = []
            not_offered: list[str] = []
            ended: list[str] = []
            if row.machine_id is not None:
                conn.execute(machines.update().where(
                    machines.c.team_id == team_id, machines.c.machine_id == row.machine_id)
                    .values(retired_us=now))
                # 2. then its items, back to its pool
                person_id = conn.execute(sa.select(tokens.c.person_id).where(
                    tokens.c.token_id == row.token_id)).scalar_one()
                holding = conn.execute(sa.select(owners).where(
                    owners.c.team_id == team_id, owners.c.machine_id == row.machine_id,
                    owners.c.released_us.is_(None)).order_by(owners.c.item_id)).all()
                over = ended_items(conn, team_id, [held.item_id for held in holding])
                for held in holding:
                    if held.item_id in over:  # done or cancelled: it stays as it ended
                        ended.append(held.item_id)
                    elif self._offer_back(conn, held, row.pool, person_id, now):
                        offered.append(held.item_id)
                    else:
                        not_offered.append(held.item_id)
        self.people.forget()
        self.machines.forget()
        return wire.RunnerRetired(name=name, pool=row.pool, team=team, retired_at=from_us(now),
                                  revoked=int(revoked), machine_id=row.machine_id,
                                  offered=offered, not_offered=not_offered, ended=ended)

    def _offer_back(self, conn: Any, held: Any, pool: str, person_id: int, now: int) -> bool:
        """Release owner row ``held`` at the release it was claimed from and offer it to
        ``pool``; return False when there is no such release (released, not offered)."""
        before = conn.execute(sa.select(owners).where(
            owners.c.team_id == held.team_id, owners.c.item_id == held.item_id,
            owners.c.epoch < held.epoch, owners.c.released_us.is_not(None))
            .order_by(owners.c.epoch.desc()).limit(1)).first()
        conn.execute(owners.update().where(owners.c.id == held.id).values(
            released_us=now,
            restart_stages=before.restart_stages if before is not None else None,
            checkpoint_sha256=before.checkpoint_sha256 if before is not None else None))
        if before is None or before.checkpoint_sha256 is None:
            return False
        secrets = conn.execute(sa.select(offers.c.secrets).where(
            offers.c.team_id == held.team_id, offers.c.item_id == held.item_id)
            .order_by(offers.c.epoch.desc()).limit(1)).scalar()
        conn.execute(self.db.insert(offers).values(
            team_id=held.team_id, item_id=held.item_id, epoch=held.epoch, pool=pool,
            secrets=secrets if secrets is not None else "[]", offered_us=now,
            offered_by=person_id).on_conflict_do_nothing())
        return True

    def _views(self, conn: Any, team_id: int, where: Any) -> list[wire.RunnerView]:
        rows = conn.execute(sa.select(runners).where(runners.c.team_id == team_id, where)
                            .order_by(runners.c.pool, runners.c.name)).all()
        held: dict[str, list[str]] = {}
        used = [r.machine_id for r in rows if r.machine_id is not None]
        if used:
            for owner in conn.execute(sa.select(owners.c.machine_id, owners.c.item_id).where(
                    owners.c.team_id == team_id, owners.c.machine_id.in_(used),
                    owners.c.released_us.is_(None)).order_by(owners.c.item_id)).all():
                held.setdefault(owner.machine_id, []).append(owner.item_id)
        return [wire.RunnerView(
            name=r.name, pool=r.pool, machine_id=r.machine_id,
            heard_at=None if r.heard_us is None else from_us(r.heard_us),
            retired_at=None if r.retired_us is None else from_us(r.retired_us),
            running=held.get(r.machine_id, []) if r.retired_us is None else [])
            for r in rows]
