"""A checkpoint of format 3 lists the run's pieces: each unfinished one with its restart stage,
each finished one with its saved result; its digest covers them; formats 1 and 2 still read;
a continued computer's record gets them back under its own run folder (issue 14, point 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bees_cli.agents.pieces import ask_digest
from bees_cli.handover.checkpoint import canonical_json, verify_checkpoint
from bees_cli.handover.checkpoint_pieces import (
    CheckpointPiece,
    SavedResult,
    checkpoint_pieces,
    seeded_piece,
)
from bees_cli.record.pieces import Piece, PieceResult, PieceStatus
from tests.handover.helpers import found, make_run, rewrite, sha, write
from tests.handover.test_checkpoint_story import STORY

ITEM = "01JH2Q0000000000000000TEST"


def piece(name: str, seq: int, status: PieceStatus, *, stage: str = "Draft", attempt: int = 1,
          result: PieceResult | None = None) -> Piece:
    named = {1: "alpha", 2: "beta", 3: "gamma"}[seq]
    return Piece(item_id=ITEM, piece=name, stage=stage, attempt=attempt, seq=seq,
                 chain=["writer"], named=named, agent=named, pick_reason="named by the caller",
                 task=f"task {seq}", input={"week": seq},
                 ask_digest=ask_digest(named, f"task {seq}", {"week": seq}), status=status,
                 result=result, exit_code=0 if result else None,
                 restart_stage=stage, restart_piece=None if result else name,
                 workflow_id=f"{ITEM}/{stage}/{name}", folder=f"/laptop/runs/{stage}/pieces/{name}",
                 started="2026-01-05T09:00:00.000000Z",
                 ended="2026-01-05T09:10:00.000000Z")


ALPHA = piece("r1-a1-p1", 1, PieceStatus.FINISHED,
              result=PieceResult(text="alpha found: figures\n", files=["alpha.md"]))
BETA = piece("r1-a1-p2", 2, PieceStatus.STOPPED)
OLD = piece("r1-a1-p1", 3, PieceStatus.FAILED, stage="Research")


def test_the_checkpoint_lists_finished_pieces_and_the_stopped_stages_unfinished_ones() -> None:
    listed = checkpoint_pieces([OLD, ALPHA, BETA], stage="Draft",
                               restarts={"r1-a1-p2": "Draft"})
    assert [(p.stage, p.piece, p.status, p.restart_stage, p.result) for p in listed] == [
        ("Draft", "r1-a1-p1", "finished", None,
         SavedResult(text="alpha found: figures\n", files=["alpha.md"])),
        ("Draft", "r1-a1-p2", "stopped", "Draft", None)]
    # a piece of another stage with the same name is not the stopped stage's
    assert checkpoint_pieces([OLD], stage="Draft", restarts={"r1-a1-p1": "Draft"}) == []


def test_pieces_round_trip_in_format_3_and_are_covered_by_the_digest(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run")
    pieces = checkpoint_pieces([ALPHA, BETA], stage="Draft", restarts={"r1-a1-p2": "Draft"})
    info = write(folder, story=STORY, pieces=pieces,
                 restart_stages={"main": "Draft", "r1-a1-p2": "Draft"})
    data = (folder / "checkpoint.json").read_bytes()
    doc = json.loads(data)
    assert (doc["format"], doc["restart_stages"]) == (3, {"main": "Draft", "r1-a1-p2": "Draft"})
    assert canonical_json(doc) == data
    verification = verify_checkpoint(folder, expected_sha256=info.sha256)
    assert verification.ok is True
    assert verification.document is not None and verification.document.pieces == pieces

    # a saved result changed after the handover is refused like a changed file
    def forge(doc: dict[str, Any]) -> None:
        doc["pieces"][0]["result"]["text"] = "forged\n"

    rewrite(folder, forge)
    forged = (folder / "checkpoint.json").read_bytes()
    assert found(verify_checkpoint(folder, expected_sha256=info.sha256)) == [
        ("checkpoint_digest", "checkpoint.json",
         f"sha256 {sha(forged)} does not match the expected {info.sha256}")]


def test_without_pieces_it_is_format_2_as_before(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run")
    write(folder, story=STORY, pieces=[])
    doc = json.loads((folder / "checkpoint.json").read_bytes())
    assert (doc["format"], "pieces" in doc) == (2, False)
    assert verify_checkpoint(folder).ok is True


def test_pieces_must_go_with_their_format_and_each_wrong_field_is_named(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run")
    pieces = checkpoint_pieces([ALPHA], stage="Draft", restarts={})
    write(folder, story=STORY, pieces=pieces)
    rewrite(folder, lambda doc: doc.pop("pieces"))
    assert found(verify_checkpoint(folder)) == [
        ("checkpoint_schema", "checkpoint.json",
         "missing field 'pieces' (format 3 lists the run's pieces)")]
    rewrite(folder, lambda doc: doc.update(pieces=None))
    assert found(verify_checkpoint(folder)) == [
        ("checkpoint_schema", "checkpoint.json", "'pieces' must be a list of pieces (format 3)")]
    rewrite(folder, lambda doc: doc.update(
        pieces=[{**pieces[0].model_dump(mode="json"), "status": "done", "seq": "1"}]))
    assert found(verify_checkpoint(folder)) == [
        ("checkpoint_schema", "checkpoint.json", "pieces[0].seq: input should be a valid integer"),
        ("checkpoint_schema", "checkpoint.json",
         "pieces[0].status: input should be 'waiting', 'running', 'finished', 'failed' or "
         "'stopped'")]
    write(folder, story=STORY)
    rewrite(folder, lambda doc: doc.update(pieces=[]))
    assert found(verify_checkpoint(folder)) == [
        ("checkpoint_schema", "checkpoint.json",
         "unknown field 'pieces' in format 2 (it came with format 3)")]


def test_a_continued_record_keeps_the_pieces_under_its_own_run_folder() -> None:
    listed = checkpoint_pieces([ALPHA, BETA], stage="Draft", restarts={"r1-a1-p2": "Draft"})
    alpha, beta = (seeded_piece(p.model_dump(mode="json"), item_id=ITEM,
                                run_folder="/desktop/runs/X") for p in listed)
    assert alpha == ALPHA.model_copy(update={"folder": "/desktop/runs/X/Draft/pieces/r1-a1-p1"})
    assert beta == BETA.model_copy(update={"folder": "/desktop/runs/X/Draft/pieces/r1-a1-p2"})
    assert isinstance(listed[0], CheckpointPiece)


def test_the_continued_stage_s_attempt_follows_its_pieces_so_they_get_new_names() -> None:
    """Issue 23, point 3: a model agent's stage keeps no log named by its attempt; its
    continued attempt still comes after every attempt that handed out a listed piece."""
    from bees_cli.handover.next_run import next_attempts

    later = piece("r2-a3-p1", 1, PieceStatus.STOPPED, attempt=3).model_copy(
        update={"round": 2})
    listed = checkpoint_pieces([ALPHA, BETA, later], stage="Draft",
                               restarts={"r1-a1-p2": "Draft", "r2-a3-p1": "Draft"})
    document = {"files": [{"path": "logs/Review-r1-a2.stdout"}, {"path": "Draft/draft.md"},
                          {"path": "logs/Draft.transcript.jsonl"}],
                "pieces": [p.model_dump(mode="json") for p in listed]}
    assert next_attempts(document) == {"Review:1": 3, "Draft:1": 2, "Draft:2": 4}
    assert next_attempts({"files": []}) == {}
