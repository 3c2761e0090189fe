"""``bees delegate AGENT --task TEXT``: an agent hands a piece of its stage to another agent.

The caller runs inside a stage (or a piece), so its environment names the item, the stage,
the caller's agent and piece (``BEES_ITEM_ID``, ``BEES_STAGE``, ``BEES_AGENT``,
``BEES_PIECE``) and this computer's engine (``BEES_TEMPORAL_ADDRESS``, ``BEES_HOME``), as
for ``bees action``. The item's run checks the ask (the stage runs, the caller is its agent
or a live piece's, no cycle, the depth limit) and starts the piece (``bees.delegate``, which
returns at once); the piece's end is then awaited in the local record, like a held action's
decision. A model agent's ``delegate`` tool calls the same use case (issue 14).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bees_cli.errors import BeesError, UserError
from bees_cli.usecases.models import Result

if TYPE_CHECKING:
    from bees_cli.record.aio import AsyncRecord
    from bees_cli.record.local import LocalRecord
    from bees_cli.record.pieces import Piece
    from bees_cli.usecases.bees import Bees

POLL_SECONDS = 0.25
"""How often a caller reads the local record for its piece's end."""


class PieceFailed(BeesError):
    """The piece failed (its reason); the caller's tool call fails with it (exit 1)."""

    code = "piece_failed"


class DelegateOutcome(Result):
    """What a piece gave back to its caller: which piece and agent (and why that agent),
    its final ``text`` and the ``files`` in its ``folder`` (relative paths)."""

    piece: str
    agent: str | None
    pick_reason: str | None
    status: str
    text: str
    files: list[str]
    folder: str
    saved: bool = False
    """True when answered from a finished piece's saved result (not run again)."""

    def render(self) -> str:
        """Return the result as the caller reads it: the text, then the files."""
        files = "\n".join(f"- {name}" for name in self.files) or "(none)"
        return (f"{self.text.rstrip()}\n\nFiles in {self.folder}:\n{files}\n")


def _caller(environ: Mapping[str, str]) -> tuple[str, str, str]:
    from bees_cli.ids import check_item_id

    item_id, stage, agent = (environ.get(k, "") for k in
                             ("BEES_ITEM_ID", "BEES_STAGE", "BEES_AGENT"))
    if not (item_id and stage and agent):
        raise UserError("bees delegate runs inside a stage: BEES_ITEM_ID, BEES_STAGE and "
                        "BEES_AGENT are not set",
                        hint="an agent's program calls it while its stage runs")
    return check_item_id(item_id, prefix=False), stage, agent


async def _run_delegate(bees: Bees, agent: str, task: str, data: Any, *,
                       env: Mapping[str, str]) -> DelegateOutcome:
    """Hand ``task`` (with input ``data``) to ``agent`` as a piece of the caller's stage and
    wait for its end (DESIGN.md, Words: piece; issue 14, points 1 and 2).

    Args:
        bees: the computer the stage runs on.
        agent: the agent the caller names (picked first, as a stage's named agent).
        task: what the agent should do.
        data: the input object (a JSON value; ``{}`` for none).
        env: the caller's environment (``BEES_ITEM_ID``, ``BEES_STAGE``, ``BEES_AGENT``,
            ``BEES_PIECE`` inside a piece, ``BEES_ROUND``, ``BEES_ATTEMPT``).

    A stage restarted from the top (``bees continue``, a retry) that asks the same again
    (same named agent, task and input) is answered from the finished piece's saved result,
    not run again (:func:`saved_result`; issue 14, point 3): on a computer that continued
    the item, the checkpoint's pieces were seeded into its local record.

    Returns:
        The finished piece's :class:`DelegateOutcome` (a saved one: ``saved`` True).

    Raises:
        UserError: not inside a stage, or an item id that is not one.
        Refused: the run refused: the stage is not running, an unknown agent, a cycle of
            agents, or the workspace's depth limit (exit 3).
        PieceFailed: the piece failed, with its reason (exit 1).
        EngineError: the engine cannot be reached.
    """
    from bees_cli.engine.piece_models import DELEGATE_UPDATE, DelegateAnswer, DelegateAsk

    item_id, stage, caller = _caller(env)
    saved = await bees.async_record.run(saved_result, item_id, stage, agent, task, data)
    if saved is not None:
        return saved
    ask = DelegateAsk(stage=stage, round=int(env.get("BEES_ROUND", "1") or 1),
                      attempt=int(env.get("BEES_ATTEMPT", "1") or 1), caller_agent=caller,
                      caller_piece=env.get("BEES_PIECE") or None, agent=agent, task=task,
                      input=data)
    engine = await bees.engine(env.get("BEES_TEMPORAL_ADDRESS") or None)
    answer = await engine.update(item_id, DELEGATE_UPDATE, ask, DelegateAnswer, timeout=None)
    assert isinstance(answer, DelegateAnswer)
    piece = await _await_end(bees.async_record, item_id, stage, answer.piece)
    if piece.status != "finished":
        raise PieceFailed(f"piece {piece.piece} ({piece.agent or agent}) {piece.status}: "
                          f"{piece.reason or 'no reason given'}")
    return outcome_of(piece)


def outcome_of(piece: Piece) -> DelegateOutcome:
    """Return a finished piece as its caller's result."""
    result = piece.result
    return DelegateOutcome(piece=piece.piece, agent=piece.agent, pick_reason=piece.pick_reason,
                           status=str(piece.status), text=result.text if result else "",
                           files=list(result.files) if result else [], folder=piece.folder)


def saved_result(record: LocalRecord, item_id: str, stage: str, agent: str, task: str,
                 data: Any) -> DelegateOutcome | None:
    """Return the saved result of a finished piece of ``stage`` asked the same way (same
    named agent, task and input), or None: a stage restarted from the top (``bees continue``)
    that hands out the same piece again is answered from it, not run again (issue 14,
    point 3).
    """
    from bees_cli.agents.pieces import ask_digest

    piece = record.saved_piece(item_id, stage, ask_digest(agent, task, data))
    return None if piece is None else outcome_of(piece).model_copy(update={"saved": True})


async def _await_end(record: AsyncRecord, item_id: str, stage: str, name: str) -> Piece:
    """Wait until piece ``name`` ended (its workflow writes the end to the local record)."""
    from bees_cli.record.pieces import END_STATUSES

    while True:
        piece = await record.piece(item_id, stage, name)
        if piece is not None and piece.status in END_STATUSES:
            return piece
        await asyncio.sleep(POLL_SECONDS)


async def delegate_tool_call(bees: Bees, arguments: dict[str, Any],
                             env: Mapping[str, str]) -> str:
    """Run a model agent's ``delegate`` tool call (``agent``, ``task``, optional ``input``);
    return the text given back to the model (the piece's answer and files).

    Raises:
        UserError: the arguments are not an agent name, a task and an input object.
        Refused, PieceFailed: as :func:`_run_delegate`.
    """
    agent, task, data = arguments.get("agent"), arguments.get("task"), arguments.get("input")
    if not isinstance(agent, str) or not isinstance(task, str):
        raise UserError('delegate needs {"agent": NAME, "task": TEXT, "input": {...}}')
    if data is not None and not isinstance(data, dict):
        raise UserError("delegate's input must be an object")
    done = await _run_delegate(bees, agent, task, data or {}, env=env)
    return done.render()
