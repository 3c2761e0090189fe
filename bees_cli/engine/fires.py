"""One schedule fire on this computer: late? already fired? eligible? key, item, owner, start.

Rules (DESIGN.md, "Schedules"; issue 6; post, "A real example" steps 1-3):

1. The fire is for the instant the engine scheduled it at; :func:`fire_for` gives its
   wall-clock time and key. Handled more than 60 s after that instant (by this
   computer's clock, injected) it is skipped: never caught up.
2. One wall-clock time of a schedule fires at most once on this computer: the second
   instant of a repeated hour finds its key already handled ("already fired here").
3. The first stage must be eligible here (enabled agent, connected add-ons, linked
   folders); else "not eligible (reasons)" and nothing is asked.
4. The schedule key is asked of Bees Cloud, five tries with backoff; all failing to
   reach it ends in "gave up (cloud unreachable)". A key another computer holds ends in
   "taken by COMPUTER".
5. The winner creates the item (title from the schedule's template), claims its owner
   and starts it: "ran here (ITEM)".

With no Bees Cloud configured there is no key and no claim; the rest is the same path.
Every fire leaves one row in the fires table (:mod:`bees_cli.record.fires`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from bees_cli.cloud.client import cloud_for
from bees_cli.errors import BeesError, CloudError, CloudRefused, CloudUnauthorized
from bees_cli.machine.computer import Computer
from bees_cli.record.fires import FireLog, FireRow
from bees_cli.record.local import LocalRecord
from bees_cli.rules import KEY_TRIES

if TYPE_CHECKING:
    from bees_cli.agents.eligibility import Eligibility
    from bees_cli.agents.snapshot import ItemSnapshot
    from bees_cli.cloud.client import AsyncCloudClient
    from bees_cli.workspace.loader import Workspace

KEY_BACKOFF = 0.5
"""Seconds before the second key request; doubled before each next one (0.5, 1, 2, 4)."""

Clock = Callable[[], datetime]
Sleep = Callable[[float], Awaitable[None]]
Starter = Callable[[str], Awaitable[object]]
Checker = Callable[["ItemSnapshot", str], "Eligibility"]


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _check(snapshot: ItemSnapshot, stage: str) -> Eligibility:
    from bees_cli.agents.eligibility import check_eligibility

    return check_eligibility(snapshot=snapshot, stage_name=stage, reviewed_by=None)


@dataclass
class FireService:
    """Handles the fires of one computer.

    Args:
        computer: this computer (identity, sign-in, record file, runs folder).
        workspace: the workspace folder whose ``schedules/`` fire.
        start: called with the new item's id once it is claimed (``bees run`` passes a
            function that starts its run); None leaves it ``pending`` for ``bees run``.
        clock: this computer's clock (UTC); decides lateness.
        sleep: how to wait between key requests.
        check: the eligibility check of a snapshot's stage (default: the real one).
        key_backoff: seconds before the second key request, doubled each time.
    """

    computer: Computer
    workspace: Path
    start: Starter | None = None
    clock: Clock = _utcnow
    sleep: Sleep = asyncio.sleep
    check: Checker = _check
    key_backoff: float = KEY_BACKOFF

    @property
    def record(self) -> LocalRecord:
        """This computer's local record."""
        return LocalRecord(self.computer.record_path)

    @property
    def log(self) -> FireLog:
        """This computer's fires table."""
        return FireLog(self.computer.record_path)

    async def fire(self, schedule_id: str, scheduled: datetime) -> FireRow:
        """Handle the fire of ``schedule_id`` scheduled at the aware instant ``scheduled``.

        Returns:
            The fire's row (also stored); see the module docstring for the outcomes.

        Raises:
            WorkspaceInvalid, NotFound: the workspace does not load or has no such schedule
                (no row is written: there is no schedule to show it under).
        """
        from bees_cli.rules import is_late
        from bees_cli.schedules.times import fire_for, lateness
        from bees_cli.workspace.loader import load_workspace

        workspace = await asyncio.to_thread(load_workspace, self.workspace)
        if schedule_id not in workspace.schedules:
            from bees_cli.errors import NotFound

            raise NotFound(f"no schedule {schedule_id!r} in {workspace.root}")
        schedule = workspace.schedules[schedule_id]
        fire = fire_for(schedule, schedule_id, scheduled)
        local = fire.local.strftime("%Y-%m-%dT%H:%M")
        now = self.clock()
        log = self.log

        def done(outcome: str, detail: str | None, tries: int = 0) -> FireRow:
            return log.add_fire(schedule_id=schedule_id, key=fire.key, scheduled=scheduled,
                                local=local, handled=self.clock(), outcome=outcome,
                                detail=detail, tries=tries)

        if is_late(scheduled, now):
            late = lateness(scheduled, now)
            return await asyncio.to_thread(done, "skipped", f"{late:.0f}")
        if not await asyncio.to_thread(log.mark_key, fire.key, scheduled, now):
            return await asyncio.to_thread(done, "already_fired", None)
        try:
            snapshot, stage = await asyncio.to_thread(self._snapshot, workspace, schedule_id)
        except BeesError as error:
            return await asyncio.to_thread(done, "not_eligible", error.message)
        eligibility = await asyncio.to_thread(self.check, snapshot, stage)
        if not eligibility.ok:
            return await asyncio.to_thread(done, "not_eligible", "; ".join(eligibility.reasons))
        client = cloud_for(self.computer, retries=0)
        try:
            tries = 0
            if client is not None:
                granted, holder, tries, trouble = await self._ask_key(client, schedule_id,
                                                                      scheduled)
                if trouble is not None:
                    return await asyncio.to_thread(done, "gave_up", trouble, tries)
                if not granted:
                    return await asyncio.to_thread(done, "taken", holder, tries)
            from bees_cli.schedules.times import item_title

            try:
                title = item_title(schedule, schedule_id, fire)
                item_id = await asyncio.to_thread(self._create, workspace, schedule_id,
                                                  snapshot, title)
            except BeesError as error:
                return await asyncio.to_thread(done, "failed", error.message, tries)
            from bees_cli.engine.owners import claim_owner, show_claim

            record = self.record
            outcome = await claim_owner(self.computer, item_id, client=client, clock=self.clock)
            await asyncio.to_thread(show_claim, record, record.item(item_id), outcome)
            if outcome.may_start and self.start is not None:
                await self.start(item_id)
            return await asyncio.to_thread(done, "ran_here", item_id, tries)
        finally:
            if client is not None:
                await client.aclose()

    async def _ask_key(self, client: AsyncCloudClient, schedule_id: str,
                       scheduled: datetime) -> tuple[bool, str | None, int, str | None]:
        """Ask for the schedule key, :data:`KEY_TRIES` times at most.

        Returns:
            ``(granted, holder computer, tries, trouble)``; ``trouble`` is the give-up
            detail (``cloud unreachable``…) when no answer came.
        """
        from bees_cli.cloud import wire

        claim = wire.KeyClaim(schedule_id=schedule_id, scheduled_time=scheduled,
                              machine_id=self.computer.machine_id,
                              computer_name=self.computer.computer)
        trouble = "cloud unreachable"
        for attempt in range(KEY_TRIES):
            if attempt:
                await self.sleep(min(self.key_backoff * 2 ** (attempt - 1), 8.0))
            try:
                answer = await client.claim_key(claim)
            except CloudUnauthorized:
                return False, None, attempt + 1, "cloud refused the sign-in"
            except CloudRefused as error:
                return False, None, attempt + 1, f"cloud refused: {error.message}"
            except CloudError as error:
                trouble = ("cloud unreachable" if error.code == "cloud_unreachable"
                           else f"cloud error: {error.message}")
                continue
            return answer.granted, answer.computer_name, attempt + 1, None
        return False, None, KEY_TRIES, trouble

    def _snapshot(self, workspace: Workspace, schedule_id: str) -> tuple[ItemSnapshot, str]:
        from bees_cli.agents.snapshot import make_snapshot

        schedule = workspace.schedules[schedule_id]
        snapshot = make_snapshot(workspace, schedule.process, item_agents=schedule.agents,
                                 item_folders=schedule.folders)
        return snapshot, snapshot.process.stages[0].name

    def _create(self, workspace: Workspace, schedule_id: str, snapshot: ItemSnapshot,
                title: str) -> str:
        """Make the item: run folder, ``pending`` row in the local record; return its id."""
        from ulid import ULID

        from bees_cli.engine.models import ItemInput

        item_id = str(ULID())
        root = self._runs_root(workspace)
        folder = root / item_id
        folder.mkdir(parents=True, exist_ok=False)
        from bees_cli.engine.snapshot_store import engine_view, keep_snapshot

        record = self.record
        item = ItemInput(item_id=item_id, title=title, run_folder=str(folder),
                         snapshot=engine_view(snapshot),
                         snapshot_digest=keep_snapshot(record, snapshot))
        record.add_item(id=item_id, process=snapshot.process_name, title=title,
                        workspace=str(workspace.root), run_folder=str(folder),
                        input=item.model_dump_json(), stage=snapshot.process.stages[0].name)
        record.add_event(item_id, key="schedule", kind="scheduled",
                         data={"schedule": schedule_id})
        return item_id

    def _runs_root(self, workspace: Workspace) -> Path:
        from bees_cli.machine.links import run_folder_root

        return run_folder_root(workspace, self.computer.runs_dir)
