"""Pieces' data model: names, folders, the refusal rules, and the local record's pieces table."""

from __future__ import annotations

import json
from pathlib import Path

from bees_cli.agents.pieces import (
    ask_digest,
    piece_folder,
    piece_name,
    piece_workflow_id,
    refusal,
)
from bees_cli.ids import SHAPE
from bees_cli.record.local import LocalRecord
from bees_cli.record.pieces import Piece, PieceResult, PieceStatus
from tests.conftest import BeesRunner

ITEM = "01JH3QX5Z8KZ2W4M6N8P0R2T4V"


def _piece(seq: int, **fields: object) -> Piece:
    name = piece_name(1, 1, seq)
    data: dict[str, object] = {
        "item_id": ITEM, "piece": name, "stage": "Draft", "seq": seq, "chain": ["writer"],
        "named": "researcher", "task": "find facts", "input": {"topic": "bees"},
        "ask_digest": ask_digest("researcher", "find facts", {"topic": "bees"}),
        "workflow_id": piece_workflow_id(ITEM, "Draft", name),
        "folder": str(piece_folder("/runs/x", "Draft", name))}
    data.update(fields)
    return Piece.model_validate(data)


def test_names_folders_and_ids_are_deterministic() -> None:
    assert piece_name(2, 3, 4) == "r2-a3-p4"
    assert piece_folder("/runs/x", "Draft", "r1-a1-p1") == Path("/runs/x/Draft/pieces/r1-a1-p1")
    assert piece_workflow_id(ITEM, "Draft", "r1-a1-p1") == f"{ITEM}/Draft/r1-a1-p1"
    assert ask_digest("a", "t", {"x": 1, "y": 2}) == ask_digest("a", "t", {"y": 2, "x": 1})
    assert ask_digest("a", "t", {"x": 1}) != ask_digest("b", "t", {"x": 1})


def test_depth_limit_and_cycle_are_refused_with_the_chain() -> None:
    assert refusal(chain=["writer"], agent="researcher", depth=1, max_depth=2) is None
    assert refusal(chain=["writer", "researcher"], agent="writer", depth=2, max_depth=2) == (
        "cycle: agent writer is already in the chain of callers (writer -> researcher -> "
        "writer)")
    assert refusal(chain=["writer", "a", "b"], agent="c", depth=3, max_depth=2) == (
        "depth limit: a piece of depth 3 would pass the workspace's max_piece_depth of 2 "
        "(writer -> a -> b -> c)")


def test_the_record_keeps_pieces_counts_live_ones_and_finds_saved_results(
        tmp_path: Path) -> None:
    record = LocalRecord(tmp_path / "record.db")
    first, second = _piece(1), _piece(2, named="checker",
                                      ask_digest=ask_digest("checker", "check", {}))
    record.put_piece(first)
    record.put_piece(second)
    assert record.live_pieces() == {ITEM: 2}
    assert record.saved_piece(ITEM, "Draft", first.ask_digest) is None
    done = record.update_piece(ITEM, "Draft", first.piece, status="finished",
                               agent="researcher", exit_code=0,
                               result={"text": "facts", "files": ["notes.md"]})
    assert done.status is PieceStatus.FINISHED
    assert done.result == PieceResult(text="facts", files=["notes.md"])
    assert record.live_pieces() == {ITEM: 1}
    assert record.saved_piece(ITEM, "Draft", first.ask_digest) == done
    assert [p.piece for p in record.pieces(ITEM)] == ["r1-a1-p1", "r1-a1-p2"]
    assert done.usage() == "exit 0"
    assert second.usage() == "-"


