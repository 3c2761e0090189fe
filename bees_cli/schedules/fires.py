"""One schedule fire on this computer: late? already fired? eligible? key, item, owner, start.

Rules (DESIGN.md, "Schedules"; issues 6 and 11; post, "A real example" steps 1-3):

1. The fire is for the instant the engine scheduled it at; :func:`fire_for` gives its
   wall-clock time and key. Asked more than 60 s after that instant (by this computer's
   clock, injected; :func:`bees_cli.rules.is_late`) the key is not asked: skipped, never
   caught up. The 60 s rule judges the asking, never the making.
2. One key fires at most once on this computer. A daily or weekly schedule's wall-clock
   time is one key, so the second instant of a repeated hour finds it already handled
   ("already fired here"); an hourly schedule's second occurrence has its own key
   (:func:`~bees_cli.schedules.times.fire_for`) and fires like any other time.
3. The first stage must be eligible here (enabled agent, connected add-ons, linked
   folders); else "not eligible (reasons)" and nothing is asked.
4. The schedule key is asked of Bees Cloud (:func:`~bees_cli.schedules.key_claim.ask_key`),
   :data:`~bees_cli.rules.KEY_TRIES` requests that leave the computer (the client's own
   retries are off), each allowed :data:`KEY_TIMEOUT` s so a slow but working cloud
   answers; no answer to any ends in "gave up (cloud unreachable after 5 tries)". A key
   another computer holds ends in "taken by COMPUTER". The claim names the fire's
   wall-clock time and zone too, so a computer whose zone rules place that time at another
   instant is answered "taken by COMPUTER (zone rules disagree)" and the disagreement is
   kept for ``bees schedules`` (:mod:`bees_cli.schedules.disagreements`).
5. A key this machine holds (granted, granted again on a retry, or no cloud to ask) is
   noted in the local row of the key, which then names its one item before it is made;
   the item is made exactly once however late: a retried fire, a duplicate delivery or a
   restart finds it made and does nothing, and the held-keys check
   (:meth:`FireService.make_held`: at the start of ``bees run``, and while it runs after a
   fire gave up) makes the items of held keys a crash or a lost answer left unmade. The
   item is then claimed, started and reported to Bees Cloud: "ran here (ITEM)".
6. Fire times of a schedule that passed with no row (asleep, ``bees run`` down) get a
   "missed" row at start (:meth:`FireService.recover`), before the worker handles any fire,
   so a late delivery at start never hides them; a missed time delivered late keeps its
   "missed" row.
7. Only a schedule the workspace declares now, enabled and owned by the person signed in
   here, fires: a fire the engine delivers for one removed, disabled or handed to another
   person while ``bees run`` was down raises :class:`NotFiredHere` (no row, no item).

With no Bees Cloud configured there is no key and no claim; the rest is the same path.
Every fire leaves one row in the fires table (:mod:`bees_cli.record.fires`). Making the
item is the engine's (injected as :data:`Maker`), so this module never imports the engine.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from bees_cli.errors import BeesError, CloudError, NotFound
from bees_cli.machine.computer import Computer
from bees_cli.record.fires import FireLog, FireOutcome, FireRow
from bees_cli.record.local import LocalRecord
from bees_cli.rules import is_late
from bees_cli.schedules.fire_rows import add_row, missed_rows
from bees_cli.schedules.key_claim import Sleep, ask_key
from bees_cli.schedules.keys import CloudKeys, HeldKeys
from bees_cli.utc import parse_utc

if TYPE_CHECKING:
    from bees_cli.agents.eligibility import Eligibility
    from bees_cli.agents.snapshot import ItemSnapshot
    from bees_cli.cloud.client import AsyncCloudClient
    from bees_cli.schedules.times import Fire
    from bees_cli.workspace.loader import Workspace
    from bees_cli.workspace.models import Schedule

logger = logging.getLogger(__name__)

KEY_BACKOFF = 0.5
"""Seconds before the second key request; doubled before each next one (0.5, 1, 2, 4)."""
KEY_TIMEOUT = 10.0
"""Seconds one key request may take (connect, read, write): a cloud answering in several
seconds is slow, not unreachable. Five tries and the backoff stay under a minute."""

Clock = Callable[[], datetime]
Starter = Callable[[str], Awaitable[object]]
Checker = Callable[["ItemSnapshot", str], "Eligibility"]
Maker = Callable[["Workspace", str, "ItemSnapshot", str, str], None]
"""Makes an item (blocking): ``(workspace, schedule id, snapshot, title, item id)``; does
nothing when the item id is already in the record (the engine passes one)."""
KeysFor = Callable[["AsyncCloudClient", Computer], HeldKeys]

_making: dict[tuple[str, str], asyncio.Lock] = {}


@dataclass(frozen=True)
class HeldCheck:
    """What one held-keys check (:meth:`FireService.make_held`) did: whether Bees Cloud
    listed this machine's keys (or none is configured), and the rows written, oldest first."""

    answered: bool
    rows: list[FireRow]


