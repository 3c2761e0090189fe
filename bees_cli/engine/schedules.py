"""This computer's Temporal Schedules: made to match ``schedules/*.yaml`` of the signed-in person.

Rules (DESIGN.md, "Schedules"; issue 6):

- Only schedules whose ``owner`` is the person signed in here (``bees whoami
  --set-person``) and that are ``enabled`` are registered; the others never fire here.
- Each is a Temporal Schedule with catch-up window 60 s (set explicitly) and overlap
  ALLOW_ALL (a fire never waits for the previous one).

Daylight saving (our choice, documented): :mod:`bees_cli.schedules.times` decides it, not
Temporal. Each schedule is registered as an exact UTC calendar of its next
:data:`HORIZON` fires (``utc_calendar(fire_times(...))``), exactly as the pure module says:
for a daily or weekly schedule a repeated hour appears once and a skipped one at the next
valid minute; an hourly or more frequent one lists every real instant of its cadence, both
occurrences of a repeated hour included (issue 23, point 5). A calendar in the schedule's
own zone would not do: Temporal matches such calendars on the literal clock time, firing
a daily 01:30 twice on the night that has two and never on one that has none. The list is
recomputed on every poll (:data:`POLL_EVERY` s) and the Temporal Schedule updated when it
changed, which happens at start, after each fire (the window slides) and when the
workspace's files change.

Schedule ids: ``bees-schedule-<machine id, 12 hex>-<schedule name>``; the fire workflow's
id starts ``bees-fire-<machine id, 12 hex>-<schedule name>`` (Temporal appends the time).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio import activity

from bees_cli.engine.fire_models import FIRE_ACTIVITY, FireRequest, FireResult
from bees_cli.errors import BeesError
from bees_cli.machine.computer import Computer
from bees_cli.record.events import Scheduled
from bees_cli.rules import LATE_AFTER
from bees_cli.utc import parse_utc

if TYPE_CHECKING:
    from temporalio.client import Client, Schedule

    from bees_cli.agents.snapshot import ItemSnapshot
    from bees_cli.schedules.fires import FireService, Starter
    from bees_cli.workspace.loader import Workspace
    from bees_cli.workspace.models import Schedule as ScheduleFile

log = logging.getLogger(__name__)

HORIZON = 10
"""How many upcoming fires each Temporal Schedule lists (exact UTC instants)."""
POLL_EVERY = 3.0
"""Seconds between looks at the workspace's files and the sliding fire window."""
CATCHUP_WINDOW: timedelta = LATE_AFTER
"""A fire the engine could not start within this long after its time is dropped: the
one-minute rule (:data:`~bees_cli.rules.LATE_AFTER`; the fire path skips anything later
anyway)."""
PREFIX = "bees-schedule-"


def temporal_id(machine_id: str, schedule_id: str) -> str:
    """Return the Temporal Schedule id of ``schedule_id`` on machine ``machine_id``."""
    return f"{PREFIX}{machine_id[:12]}-{schedule_id}"


@dataclass(frozen=True)
class Wanted:
    """One schedule as it should be registered: its next fires as UTC calendar fields."""

    schedule_id: str
    temporal_id: str
    calendars: list[dict[str, int]]

    @property
    def digest(self) -> str:
        """A short digest of the calendar list, to tell whether an update is needed."""
        text = json.dumps(self.calendars, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def wanted_schedules(schedules: dict[str, ScheduleFile], *, person: str | None, machine_id: str,
                     now: datetime, horizon: int = HORIZON) -> dict[str, Wanted]:
    """Return the schedules this computer registers, by Temporal id (pure).

    Args:
        schedules: the workspace's schedules by name.
        person: the person signed in here; None registers nothing.
        machine_id: this computer's machine id.
        now: the aware instant the fire window starts after.
        horizon: how many upcoming fires each lists.

    Returns:
        Enabled schedules owned by ``person`` (owner compared case-insensitively), each
        with the UTC calendar of its next ``horizon`` fires.
    """
    from bees_cli.schedules.times import fire_times, utc_calendar

    found: dict[str, Wanted] = {}
    if person is None:
        return found
    for name, schedule in sorted(schedules.items()):
        if not schedule.enabled or schedule.owner.lower() != person.lower():
            continue
        fires = fire_times(schedule, name, after=now, count=horizon)
        ident = temporal_id(machine_id, name)
        found[ident] = Wanted(name, ident, utc_calendar(fires))
    return found


def build_schedule(wanted: Wanted, *, workspace: Path, machine_id: str,
                   task_queue: str) -> Schedule:
    """Return the Temporal Schedule for ``wanted`` (exact UTC instants, catch-up 60 s,
    overlap ALLOW_ALL), whose action starts the fire workflow on ``task_queue``."""
    from temporalio.client import (
        Schedule,
        ScheduleActionStartWorkflow,
        ScheduleCalendarSpec,
        ScheduleOverlapPolicy,
        SchedulePolicy,
        ScheduleRange,
        ScheduleSpec,
        ScheduleState,
    )

    from bees_cli.engine.fire_models import FIRE_WORKFLOW, FireInput

    calendars = [
        ScheduleCalendarSpec(
            second=(ScheduleRange(0),), minute=(ScheduleRange(c["minute"]),),
            hour=(ScheduleRange(c["hour"]),), day_of_month=(ScheduleRange(c["day"]),),
            month=(ScheduleRange(c["month"]),), year=(ScheduleRange(c["year"]),),
            day_of_week=(ScheduleRange(0, 6),))
        for c in wanted.calendars
    ]
    return Schedule(
        action=ScheduleActionStartWorkflow(
            FIRE_WORKFLOW,
            FireInput(schedule_id=wanted.schedule_id, workspace=str(workspace)),
            id=f"bees-fire-{machine_id[:12]}-{wanted.schedule_id}",
            task_queue=task_queue,
        ),
        spec=ScheduleSpec(calendars=calendars, time_zone_name="UTC"),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.ALLOW_ALL,
                              catchup_window=CATCHUP_WINDOW),
        state=ScheduleState(note=f"bees schedule {wanted.schedule_id} ({wanted.digest})"),
    )