def test_bees_delegate_checks_the_stage_s_item_id_and_runs_only_inside_a_stage(
        bees: BeesRunner, bees_home: Path) -> None:
    env = {"BEES_ITEM_ID": "../../etc", "BEES_STAGE": "Draft", "BEES_AGENT": "writer"}
    done = bees("delegate", "alpha", "--task", "figures", env=env)
    assert (done.returncode, done.stdout, done.stderr.splitlines()) == (
        2, "", ["error: not an item id: '../../etc': " + SHAPE + "; give the whole id",
                "hint: `bees status` lists the items and their ids"])
    assert list(bees_home.iterdir()) == []
    outside = {"BEES_ITEM_ID": "", "BEES_STAGE": "", "BEES_AGENT": ""}
    done = bees("delegate", "alpha", "--task", "figures", "--json", env=outside)
    assert (done.returncode, json.loads(done.stdout)["error"]["message"]) == (
        2, "bees delegate runs inside a stage: BEES_ITEM_ID, BEES_STAGE and BEES_AGENT are "
           "not set")


def test_the_run_summary_names_the_latest_ten_pieces_of_the_stage(tmp_path: Path) -> None:
    from bees_cli.machine.computer import Computer
    from bees_cli.record.sync import SharedRecord

    record = LocalRecord(tmp_path / "record.db")
    record.add_item(id=ITEM, process="p", title="T", workspace="/ws", run_folder="/runs/x",
                    input="{}", stage="Draft")
    record.set_state(ITEM, status="running", stage="Draft", agent="writer")
    for seq in range(1, 13):
        record.put_piece(_piece(seq, agent="alpha", status="finished"))
    record.put_piece(_piece(1, stage="Review"))  # another stage's piece is not named
    computer = Computer(machine_id="m1", computer="laptop", person="maya@example.com",
                        login=None, record_path=record.path, runs_dir=tmp_path / "runs")
    summary = next(f["summary"] for i, _, f in SharedRecord(record.path).outbox(computer)
                   if i == ITEM)
    assert summary == "Draft: running (writer); pieces: 2 earlier, " + ", ".join(
        f"alpha r1-a1-p{seq} finished" for seq in range(3, 13))


def test_a_pieces_agent_is_chosen_in_a_stages_order_the_callers_named_first(
        tmp_path: Path) -> None:
    from bees_cli.agents.pieces import check_piece
    from bees_cli.agents.selection import Skipped
    from bees_cli.agents.snapshot import ItemSnapshot
    from bees_cli.workspace.models import Agent, CommandRunner, Process, Stage

    runner = CommandRunner(command=["true"])

    def snap(**agents: Agent) -> ItemSnapshot:
        return ItemSnapshot(
            process_name="p", process=Process(stages=[
                Stage(name="Draft", kind="work", agents=["writer", "helper"]),
                Stage(name="Done", kind="done")]),
            agents=agents, default_agent="writer", workspace_root=str(tmp_path))

    both = snap(writer=Agent(runner=runner), helper=Agent(runner=runner),
                alpha=Agent(runner=runner))
    named = check_piece(snapshot=both, stage_name="Draft", named="alpha", chain=["writer"])
    assert (named.ok, named.pick and named.pick.agent, named.pick and named.pick.reason) == (
        True, "alpha", "named by the caller")
    # the named agent is disabled: the stage's agents next, never one of the callers
    off = snap(writer=Agent(runner=runner), helper=Agent(runner=runner),
               alpha=Agent(runner=runner, enabled=False))
    pick = check_piece(snapshot=off, stage_name="Draft", named="alpha", chain=["writer"]).pick
    assert pick is not None
    assert (pick.agent, pick.reason, pick.skipped) == (
        "helper", "stage agents of p.Draft",
        (Skipped("alpha", "disabled"), Skipped("writer", "already in the chain of callers")))
    # none is left: the piece waits with the reasons
    alone = snap(writer=Agent(runner=runner), alpha=Agent(runner=runner, enabled=False))
    found = check_piece(snapshot=alone, stage_name="Draft", named="alpha", chain=["writer"])
    assert (found.ok, found.reasons) == (False, (
        "no enabled agent for a piece of Draft: alpha disabled; writer already in the chain "
        "of callers; helper not declared in the workspace",))
