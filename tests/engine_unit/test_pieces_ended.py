"""A piece that ended stays ended (issue 23, point 3): the check or slot of a piece whose run
already stopped it (a cancelled activity still finishing in its thread) never writes it back
to ``running`` or ``waiting``, so an item is never left ``done`` beside a piece that shows
``running``; and a stage attempt whose agent ended hands out no new piece."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from bees_cli.agents.pieces import ask_digest, piece_folder, piece_name, piece_workflow_id
from bees_cli.agents.snapshot import make_snapshot
from bees_cli.engine.models import ItemInput, SlotInput
from bees_cli.engine.piece_activities import PieceActivities
from bees_cli.engine.piece_models import DelegateAsk, PieceInput
from bees_cli.engine.snapshot_store import engine_view, keep_snapshot
from bees_cli.engine.workflows import ItemWorkflow
from bees_cli.moves import Phase
from bees_cli.record.local import LocalRecord
from bees_cli.record.pieces import Piece, PieceStatus
from bees_cli.workspace.loader import load_workspace
from tests.engine.conftest import Space

ITEM = "01JH3QX5Z8KZ2W4M6N8P0R2T4V"
DRAFT = """\
stages:
  - name: Draft
    kind: work
    agents: [writer]
  - name: Done
    kind: done
"""


def stopped_piece(space: Space, record: LocalRecord, *, cap: int | None) -> PieceInput:
    """Keep a workspace (writer, alpha capped at ``cap``) and a piece of Draft handed to
    alpha that its run stopped; return the piece's input."""
    space.agent("writer")
    space.agent("alpha")
    if cap is not None:
        space.write("agents/alpha.yaml", f"max_concurrent_runs: {cap}\n"
                    + (space.root / "agents/alpha.yaml").read_text())
    space.write("processes/p.yaml", DRAFT)
    digest = keep_snapshot(record, make_snapshot(load_workspace(space.root), "p"))
    name = piece_name(1, 1, 1)
    piece = PieceInput(
        item_id=ITEM, title="t", run_folder=str(space.root / "run"), snapshot_digest=digest,
        stage="Draft", seq=1, piece=name, chain=["writer"], named="alpha", task="dig",
        ask_digest=ask_digest("alpha", "dig", {}),
        workflow_id=piece_workflow_id(ITEM, "Draft", name),
        folder=str(piece_folder(space.root / "run", "Draft", name)))
    record.put_piece(Piece(
        item_id=ITEM, piece=name, stage="Draft", seq=1, chain=["writer"], named="alpha",
        task="dig", ask_digest=piece.ask_digest, workflow_id=piece.workflow_id,
        folder=piece.folder, status=PieceStatus.STOPPED, reason="stopped with its run"))
    return piece


async def test_a_late_check_does_not_bring_a_stopped_piece_back(
        space: Space, record: LocalRecord) -> None:
    piece = stopped_piece(space, record, cap=None)
    out = await ActivityEnvironment().run(PieceActivities(record).piece_eligible, piece)
    assert (out.ok, out.agent) == (True, "alpha")
    row = record.piece(ITEM, "Draft", piece.piece)
    assert row is not None
    assert (row.status, row.reason, row.agent) == (
        PieceStatus.STOPPED, "stopped with its run", None)
    assert record.live_pieces() == {}


async def test_a_late_slot_does_not_bring_a_stopped_piece_back(
        space: Space, record: LocalRecord) -> None:
    piece = stopped_piece(space, record, cap=1)
    slot = SlotInput(item_id=ITEM, stage=f"Draft/pieces/{piece.piece}", agent="alpha", cap=1)
    out = await ActivityEnvironment().run(PieceActivities(record).piece_slot, slot)
    assert out.granted
    row = record.piece(ITEM, "Draft", piece.piece)
    assert row is not None
    assert (row.status, row.reason) == (PieceStatus.STOPPED, "stopped with its run")
    assert record.live_pieces() == {}


def test_an_ask_of_a_stage_attempt_that_ended_is_refused(space: Space) -> None:
    """Once a stage attempt's agent ended, a late ask of that attempt (a ``bees delegate``
    its agent left behind) starts no piece: the run is stopping the attempt's pieces."""
    space.agent("writer")
    space.agent("alpha")
    space.write("processes/p.yaml", DRAFT)
    run = ItemWorkflow()
    run.live.item = ItemInput(item_id=ITEM, title="t", run_folder="/runs/x", snapshot=engine_view(
        make_snapshot(load_workspace(space.root), "p")))
    run.live.phase, run.live.stage, run.live.agent = Phase.RUNNING, "Draft", "writer"
    ask = DelegateAsk(stage="Draft", round=1, attempt=1, caller_agent="writer", agent="alpha",
                      task="dig")
    run._delegate_allowed(ask)  # the attempt runs: allowed
    run.live.ended_attempts.add(("Draft", 1, 1))
    with pytest.raises(ApplicationError) as refused:
        run._delegate_allowed(ask)
    assert (refused.value.type, refused.value.message) == (
        "Refused", "stage Draft (round 1, attempt 1) has ended: its agent is done, so its "
        "pieces are stopped")
    run._delegate_allowed(ask.model_copy(update={"attempt": 2}))  # a retry's attempt runs
