"""The handover activity: snapshot and checkpoint into the run folder, release, mark the item free.

Runs on the owning computer once the relinquished run's stage has stopped (DESIGN.md,
Rules: handover; the post's "Handing a run over"). Steps, in order:

1. kill whatever the stage left running (``kill_leftover``: belt and braces; the stage
   activity already waited for its agent's process group to end);
2. write ``snapshot.json`` (the item's snapshot, canonical JSON) and ``item.json`` (id,
   title, process, run, created) at the top of the run folder, so a computer that never
   saw the item can continue it, under its title;
3. write ``checkpoint.json`` (:func:`~bees_cli.handover.checkpoint.write_checkpoint`) with
   the journal of add-on actions from the local record, once: a retry of this activity (a
   lost answer from Bees Cloud, a crash after the write) verifies and reuses the checkpoint
   its first try wrote (:func:`~bees_cli.handover.once.written_by_this_handover`), never
   rewrites it;
4. release the owner in Bees Cloud with the restart stages and the SHA-256 of the file in
   the run folder (when a cloud is configured); should the cloud answer with another digest
   (it keeps the first release of an epoch), the release is repaired to the file's digest,
   which only this machine, the one that released it, may do; should it refuse because
   another computer holds the item now, while this machine's last owner row is released
   with this file's digest (a try whose answer was lost, :func:`released_here`), the
   release took and the handover goes on;
5. keep that SHA-256 on this computer (``<data>/handovers/ITEM.json``);
6. mark the item ``free`` (reason ``restarts at STAGE``) in the local record, which the
   shared record pushes at its next sync.

A refusal (a symlink in the run folder, a limit broken, another machine owning the item)
is an answer with ``ok=False`` and the reason, never an activity failure. A cloud that is
down (:func:`cloud_down`: unreachable, or answering 5xx) fails the activity after marking the
item ``waiting`` (:data:`~bees_cli.record.states.RELEASE_WAIT_TEXT`); the workflow tries it
again without an attempt limit, backing off to every 15 s, reusing the checkpoint each time.
Any other failure is tried :data:`HANDOVER_TRIES` times, then answered as a refusal (the
stage waits, failed, for a person's retry) instead of failing the item's whole run.

The checkpoint carries the item's story (format 2): its history, when and where it was
created, and the rounds and review count the run reached (:meth:`HandoverActivities._story`),
so the story travels with the run. When the run handed work to other agents it carries the
pieces too (format 3, :func:`~bees_cli.handover.checkpoint_pieces.checkpoint_pieces`): each
unfinished piece of the stopped stage with the stage it restarts at (the workflow stopped
them all before this activity, and names them in ``restart_stages``, which Bees Cloud
keeps), and each finished piece with its saved result.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio import activity

from bees_cli.engine.handover_models import (
    HANDOVER_ACTIVITY,
    MAIN_PIECE,
    HandoverInput,
    HandoverOutput,
)
from bees_cli.errors import BeesError, CloudError, CloudRefused, CloudUnreachable, Refused
from bees_cli.handover.store import item_path, keep_handover, snapshot_path
from bees_cli.machine.computer import Computer
from bees_cli.record.events import Relinquished
from bees_cli.record.local import LocalRecord
from bees_cli.record.states import RELEASE_WAIT_TEXT, Status, WaitKind

if TYPE_CHECKING:
    from bees_cli.agents.mcp_sessions import McpSessions
    from bees_cli.agents.snapshot import ItemSnapshot
    from bees_cli.cloud import wire
    from bees_cli.cloud.async_client import AsyncCloudClient
    from bees_cli.handover.checkpoint_pieces import CheckpointPiece
    from bees_cli.record.story import Story

HANDOVER_TRIES = 3
"""Tries of a handover that fails for another reason than a cloud that is down; the last
one answers not ok (a refusal) rather than failing the item's run."""


def cloud_down(error: BaseException) -> bool:
    """Return True when ``error`` says Bees Cloud is down rather than no: it could not be
    reached (:class:`~bees_cli.errors.CloudUnreachable`) or answered 5xx after the client's
    retries. A refusal (403/409) or a rejected token is an answer, not an outage."""
    if isinstance(error, CloudUnreachable):
        return True
    return isinstance(error, CloudError) and (error.status or 0) >= 500


async def released_here(api: AsyncCloudClient, item_id: str, machine_id: str,
                        checkpoint_sha256: str | None = None) -> wire.Owner | None:
    """Return the owner row of ``item_id`` that machine ``machine_id`` held and released
    (with ``checkpoint_sha256``, when given), when Bees Cloud keeps one and no later row is
    this machine's: its release took, whatever answer was lost; else None.

    Raises:
        CloudError: Bees Cloud cannot be reached or answered an error.
    """
    rows = await api.owner_history(item_id)
    if not rows or rows[-1].machine_id == machine_id and rows[-1].held:
        return None
    ours = [row for row in rows if row.machine_id == machine_id]
    if not ours or ours[-1].release is None:
        return None
    if checkpoint_sha256 is not None and ours[-1].release.checkpoint_sha256 != checkpoint_sha256:
        return None
    return ours[-1]


