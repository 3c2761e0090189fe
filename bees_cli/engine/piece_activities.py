"""The activities of pieces: choose a piece's agent, take its slot, run a command agent in the
piece's folder, and keep the piece's row of the local record (issue 14).

Each is a method of :class:`PieceActivities`, which receives its dependencies, takes one
input model and has a stable ``name=``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from bees_cli.agents.pieces import piece_stage
from bees_cli.engine.models import SlotInput, SlotOutput
from bees_cli.engine.piece_models import (
    PIECE_ELIGIBLE_ACTIVITY,
    PIECE_RECORD_ACTIVITY,
    PIECE_RUN_ACTIVITY,
    PIECE_SLOT_ACTIVITY,
    PieceCheckOutput,
    PieceInput,
    PieceOutput,
    PieceRecordInput,
    PieceRunInput,
)
from bees_cli.engine.snapshot_store import engine_view, load_snapshot
from bees_cli.engine.transcript import transcript_lines, transcript_path
from bees_cli.record.events_pieces import PiecePicked, PieceWaiting
from bees_cli.record.local import LocalRecord
from bees_cli.record.pieces import END_STATUSES, Piece, PieceStatus
from bees_cli.record.reasons import Reason
from bees_cli.rules import busy_fails, waited_for_slot
from bees_cli.utc import format_utc, utc_now

if TYPE_CHECKING:
    from bees_cli.agents.snapshot import ItemSnapshot

NOT_ELIGIBLE = "NotEligible"
AGENT_BUSY = "AgentBusy"
ANSWER_FILE = "answer.md"
"""A piece's final answer, when its agent writes one in its folder (a model agent does)."""
TEXT_CHARS = 20_000
"""At most this many characters of a piece's answer go back to its caller."""


def folder_files(folder: Path) -> list[str]:
    """Return the regular files under ``folder``, relative and sorted (none when missing)."""
    if not folder.is_dir():
        return []
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