def workspace_stamp(root: Path) -> tuple[tuple[str, int, int], ...]:
    """Return (path, mtime ns, size) of every YAML file of the workspace: a change detector."""
    files: Iterable[Path] = [root / "bees.yaml", *sorted(root.glob("*/*.yaml"))]
    stamp = []
    for path in files:
        try:
            info = path.stat()
        except FileNotFoundError:
            continue
        stamp.append((str(path.relative_to(root)), info.st_mtime_ns, info.st_size))
    return tuple(stamp)


@dataclass
class Registrar:
    """Keeps this computer's Temporal Schedules equal to the wanted ones.

    Args:
        client: the Temporal client.
        workspace: the workspace folder.
        task_queue: this computer's queue (the fire workflow runs there).
        computer: returns this computer now (re-read each pass: the signed-in person may
            change while ``bees run`` is up).
        clock: UTC clock for the fire window.
    """

    client: Client
    workspace: Path
    task_queue: str
    computer: Callable[[], Computer]
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    registered: dict[str, str] | None = None
    started: bool = False
    """:meth:`start` did its first pass (``bees run`` sets it)."""
    since: dict[str, datetime] = field(default_factory=dict)
    """When each schedule registered here at start was made (:meth:`registered_since`)."""
    checked: set[str] = field(default_factory=set)
    """Keys of "gave up" fires a held-keys check already covered (:meth:`check_held`)."""
    _stamp: tuple[Any, ...] | None = None
    _schedules: dict[str, Any] = field(default_factory=dict)

    async def reconcile(self) -> dict[str, list[str]]:
        """Create, update and delete Temporal Schedules so they match; return the schedule
        names ``added``, ``updated`` and ``removed``, as the workspace spells them (a removed
        one's name read from its Temporal id, :func:`temporal_id`).

        Raises:
            WorkspaceInvalid: the workspace does not load (nothing is changed).
        """
        from temporalio.client import ScheduleUpdate
        from temporalio.service import RPCError

        from bees_cli.workspace.loader import load_workspace

        stamp = await asyncio.to_thread(workspace_stamp, self.workspace)
        if stamp != self._stamp:
            loaded = await asyncio.to_thread(load_workspace, self.workspace)
            self._schedules, self._stamp = dict(loaded.schedules), stamp
        here = await asyncio.to_thread(self.computer)
        wanted = wanted_schedules(self._schedules, person=here.person,
                                  machine_id=here.machine_id, now=self.clock())
        mine = f"{PREFIX}{here.machine_id[:12]}-"
        if self.registered is None:
            self.registered = {}
            async for listed in await self.client.list_schedules():
                if listed.id.startswith(mine):
                    self.registered[listed.id] = ""
        changes: dict[str, list[str]] = {"added": [], "updated": [], "removed": []}
        for ident, want in wanted.items():
            if self.registered.get(ident) == want.digest:
                continue
            schedule = build_schedule(want, workspace=self.workspace,
                                      machine_id=here.machine_id, task_queue=self.task_queue)
            if ident in self.registered:
                await self.client.get_schedule_handle(ident).update(
                    lambda _input, s=schedule: ScheduleUpdate(schedule=s))  # type: ignore[misc]
                changes["updated"].append(want.schedule_id)
            else:
                from temporalio.client import ScheduleAlreadyRunningError

                try:
                    await self.client.create_schedule(ident, schedule)
                except ScheduleAlreadyRunningError:
                    await self.client.get_schedule_handle(ident).update(
                        lambda _input, s=schedule: ScheduleUpdate(schedule=s))  # type: ignore[misc]
                changes["added"].append(want.schedule_id)
            self.registered[ident] = want.digest
        for ident in sorted(set(self.registered) - set(wanted)):
            try:
                await self.client.get_schedule_handle(ident).delete()
            except RPCError as error:  # already gone
                log.info("schedule %s: delete: %s", ident, error)
            del self.registered[ident]
            changes["removed"].append(ident.removeprefix(mine))  # as the workspace spells it
        return changes

    async def registered_since(self) -> dict[str, datetime]:
        """Return when each of this computer's Temporal Schedules was made, by schedule name
        (the engine's ``created_at``): a schedule with no fire row yet was due to fire here
        from then on. Read before :meth:`reconcile` deletes or makes any."""
        here = await asyncio.to_thread(self.computer)
        mine = f"{PREFIX}{here.machine_id[:12]}-"
        made: dict[str, datetime] = {}
        async for listed in await self.client.list_schedules():
            if listed.id.startswith(mine):
                described = await self.client.get_schedule_handle(listed.id).describe()
                made[listed.id[len(mine):]] = described.info.created_at
        return made

    async def recover(self, say: Callable[[str], None] | None = None) -> None:
        """Once, at start: make the items of keys held here without one and note missed
        fires (:meth:`bees_cli.schedules.fires.FireService.recover`, since each schedule's
        last row or, with none, since :attr:`since` says it was registered); the items are
        left ``pending`` for ``bees run`` to start."""
        here = await asyncio.to_thread(self.computer)
        rows = await fire_service(here, self.workspace, clock=self.clock).recover(self.since)
        for row in rows:
            if say:
                say(f"schedule {row.schedule_id} {row.local}: {row.text}")

    async def check_held(self, say: Callable[[str], None] | None = None) -> None:
        """While ``bees run`` runs, on each pass: when a fire gave up (no answer from Bees
        Cloud) since the last check that the cloud answered, run the held-keys check
        (:meth:`bees_cli.schedules.fires.FireService.make_held`), so a key granted here
        whose answer was lost becomes its one item and its row "ran here" once the cloud
        answers again (DESIGN.md, "Under faults"); the items are left ``pending`` for
        ``bees run`` to start. A key the cloud does not list here keeps its row."""
        from bees_cli.record.fires import FireLog, FireOutcome

        here = await asyncio.to_thread(self.computer)
        rows = await asyncio.to_thread(FireLog(here.record_path).fires,
                                       outcome=FireOutcome.GAVE_UP)
        waiting = {row.key for row in rows} - self.checked
        if not waiting:
            return
        check = await fire_service(here, self.workspace, clock=self.clock).make_held()
        if check.answered:
            self.checked |= waiting
        for row in check.rows:
            if say:
                say(f"schedule {row.schedule_id} {row.local}: {row.text}")

    async def start(self, say: Callable[[str], None] | None = None) -> bool:
        """The first pass, at the start of ``bees run`` and before its worker handles any
        fire: :meth:`reconcile` (a schedule removed, disabled or given to another person
        while ``bees run`` was down is deleted from the engine), then :meth:`recover`
        (held keys made, fire times passed while down noted "missed"). A failure is said
        and logged, never raised.

        Returns:
            True when both were done; False when they wait for :meth:`run`'s next pass.
        """
        try:
            self.since = await self.registered_since()
        except Exception as error:  # noqa: BLE001 - missed rows then start at the last row
            log.warning("schedules: cannot read when they were registered: %r", error)
        return await self._pass(say, None, recover=True) is None

    async def _pass(self, say: Callable[[str], None] | None, last_error: str | None, *,
                    recover: bool) -> str | None:
        """One reconcile, then :meth:`recover` when ``recover`` (else :meth:`check_held`);
        return the error text said (said again only when it differs from ``last_error``),
        or None when it went well."""
        try:
            changes = await self.reconcile()
            for kind in ("added", "updated", "removed"):
                if changes[kind] and say and kind != "updated":
                    say(f"schedules {kind}: {', '.join(changes[kind])}")
            if recover:
                await self.recover(say)
            else:
                await self.check_held(say)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - the loop must survive anything
            text = getattr(error, "message", None) or repr(error)
            if text != last_error and say:
                say(f"schedules: cannot register: {text}")
            # a Bees error is news; anything else is a bug: keep its traceback
            log.warning("schedules: cannot register: %s", text,
                        exc_info=not isinstance(error, BeesError))
            return str(text)
        return None

    async def run(self, stop: asyncio.Event, say: Callable[[str], None] | None = None,
                  every: float = POLL_EVERY, *, started: bool = False) -> None:
        """Reconcile every ``every`` seconds until ``stop``; failures are said once and never
        end the loop (an invalid workspace keeps the last registered schedules). The first
        successful pass is followed by :meth:`recover` unless ``started`` (:meth:`start`
        did both already)."""
        last_error: str | None = None
        recovered = started
        if started:
            await self._wait(stop, every)
        while not stop.is_set():
            last_error = await self._pass(say, last_error, recover=not recovered)
            recovered = recovered or last_error is None
            await self._wait(stop, every)

    @staticmethod
    async def _wait(stop: asyncio.Event, every: float) -> None:
        try:
            await asyncio.wait_for(stop.wait(), every)
        except TimeoutError:
            pass