class NotFiredHere(BeesError):
    """A fire of a schedule that must not fire on this computer now (removed, disabled, or
    owned by another person): no row is written and nothing is made."""


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _check(snapshot: ItemSnapshot, stage: str) -> Eligibility:
    from bees_cli.agents.eligibility import check_eligibility

    return check_eligibility(snapshot=snapshot, stage_name=stage, reviewed_by=None)


def _say(schedule: Schedule, fire: Fire, row: FireRow) -> None:
    """Log the INFO line ``bees run`` prints when a fire made its item here, or found its
    key taken by another computer (issue 15, point 6): the schedule, the key's wall-clock
    time in its zone, the process and the item (or the computer that holds the key).

    Example: ``schedule monday-report 2025-01-06 09:00 (Europe/Paris) fired: process
    weekly-report, item 01JH3QX5Z8KZ2W4M6N8P0R2T4V``.
    """
    when = f"{row.schedule_id} {fire.local:%Y-%m-%d %H:%M} ({schedule.timezone})"
    if row.outcome is FireOutcome.RAN_HERE:
        logger.info("schedule %s fired: process %s, item %s", when, schedule.process,
                    row.detail)
    elif row.outcome is FireOutcome.TAKEN:
        logger.info("schedule %s: key taken by %s; not run here", when, row.detail)


def _one_line(error: BaseException) -> str:
    text = getattr(error, "message", None) or f"{type(error).__name__}: {error}"
    return str(text).strip().splitlines()[0] if str(text).strip() else type(error).__name__