def _refused(handover: HandoverInput, reason: str) -> HandoverOutput:
    """The answer of a refused handover: the reason, and the next attempt of each stage
    round whose logs are in the run folder (so a retry never reuses a stopped attempt's)."""
    from bees_cli.handover.continue_ import next_attempts

    try:
        names = os.listdir(Path(handover.run_folder) / "logs")
    except OSError:
        names = []
    attempts = next_attempts({"files": [{"path": f"logs/{name}"} for name in names]})
    return HandoverOutput(ok=False, reason=reason, stage=handover.stage, attempts=attempts)


def _write_if_changed(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically unless it holds exactly that already (a retried
    handover leaves the files its first try wrote, and the checkpoint lists, untouched)."""
    from bees_cli.files import write_atomic

    try:
        if path.is_file() and not path.is_symlink() and path.read_bytes() == data:
            return
    except OSError:
        pass
    write_atomic(path, data)


class HandoverActivities:
    """The handover activities of this computer's worker.

    Args:
        record: the local record (journal read, item marked free).
        computer: this computer (cloud sign-in, name, machine id).
        mcp_sessions: the local MCP servers held for the stages, stopped first (None: none).
    """

    def __init__(self, record: LocalRecord, computer: Computer,
                 mcp_sessions: McpSessions | None = None) -> None:
        self.record = record
        self.computer = computer
        self.mcp_sessions = mcp_sessions

    @activity.defn(name=HANDOVER_ACTIVITY)
    async def hand_over(self, handover: HandoverInput) -> HandoverOutput:
        """Write the snapshot and checkpoint, release the owner, mark the item free.

        Returns:
            ``ok`` with the checkpoint's SHA-256, or not ok with the reason (the item then
            stays owned here); not ok too when try :data:`HANDOVER_TRIES` failed otherwise
            than by a cloud that is down (the reason says how).

        Raises:
            CloudError: Bees Cloud is down (:func:`cloud_down`); the item shows ``waiting:
                relinquishing: Bees Cloud unreachable, retrying`` and the workflow tries
                again.
            Exception: any other failure before try :data:`HANDOVER_TRIES`.
        """
        if self.mcp_sessions is not None:  # the stage's MCP servers stop with it (issue 25)
            await self.mcp_sessions.close(handover.item_id)
        try:
            return await self._hand_over(handover)
        except Exception as error:
            if cloud_down(error):
                await asyncio.to_thread(self._wait_for_cloud, handover)
                raise
            if activity.info().attempt < HANDOVER_TRIES:
                raise
            activity.logger.exception("handover of %s failed", handover.item_id)
            text = error.message if isinstance(error, BeesError) else f"{error!r}"
            return _refused(handover, f"relinquish failed: {text}")

    async def hand_over_unstarted(self, handover: HandoverInput) -> HandoverOutput:
        """Hand over an item that never started here (``bees item create --on POOL``):
        the same checkpoint, release and ``free`` mark as :meth:`hand_over`, with no run to
        stop and no activity around it.

        Raises:
            CloudError: Bees Cloud is down or refused (the item stays claimed here).
        """
        return await self._hand_over(handover)

    def _wait_for_cloud(self, handover: HandoverInput) -> None:
        """Mark the item waiting for Bees Cloud to release it (once: the same state again
        writes nothing)."""
        self.record.set_state(handover.item_id, status=Status.WAITING, stage=handover.stage,
                              reason=RELEASE_WAIT_TEXT, wait=WaitKind.RELEASE_PENDING)

    async def _hand_over(self, handover: HandoverInput) -> HandoverOutput:
        written = await asyncio.to_thread(self._write, handover)
        if not written.ok:
            return written
        assert written.checkpoint_sha256 is not None
        computer = self.computer
        if computer.login is not None:
            from bees_cli.cloud import wire
            from bees_cli.cloud.client import cloud_for  # httpx: only when asking the cloud

            api = cloud_for(computer, retries=2)
            assert api is not None
            release = wire.OwnerRelease(
                machine_id=computer.machine_id, restart_stages=dict(handover.restart_stages),
                checkpoint_sha256=written.checkpoint_sha256)
            try:
                owner = await api.release_owner(handover.item_id, release)
                kept = owner.release.checkpoint_sha256 if owner.release is not None else None
                if kept != written.checkpoint_sha256:
                    # the cloud kept an earlier release's digest: the run folder's file wins
                    await api.repair_owner(handover.item_id, release)
            except CloudRefused as error:
                # an earlier try's release took (its answer was lost) and another computer
                # has claimed the item since: the handover is done, not refused
                if not await released_here(api, handover.item_id, computer.machine_id,
                                           written.checkpoint_sha256):
                    return _refused(handover, error.message)
            finally:
                await api.aclose()
            written = written.model_copy(update={"released": True})
        await asyncio.to_thread(self._mark_free, handover, written)
        return written

    def _write(self, handover: HandoverInput) -> HandoverOutput:
        from bees_cli.agents.groups import groups_dir, kill_leftover
        from bees_cli.engine.snapshot_store import SnapshotMissing, load_snapshot
        from bees_cli.handover.checkpoint import canonical_json, write_checkpoint
        from bees_cli.handover.once import written_by_this_handover

        try:
            snapshot = load_snapshot(self.record, handover.item_id, handover.snapshot_digest)
        except SnapshotMissing as error:
            return _refused(handover, error.message)
        folder = Path(handover.run_folder)
        if handover.stage is not None:
            kill_leftover(groups_dir(self.computer.data_dir), handover.item_id, handover.stage)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _write_if_changed(snapshot_path(folder),
                              canonical_json(snapshot.model_dump(mode="json")))
            _write_if_changed(item_path(folder),
                              canonical_json(self._item_json(handover, snapshot)))
            info = written_by_this_handover(
                folder, item_id=handover.item_id, machine_id=self.computer.machine_id,
                restart_stages=dict(handover.restart_stages),
                process_digest=snapshot.digest(), asked_at=handover.at)
            if info is None:
                info = write_checkpoint(
                    folder, item_id=handover.item_id, workspace=snapshot.workspace_root,
                    process_digest=snapshot.digest(),
                    restart_stages=dict(handover.restart_stages),
                    computer=self.computer.computer, machine_id=self.computer.machine_id,
                    journal=self.record.journal(handover.item_id), now=datetime.now(UTC),
                    story=self._story(handover), pieces=self._pieces(handover))
        except Refused as error:
            return _refused(handover, error.message)
        except OSError as error:
            return _refused(handover, f"cannot write the checkpoint: {error}")
        return HandoverOutput(
            ok=True, stage=handover.stage, restart_stages=dict(handover.restart_stages),
            checkpoint=str(info.path), checkpoint_sha256=info.sha256, files=info.files,
            total_bytes=info.total_bytes)

    def _pieces(self, handover: HandoverInput) -> list[CheckpointPiece]:
        """The pieces for the checkpoint: the stopped stage's unfinished ones (their restart
        stages) and every finished one (its saved result), from the local record."""
        from bees_cli.handover.checkpoint_pieces import checkpoint_pieces

        restarts = {name: stage for name, stage in handover.restart_stages.items()
                    if name != MAIN_PIECE}
        return checkpoint_pieces(self.record.pieces(handover.item_id), stage=handover.stage,
                                 restarts=restarts)

    def _story(self, handover: HandoverInput) -> Story | None:
        """The item's story for the checkpoint (None when this record lost the item's row)."""
        from bees_cli.record.story import ReviewRounds, tell_story

        reviews = ReviewRounds.model_validate(
            handover.reviews.model_dump() if handover.reviews is not None else {})
        try:
            return tell_story(self.record, handover.item_id,
                              machine_id=self.computer.machine_id,
                              computer=self.computer.computer, run_folder=handover.run_folder,
                              reviews=reviews)
        except BeesError:  # the row is gone (NotFound): a checkpoint without a story
            return None

    def _item_json(self, handover: HandoverInput, snapshot: ItemSnapshot) -> dict[str, Any]:
        """``RUN/item.json``: the item's id, title, process, run and created."""
        try:
            row = self.record.item(handover.item_id)
        except BeesError:
            row = None
        run = 1
        if row is not None and row.input:
            from bees_cli.engine.models import ItemInput

            run = ItemInput.model_validate_json(row.input).run
        title = handover.title or (row.title if row is not None else None)
        return {"id": handover.item_id, "title": title,
                "process": snapshot.process_name, "run": run,
                "created": row.created if row is not None else None,
                "item_agents": list(snapshot.item_agents),
                "item_folders": list(snapshot.item_folders)}

    def _mark_free(self, handover: HandoverInput, written: HandoverOutput) -> None:
        assert written.checkpoint_sha256 is not None
        keep_handover(self.computer.record_path.parent, handover.item_id, {
            "checkpoint_sha256": written.checkpoint_sha256,
            "restart_stages": dict(handover.restart_stages),
            "run_folder": handover.run_folder, "at": handover.at, "who": handover.who})
        restart = handover.restart_stages.get(MAIN_PIECE) or next(
            iter(handover.restart_stages.values()))
        self.record.release_slot(handover.item_id)
        self.record.add_fact(handover.item_id, Relinquished(
            stage=handover.stage, who=handover.who, asked_at=handover.at,
            restart_stages=dict(handover.restart_stages),
            checkpoint_sha256=written.checkpoint_sha256, files=written.files,
            total_bytes=written.total_bytes, released=written.released),
            key=f"relinquished:{written.checkpoint_sha256}")
        self.record.set_state(handover.item_id, status="free", stage=restart,
                              reason=f"restarts at {restart}")

    def all(self) -> list[Callable[..., Any]]:
        """Return the activity callables to register on a worker."""
        return [self.hand_over]