class FireActivities:
    """The fire activity, bound to this computer.

    Args:
        computer: returns this computer (its identity, sign-in and record).
        start: starts a claimed item's run (``bees run`` passes one), or None.
        make: builds the :class:`FireService` (tests inject clocks through it).
    """

    def __init__(self, computer: Callable[[], Computer], *,
                 start: Starter | None = None,
                 make: Callable[[Computer, Path, Starter | None], FireService] | None = None
                 ) -> None:
        self.computer = computer
        self.start = start
        self.make = make

    @activity.defn(name=FIRE_ACTIVITY)
    async def fire_schedule(self, request: FireRequest) -> FireResult:
        """Handle one fire (:meth:`bees_cli.schedules.fires.FireService.fire`); a workspace
        that does not load or lacks the schedule is a ``failed`` result of one line; a
        schedule that must not fire here now (disabled, another person's) is ``not_fired``."""
        from bees_cli.schedules.fires import NotFiredHere

        here = await asyncio.to_thread(self.computer)
        workspace = Path(request.workspace)
        service = (self.make(here, workspace, self.start) if self.make
                   else fire_service(here, workspace, start=self.start))
        try:
            row = await service.fire(request.schedule_id, parse_utc(request.scheduled))
        except NotFiredHere as error:
            return FireResult(outcome="not_fired", text=error.message, detail=error.message)
        except BeesError as error:
            return FireResult(outcome="failed", text=f"failed ({error.message})",
                              detail=error.message)
        return FireResult(outcome=row.outcome, text=row.text, detail=row.detail)

    def all(self) -> list[Callable[..., Any]]:
        """Return the activity callables to register on a worker."""
        return [self.fire_schedule]