@dataclass
class FireService:
    """Handles the fires of one computer.

    Args:
        computer: this computer (identity, sign-in, record file, runs folder).
        workspace: the workspace folder whose ``schedules/`` fire.
        make: makes the item of a held key (the engine's :func:`make_fire_item`).
        start: called with the new item's id once it is claimed (``bees run`` passes a
            function that starts its run); None leaves it ``pending`` for ``bees run``.
        clock: this computer's clock (UTC); decides lateness.
        sleep: how to wait between key requests.
        check: the eligibility check of a snapshot's stage (default: the real one).
        key_backoff: seconds before the second key request, doubled each time.
        key_timeout: seconds one key request may take.
        keys: wraps an open client into the cloud's held-key calls (report, list).
    """

    computer: Computer
    workspace: Path
    make: Maker
    start: Starter | None = None
    clock: Clock = _utcnow
    sleep: Sleep = asyncio.sleep
    check: Checker = _check
    key_backoff: float = KEY_BACKOFF
    key_timeout: float = KEY_TIMEOUT
    keys: KeysFor = field(default=CloudKeys)

    @property
    def record(self) -> LocalRecord:
        """This computer's local record."""
        return LocalRecord(self.computer.record_path)

    @property
    def log(self) -> FireLog:
        """This computer's fires table."""
        return FireLog(self.computer.record_path)

    async def _load(self, schedule_id: str | None = None) -> Workspace:
        from bees_cli.workspace.loader import load_workspace

        workspace = await asyncio.to_thread(load_workspace, self.workspace)
        if schedule_id is not None and schedule_id not in workspace.schedules:
            raise NotFound(f"no schedule {schedule_id!r} in {workspace.root}")
        return workspace

    def _client(self) -> AsyncCloudClient | None:
        from bees_cli.cloud.client import cloud_for

        return cloud_for(self.computer, retries=0, timeout=self.key_timeout)

    async def fire(self, schedule_id: str, scheduled: datetime) -> FireRow:
        """Handle the fire of ``schedule_id`` scheduled at the aware instant ``scheduled``;
        log one INFO line when it ran here or its key was taken (:func:`_say`).

        Returns:
            The fire's row (also stored); see the module docstring for the outcomes. A
            fire whose item is already made returns that fire's row and changes nothing.

        Raises:
            WorkspaceInvalid, NotFound: the workspace does not load or has no such schedule
                (no row is written: there is no schedule to show it under).
            NotFiredHere: the schedule is disabled, or not the signed-in person's (no row).
        """
        from bees_cli.schedules.times import fire_for

        workspace = await self._load(schedule_id)
        schedule = workspace.schedules[schedule_id]
        person = self.computer.person
        if not schedule.enabled:
            raise NotFiredHere(f"schedule {schedule_id} is disabled: not fired")
        if person is None or schedule.owner.lower() != person.lower():
            raise NotFiredHere(f"schedule {schedule_id} belongs to {schedule.owner}: "
                               "not fired here")
        fire = fire_for(schedule, schedule_id, scheduled)
        row = await self._fire(workspace, schedule_id, scheduled, fire)
        _say(schedule, fire, row)
        return row

    async def _fire(self, workspace: Workspace, schedule_id: str, scheduled: datetime,
                    fire: Fire) -> FireRow:
        """Handle the fire (:meth:`fire`) and return its row."""
        from bees_cli.schedules.times import lateness

        now = self.clock()
        log = self.log
        kept = await asyncio.to_thread(log.fire_row, schedule_id, scheduled)
        if kept is not None and kept.outcome is FireOutcome.MISSED:
            return kept  # noted missed at start: never caught up
        held = await asyncio.to_thread(log.key, fire.key)
        if held is not None and held.held is not None and parse_utc(held.scheduled) == scheduled:
            return await self._make(workspace, schedule_id, scheduled, fire, 0)
        if is_late(scheduled, now):
            late = lateness(scheduled, now)
            return await self._row(schedule_id, scheduled, fire, FireOutcome.SKIPPED,
                                   f"{late:.0f}")
        if not await asyncio.to_thread(log.mark_key, fire.key, scheduled, now,
                                       schedule_id=schedule_id, workspace=str(self.workspace)):
            return await self._row(schedule_id, scheduled, fire, FireOutcome.ALREADY_FIRED, None)
        try:
            snapshot, stage = await asyncio.to_thread(fire_snapshot, workspace, schedule_id)
        except BeesError as error:
            return await self._row(schedule_id, scheduled, fire, FireOutcome.NOT_ELIGIBLE,
                                   error.message)
        eligibility = await asyncio.to_thread(self.check, snapshot, stage)
        if not eligibility.ok:
            return await self._row(schedule_id, scheduled, fire, FireOutcome.NOT_ELIGIBLE,
                                   "; ".join(eligibility.reasons))
        tries = 0
        client = self._client()
        if client is not None:
            try:
                granted, holder, tries, trouble = await ask_key(
                    client, self.computer, schedule_id, scheduled, fire,
                    workspace.schedules[schedule_id].timezone, sleep=self.sleep,
                    backoff=self.key_backoff)
            finally:
                await client.aclose()
            if trouble is not None:
                known = await asyncio.to_thread(log.key, fire.key)
                if known is not None and known.held is not None:  # a held-keys check won it
                    return await self._make(workspace, schedule_id, scheduled, fire, tries)
                return await self._row(schedule_id, scheduled, fire, FireOutcome.GAVE_UP,
                                       trouble, tries)
            if not granted:
                return await self._row(schedule_id, scheduled, fire, FireOutcome.TAKEN,
                                       holder, tries)
        await asyncio.to_thread(log.hold_key, fire.key, self.clock())
        return await self._make(workspace, schedule_id, scheduled, fire, tries)

    async def _row(self, schedule_id: str, scheduled: datetime, fire: Fire,
                   outcome: FireOutcome, detail: str | None, tries: int = 0) -> FireRow:
        return await asyncio.to_thread(add_row, self.log, schedule_id, scheduled, fire,
                                       self.clock(), outcome, detail, tries)

    async def _make(self, workspace: Workspace, schedule_id: str, scheduled: datetime,
                    fire: Fire, tries: int) -> FireRow:
        """Make the one item of held key ``fire.key`` unless made, claim it, start it, report
        it; return the fire's row (``ran_here``, or ``failed`` with a one-line reason)."""
        lock = _making.setdefault((str(self.computer.record_path), fire.key), asyncio.Lock())
        async with lock:
            log = self.log
            held = await asyncio.to_thread(log.key, fire.key)
            if held is not None and held.made and held.item_id is not None:
                row = await asyncio.to_thread(log.fire_row, schedule_id, scheduled)
                if row is not None and row.outcome is FireOutcome.RAN_HERE:
                    return row
                item_id = held.item_id  # made, then stopped before its claim and row
            else:
                try:
                    item_id = await asyncio.to_thread(self._make_item, workspace, schedule_id,
                                                      fire)
                except Exception as error:  # noqa: BLE001 - a fire ends in a row, not a traceback
                    logger.debug("fire %s failed", fire.key, exc_info=error)
                    return await self._row(schedule_id, scheduled, fire, FireOutcome.FAILED,
                                           _one_line(error), tries)
            await self._after_make(schedule_id, scheduled, item_id)
            return await self._row(schedule_id, scheduled, fire, FireOutcome.RAN_HERE, item_id,
                                   tries)

    def _make_item(self, workspace: Workspace, schedule_id: str, fire: Fire) -> str:
        from ulid import ULID

        from bees_cli.schedules.times import item_title

        snapshot, _stage = fire_snapshot(workspace, schedule_id)
        title = item_title(workspace.schedules[schedule_id], schedule_id, fire)
        item_id = self.log.reserve_item(fire.key, str(ULID()))
        self.make(workspace, schedule_id, snapshot, title, item_id)
        return item_id

    async def _report(self, schedule_id: str, scheduled: datetime, item_id: str) -> None:
        """Tell Bees Cloud again which item a held key made (the first report was lost)."""
        client = self._client()
        if client is None:
            return
        try:
            await self.keys(client, self.computer).report_item(schedule_id, scheduled, item_id)
        finally:
            await client.aclose()

    async def _after_make(self, schedule_id: str, scheduled: datetime, item_id: str) -> None:
        """Claim the made item, tell Bees Cloud which item the key made, start it."""
        from bees_cli.schedules.owners import claim_owner, show_claim

        client = self._client()
        try:
            if client is not None:
                await self.keys(client, self.computer).report_item(schedule_id, scheduled,
                                                                    item_id)
            record = self.record
            outcome = await claim_owner(self.computer, item_id, client=client, clock=self.clock)
            await asyncio.to_thread(show_claim, record, record.item(item_id), outcome)
        finally:
            if client is not None:
                await client.aclose()
        if outcome.may_start and self.start is not None:
            await self.start(item_id)

    async def recover(self, registered: Mapping[str, datetime] | None = None
                      ) -> list[FireRow]:
        """At the start of ``bees run``: the held-keys check (:meth:`make_held`), then a
        "missed" row for every fire time that passed with no row since each schedule's last
        row (or, with no rows, since ``registered[name]``: when it was registered here).

        Returns:
            The rows written, oldest first within each kind.

        Raises:
            WorkspaceInvalid: the workspace does not load.
        """
        workspace = await self._load()
        rows = (await self.make_held(workspace)).rows
        rows += await asyncio.to_thread(self.note_missed, workspace, registered)
        return rows

    async def make_held(self, workspace: Workspace | None = None) -> HeldCheck:
        """The held-keys check (DESIGN.md, "Under faults"): make the one item of each key
        held here without one, from Bees Cloud's list of this machine's keys without an item
        (a cloud that cannot list is logged) and the local rows. Runs at the start of ``bees
        run`` and, while it runs, after a fire gave up (:mod:`bees_cli.engine.schedules`):
        a lost grant's row becomes "ran here"; a key not listed here keeps its row.

        Args:
            workspace: the loaded workspace (loaded here when None).

        Returns:
            The rows written, and whether the cloud answered (True with no cloud).

        Raises:
            WorkspaceInvalid: the workspace does not load.
        """
        from bees_cli.schedules.times import fire_for

        workspace = workspace or await self._load()
        log = self.log
        answered = True
        client = self._client()
        if client is not None:
            try:
                held = await self.keys(client, self.computer).without_item()
            except CloudError as error:
                logger.warning("held keys: %s", error.message)
                held, answered = [], False
            finally:
                await client.aclose()
            for schedule_id, scheduled in held:
                if schedule_id not in workspace.schedules:
                    continue
                fire = fire_for(workspace.schedules[schedule_id], schedule_id, scheduled)
                known = await asyncio.to_thread(log.key, fire.key)
                if known is not None and known.made and known.item_id is not None:
                    await self._report(schedule_id, scheduled, known.item_id)  # answer lost
                    continue
                now = self.clock()
                await asyncio.to_thread(log.mark_key, fire.key, scheduled, now,
                                        schedule_id=schedule_id, workspace=str(self.workspace))
                await asyncio.to_thread(log.hold_key, fire.key, now)
        rows: list[FireRow] = []
        for key in await asyncio.to_thread(log.held_without_item):
            if key.schedule_id not in workspace.schedules or (
                    key.workspace is not None and Path(key.workspace) != self.workspace):
                continue
            scheduled = parse_utc(key.scheduled)
            fire = fire_for(workspace.schedules[key.schedule_id], key.schedule_id, scheduled)
            rows.append(await self._make(workspace, key.schedule_id, scheduled, fire, 0))
        return HeldCheck(answered=answered, rows=rows)

    def note_missed(self, workspace: Workspace,
                    registered: Mapping[str, datetime] | None = None) -> list[FireRow]:
        """Write a "missed" row for each fire time of this person's enabled schedules that
        passed more than 60 s ago with no row, since the schedule's last row, or since it
        was registered here (``registered``, by schedule name) when it has no row yet: it
        was due to fire here and nothing handled it (blocking).

        Returns:
            The missed rows, by schedule name then time.
        """
        return missed_rows(self.log, workspace, self.computer.person, self.clock(),
                           registered)


def fire_snapshot(workspace: Workspace, schedule_id: str) -> tuple[ItemSnapshot, str]:
    """Return the snapshot a fire of ``schedule_id`` makes its item from, and its first stage.

    Raises:
        BeesError: the schedule's process, agents or folders do not resolve.
    """
    from bees_cli.agents.snapshot import make_snapshot

    schedule = workspace.schedules[schedule_id]
    snapshot = make_snapshot(workspace, schedule.process, item_agents=schedule.agents,
                             item_folders=schedule.folders)
    return snapshot, snapshot.process.stages[0].name