class PieceActivities:
    """The piece activities of this computer's worker.

    Args:
        record: the local record (snapshots, pieces, slots).
        engine_env: ``BEES_HOME`` and ``BEES_TEMPORAL_ADDRESS`` for a piece's program, so its
            ``bees action`` and ``bees delegate`` reach this computer's run.
        heartbeat_every: seconds between heartbeats of a running piece.
    """

    def __init__(self, record: LocalRecord, *, engine_env: dict[str, str] | None = None,
                 heartbeat_every: float = 2.0) -> None:
        self.record = record
        self.engine_env = dict(engine_env or {})
        self.heartbeat_every = heartbeat_every

    def _snapshot(self, item_id: str, digest: str | None) -> ItemSnapshot:
        return load_snapshot(self.record, item_id, digest)

    # -- agent choice -----------------------------------------------------------------------

    @activity.defn(name=PIECE_ELIGIBLE_ACTIVITY)
    async def piece_eligible(self, piece: PieceInput) -> PieceCheckOutput:
        """Check eligibility and choose the piece's agent (DESIGN.md, Rules: eligibility and
        agent choice, the caller's named agent first); while it fails, fail retryably (the
        workflow re-checks every 15 s). Each new set of reasons is written to the piece's row.

        Raises:
            ApplicationError: of type :data:`NOT_ELIGIBLE` with the reasons, to be retried.
        """
        out = await asyncio.to_thread(self._check, piece)
        if not out.ok:
            raise ApplicationError("; ".join(out.reasons), type=NOT_ELIGIBLE,
                                   category=ApplicationErrorCategory.BENIGN)
        return out

    def _check(self, piece: PieceInput) -> PieceCheckOutput:
        from bees_cli.agents.pieces import check_piece

        snapshot = self._snapshot(piece.item_id, piece.snapshot_digest)
        found = check_piece(snapshot=snapshot, stage_name=piece.stage, named=piece.named,
                            chain=piece.chain)
        pick = None if found.pick is None else found.pick.to_json()
        if not found.ok:
            self._waiting(piece, list(found.whys))
            return PieceCheckOutput(ok=False, reasons=list(found.reasons), pick=pick)
        assert found.pick is not None and found.pick.agent is not None
        agent = found.pick.agent
        view = engine_view(snapshot).agents[agent]
        live = self.record.update_live_piece(
            piece.item_id, piece.stage, piece.piece, agent=agent, pick_reason=found.pick.reason,
            status=PieceStatus.RUNNING if view.max_concurrent_runs is None
            else PieceStatus.WAITING, reason=None)
        if live is not None:  # a piece its run already stopped stays stopped
            self.record.add_fact(piece.item_id, PiecePicked.model_validate(
                {"stage": piece.stage, "round": piece.round, "piece": piece.piece,
                 "agent": agent, "reason": found.pick.reason, "pick": pick}),
                key=f"{piece.stage}:{piece.round}:piece:{piece.piece}:pick")
        return PieceCheckOutput(ok=True, agent=agent, pick_reason=found.pick.reason, pick=pick,
                                folders=dict(found.folders), cap=view.max_concurrent_runs,
                                loop=view.loop)

    def _waiting(self, piece: PieceInput, whys: list[Reason]) -> None:
        """Write new reasons to wait to the piece's row (their words joined with ``"; "``)
        and history (as codes), once per reason."""
        reason = "; ".join(why.words() for why in whys)
        row = self.record.piece(piece.item_id, piece.stage, piece.piece)
        if row is not None and (row.status, row.reason) == (PieceStatus.WAITING, reason):
            return
        if self.record.update_live_piece(piece.item_id, piece.stage, piece.piece,
                                         status=PieceStatus.WAITING, reason=reason) is None:
            return  # it ended: a piece its run already stopped stays stopped
        info = activity.info()
        self.record.add_fact(piece.item_id, PieceWaiting(
            stage=piece.stage, round=piece.round, piece=piece.piece,
            reasons=whys),
            key=f"{piece.stage}:{piece.round}:piece:{piece.piece}:waiting:"
                f"{info.activity_id}:{info.attempt}")

    # -- busy agents ------------------------------------------------------------------------

    @activity.defn(name=PIECE_SLOT_ACTIVITY)
    async def piece_slot(self, ask: SlotInput) -> SlotOutput:
        """Take a slot of the piece's capped agent, as a stage does (DESIGN.md, Rules: busy
        agent); while none is free fail retryably (re-checked every 15 s); once
        :data:`~bees_cli.rules.BUSY_LIMIT` passed, answer not granted (the queue place given back).

        ``ask.stage`` is the piece's slot name, ``STAGE/pieces/PIECE``.

        Raises:
            ApplicationError: of type :data:`AGENT_BUSY` with the reason, to be retried.
        """
        granted, holders, position = await asyncio.to_thread(
            self.record.acquire_slot, agent=ask.agent, item_id=ask.item_id, stage=ask.stage,
            cap=ask.cap)
        stage, _, name = ask.stage.partition("/pieces/")
        if granted:
            await asyncio.to_thread(self.record.update_live_piece, ask.item_id, stage, name,
                                    status=PieceStatus.RUNNING, reason=None)
            return SlotOutput(granted=True)
        why = Reason(code="agent_busy", agent=ask.agent, busy=len(holders), cap=ask.cap,
                     items=list(holders), position=position if position > 1 else None)
        reason = why.words()
        if busy_fails(waited_for_slot(activity.info().attempt)):
            await asyncio.to_thread(self.record.release_slot, ask.item_id, ask.stage)
            return SlotOutput(granted=False, reason=reason, why=why, position=position)
        piece = PieceInput.model_construct(item_id=ask.item_id, stage=stage, piece=name,
                                           round=ask.round or 1)
        await asyncio.to_thread(self._waiting, piece, [why])
        raise ApplicationError(reason, type=AGENT_BUSY, category=ApplicationErrorCategory.BENIGN)

    # -- a command agent --------------------------------------------------------------------

    @activity.defn(name=PIECE_RUN_ACTIVITY)
    async def piece_run(self, run: PieceRunInput) -> PieceOutput:
        """Run the piece's command agent in the piece's folder, heartbeating, as a stage's
        (:func:`~bees_cli.agents.runner.run_command_stage`), with the piece in its
        environment: ``BEES_STAGE`` the caller's stage, ``BEES_PIECE`` its name,
        ``BEES_TASK`` the task, ``BEES_PIECE_INPUT`` the input (JSON). Exit 0 finishes it;
        any other exit fails it with the reason (a result, not retried)."""
        import json

        from bees_cli.agents.runner import StageRequest, run_command_stage
        from bees_cli.workspace.models import CommandRunner

        piece = run.piece
        attempt = activity.info().attempt
        snapshot = await asyncio.to_thread(self._snapshot, piece.item_id, piece.snapshot_digest)
        agent = snapshot.agents[run.agent]
        assert isinstance(agent.runner, CommandRunner)
        name = piece_stage(piece.stage, piece.piece)
        await asyncio.to_thread((Path(piece.run_folder) / "logs" / name).parent.mkdir,
                                parents=True, exist_ok=True)
        env = {**self.engine_env, "BEES_STAGE": piece.stage, "BEES_PIECE": piece.piece,
               "BEES_TASK": piece.task,
               "BEES_PIECE_INPUT": json.dumps(piece.input, ensure_ascii=False),
               "BEES_PIECE_FOLDER": piece.folder, "BEES_ROUND": str(piece.round),
               "BEES_ATTEMPT": str(piece.attempt)}
        request = StageRequest(
            item_id=piece.item_id, title=piece.title, process=snapshot.process_name,
            stage=name, stage_kind="work", reviews=None, agent=run.agent,
            instructions=agent.instructions, command=list(agent.runner.command),
            env=dict(agent.runner.env), run_folder=piece.run_folder,
            workspace_root=snapshot.workspace_root, folders=dict(run.folders),
            round=piece.round, attempt=attempt, engine_env=env)
        result = await run_command_stage(request, heartbeat=activity.heartbeat,
                                         heartbeat_every=self.heartbeat_every)
        if not result.ok:
            return PieceOutput(status="failed", agent=run.agent, reason=result.reason,
                               why=result.why, exit_code=result.exit_code)
        return PieceOutput(status="finished", agent=run.agent, exit_code=result.exit_code)

    # -- the record -------------------------------------------------------------------------

    @activity.defn(name=PIECE_RECORD_ACTIVITY)
    async def piece_record(self, entry: PieceRecordInput) -> None:
        """Write the piece (handed out: its whole row) or change its row, and add one fact
        to the item's history once. A piece that ends ``finished`` gets its result: its
        ``answer.md`` (else its last stdout), the files in its folder, a model agent's
        tokens (from its transcript)."""
        await asyncio.to_thread(self._record_now, entry)

    def _record_now(self, entry: PieceRecordInput) -> None:
        now = format_utc(utc_now())
        if entry.start is not None:
            start = entry.start
            if self.record.piece(entry.item_id, entry.stage, entry.piece) is None:
                self.record.put_piece(Piece(
                    item_id=start.item_id, piece=start.piece, stage=start.stage,
                    round=start.round, attempt=start.attempt, seq=start.seq,
                    parent=start.parent, depth=start.depth, chain=list(start.chain),
                    named=start.named, task=start.task, input=start.input,
                    ask_digest=start.ask_digest, workflow_id=start.workflow_id,
                    folder=start.folder, restart_stage=start.stage, restart_piece=start.piece,
                    started=now))
        else:
            changes: dict[str, Any] = dict(entry.changes)
            status = changes.get("status")
            if status in {str(s) for s in END_STATUSES}:
                changes["ended"] = now
            if status == PieceStatus.FINISHED:
                changes.update(self._result(entry))
            self.record.update_piece(entry.item_id, entry.stage, entry.piece, **changes)
        self.record.relay_fact(entry.item_id, key=entry.key, kind=entry.kind,
                               stage=entry.stage, round=entry.round, data=dict(entry.data))

    def _result(self, entry: PieceRecordInput) -> dict[str, Any]:
        """Return a finished piece's result and tokens, read from its folder and logs."""
        piece = self.record.piece(entry.item_id, entry.stage, entry.piece)
        assert piece is not None
        folder = Path(piece.folder)
        run_folder = folder.parents[2]  # RUN/STAGE/pieces/PIECE
        name = piece_stage(piece.stage, piece.piece)
        answer = folder / ANSWER_FILE
        if answer.is_file():
            text = answer.read_text(encoding="utf-8", errors="replace")
        else:
            text = self._stdout(run_folder / "logs", name)
        found: dict[str, Any] = {"result": {"text": text[:TEXT_CHARS],
                                            "files": folder_files(folder)},
                                 "restart_piece": None}
        replies = [e for e in transcript_lines(transcript_path(str(run_folder), name))
                   if e.get("kind") == "reply"]
        if replies:
            found["prompt_tokens"] = sum(int(e.get("prompt_tokens") or 0) for e in replies)
            found["completion_tokens"] = sum(int(e.get("completion_tokens") or 0)
                                             for e in replies)
        return found

    @staticmethod
    def _stdout(logs: Path, name: str) -> str:
        """Return the stdout of the piece's last attempt (``""`` when none)."""
        stem = Path(name).name
        folder = logs / Path(name).parent
        outs = sorted(folder.glob(f"{stem}-r*-a*.stdout"), key=os.path.getmtime)
        return outs[-1].read_text(encoding="utf-8", errors="replace") if outs else ""

    def all(self) -> list[Callable[..., Any]]:
        """Return the activity callables to register on a worker."""
        return [self.piece_eligible, self.piece_slot, self.piece_run, self.piece_record]