def fire_service(computer: Computer, workspace: Path, **options: Any) -> FireService:
    """Return the firing path of ``computer`` for ``workspace``, making items with
    :func:`make_fire_item`; ``options`` go to :class:`~bees_cli.schedules.fires.FireService`
    (``start``, ``clock``, ``sleep``, ``check``…)."""
    from bees_cli.schedules.fires import FireService

    def make(workspace_: Workspace, schedule_id: str, snapshot: ItemSnapshot, title: str,
             item_id: str) -> None:
        make_fire_item(computer, workspace_, schedule_id, snapshot, title, item_id)

    return FireService(computer, workspace, make, **options)


def make_fire_item(computer: Computer, workspace: Workspace, schedule_id: str,
                   snapshot: ItemSnapshot, title: str, item_id: str) -> None:
    """Make the item ``item_id`` of a schedule's held key: its run folder and ``pending`` row
    with the engine's input (snapshot stored by digest). Does nothing when the item is in
    the record already, so a retry or a restart never makes a second one.
    """
    from bees_cli.engine.items import make_item
    from bees_cli.errors import NotFound
    from bees_cli.machine.links import run_folder_root
    from bees_cli.machine.paths import run_folder_of
    from bees_cli.record.local import LocalRecord

    record = LocalRecord(computer.record_path)
    try:
        record.item(item_id)
        return
    except NotFound:
        pass
    folder = run_folder_of(run_folder_root(workspace, computer.runs_dir), item_id)
    folder.mkdir(parents=True, exist_ok=True)
    make_item(record, snapshot, item_id=item_id, title=title, run_folder=folder,
              workspace=str(workspace.root))
    record.add_fact(item_id, Scheduled(schedule=schedule_id), key="schedule")
