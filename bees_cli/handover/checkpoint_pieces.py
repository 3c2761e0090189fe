"""The pieces a checkpoint lists (format 3): each with its restart point or its saved result.

Rules (issue 14, point 3; DESIGN.md, Rules: handover): a relinquish stops every piece of the
run; the checkpoint lists each piece the stopped stage had not finished with the stage it
restarts at (its caller's stage restarts from the top and hands it out again), and each
finished piece with its saved result, so that ``bees continue`` answers the same ask from
the checkpoint instead of running it again. A piece's folder lies inside its stage's
folder, so its files are in the checkpoint's file list already.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints

from bees_cli.agents.pieces import piece_folder
from bees_cli.record.pieces import Piece, PieceResult, PieceStatus

NonEmpty = Annotated[str, StringConstraints(min_length=1)]

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)


class SavedResult(BaseModel):
    """A finished piece's result: its final ``text`` and the ``files`` of its folder
    (relative to that folder, sorted)."""

    model_config = _STRICT

    text: str
    files: list[str]


class CheckpointPiece(BaseModel):
    """One piece as a checkpoint lists it (``pieces`` of format 3).

    Attributes:
        piece, stage: its name (``rR-aA-pN``) and its caller's stage; its folder is
            ``RUN/STAGE/pieces/PIECE`` on every computer.
        round, attempt, seq, parent, depth, chain: where it was handed out (as
            :class:`~bees_cli.record.pieces.Piece`).
        named, task, input, ask_digest: what its caller asked (the digest answers the
            same ask again).
        agent, pick_reason: the agent chosen and why (None: never chosen).
        status: how it ended: ``finished``, or ``stopped``/``failed``/``waiting``/``running``
            for a piece that restarts.
        reason: why it failed or stopped.
        restart_stage: the stage it restarts at (None: finished, answered from ``result``).
        result: a finished piece's saved result (None otherwise).
        exit_code, prompt_tokens, completion_tokens: what it used.
        started, ended: UTC text.
    """

    model_config = _STRICT

    piece: NonEmpty
    stage: NonEmpty
    round: int
    attempt: int
    seq: int
    parent: str | None
    depth: int
    chain: list[str]
    named: NonEmpty
    task: str
    input: Any
    ask_digest: NonEmpty
    agent: str | None
    pick_reason: str | None
    status: Literal["waiting", "running", "finished", "failed", "stopped"]
    reason: str | None
    restart_stage: NonEmpty | None
    result: SavedResult | None
    exit_code: int | None
    prompt_tokens: int | None
    completion_tokens: int | None
    started: str | None
    ended: str | None


def checkpoint_pieces(pieces: Iterable[Piece], *, stage: str | None,
                      restarts: Mapping[str, str]) -> list[CheckpointPiece]:
    """Return the pieces a checkpoint lists: every finished piece of the item (its saved
    result), and each piece of ``stage`` named in ``restarts`` (its restart stage).

    Args:
        pieces: the item's pieces in the local record, in the order handed out.
        stage: the stage the relinquish stopped (its unfinished pieces restart).
        restarts: piece name → the stage it restarts at (the release's restart stages
            without ``main``).

    Returns:
        The listed pieces, in the order handed out.
    """
    listed: list[CheckpointPiece] = []
    for piece in pieces:
        finished = piece.status == PieceStatus.FINISHED and piece.result is not None
        restart = restarts.get(piece.piece) if piece.stage == stage else None
        if not finished and restart is None:
            continue
        result = piece.result if finished else None
        listed.append(CheckpointPiece(
            piece=piece.piece, stage=piece.stage, round=piece.round, attempt=piece.attempt,
            seq=piece.seq, parent=piece.parent, depth=piece.depth, chain=list(piece.chain),
            named=piece.named, task=piece.task, input=piece.input,
            ask_digest=piece.ask_digest, agent=piece.agent, pick_reason=piece.pick_reason,
            status=str(piece.status),  # type: ignore[arg-type]
            reason=piece.reason, restart_stage=None if finished else restart,
            result=None if result is None else SavedResult(text=result.text,
                                                           files=list(result.files)),
            exit_code=piece.exit_code, prompt_tokens=piece.prompt_tokens,
            completion_tokens=piece.completion_tokens, started=piece.started,
            ended=piece.ended))
    return listed


def seeded_piece(entry: CheckpointPiece | Mapping[str, Any], *, item_id: str,
                 run_folder: str | Path) -> Piece:
    """Return a checkpoint's piece as this computer's local record keeps it: its folder
    under this computer's run folder, its workflow id ``ITEM/STAGE/PIECE``.

    Args:
        entry: the piece as the checkpoint lists it (a verified document's object).
        item_id: the item's id.
        run_folder: the run folder on this computer.

    Raises:
        pydantic.ValidationError: ``entry`` is not a :class:`CheckpointPiece`.
    """
    from bees_cli.agents.pieces import piece_workflow_id

    piece = (entry if isinstance(entry, CheckpointPiece)
             else CheckpointPiece.model_validate(dict(entry)))
    return Piece(
        item_id=item_id, piece=piece.piece, stage=piece.stage, round=piece.round,
        attempt=piece.attempt, seq=piece.seq, parent=piece.parent, depth=piece.depth,
        chain=list(piece.chain), named=piece.named, agent=piece.agent,
        pick_reason=piece.pick_reason, task=piece.task, input=piece.input,
        ask_digest=piece.ask_digest, status=PieceStatus(piece.status), reason=piece.reason,
        result=None if piece.result is None else PieceResult(text=piece.result.text,
                                                             files=list(piece.result.files)),
        exit_code=piece.exit_code, prompt_tokens=piece.prompt_tokens,
        completion_tokens=piece.completion_tokens,
        restart_stage=piece.restart_stage or piece.stage,  # the record's: its caller's stage
        restart_piece=None if piece.restart_stage is None else piece.piece,
        workflow_id=piece_workflow_id(item_id, piece.stage, piece.piece),
        folder=str(piece_folder(run_folder, piece.stage, piece.piece)),
        started=piece.started, ended=piece.ended)
