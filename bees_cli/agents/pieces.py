"""Pieces (work an agent hands to another agent): their names, folders and the pure rules.

A piece is a sub-task an agent hands to another agent inside its stage (DESIGN.md, Words:
piece). It is named ``rR-aA-pN`` (the caller's stage round ``R``, its attempt ``A`` and the
``N``-th piece of that stage attempt), works in ``RUN/STAGE/pieces/NAME/`` and runs as
Temporal workflow ``ITEM/STAGE/NAME``. Nothing here imports Temporal or touches the disk.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bees_cli.agents.chat_wire import ToolDef
    from bees_cli.agents.eligibility import Eligibility
    from bees_cli.agents.selection import Pick
    from bees_cli.agents.snapshot import ItemSnapshot
    from bees_cli.machine.connections import AddonConnection

PIECES_FOLDER = "pieces"
"""The folder of a stage's pieces, inside the stage's folder."""

DEFAULT_MAX_DEPTH = 2
"""How deep pieces may nest unless ``bees.yaml`` says otherwise (``max_piece_depth``): a
stage's agent hands out pieces of depth 1, whose agents may hand out pieces of depth 2."""


WHY_IN_CHAIN = "already in the chain of callers"
"""Why an agent is skipped for a piece: it would hand work back to a caller (a cycle)."""


def piece_name(round_: int, attempt: int, seq: int) -> str:
    """Return a piece's name: ``rR-aA-pN`` (stage round, stage attempt, its number, from 1)."""
    return f"r{round_}-a{attempt}-p{seq}"


def piece_folder(run_folder: str | Path, stage: str, piece: str) -> Path:
    """Return a piece's own folder: ``RUN/STAGE/pieces/PIECE`` (not created)."""
    return Path(run_folder) / stage / PIECES_FOLDER / piece


def piece_stage(stage: str, piece: str) -> str:
    """Return the name a piece's agent runs under, as a stage's folder and logs are named:
    ``STAGE/pieces/PIECE`` (its folder ``RUN/STAGE/pieces/PIECE``, its logs
    ``RUN/logs/STAGE/pieces/PIECE-rR-aA.stdout`` …, its transcript
    ``RUN/logs/STAGE/pieces/PIECE.transcript.jsonl``)."""
    return f"{stage}/{PIECES_FOLDER}/{piece}"


def work_folder(run_folder: str | Path, stage: str, piece: str | None) -> Path:
    """Return where an agent works: a piece's folder, or (``piece`` None) the stage's."""
    if piece is None:
        return Path(run_folder) / stage
    return piece_folder(run_folder, stage, piece)


def piece_workflow_id(item_id: str, stage: str, piece: str) -> str:
    """Return the Temporal workflow id of a piece: ``ITEM/STAGE/PIECE`` (deterministic)."""
    return f"{item_id}/{stage}/{piece}"


def ask_digest(agent: str, task: str, data: Any) -> str:
    """Return the SHA-256 (hex) of what a caller asked: the agent it named, the task and the
    input as canonical JSON. Equal asks have equal digests: a stage restarted from the top
    that asks the same again can be answered from a finished piece's saved result."""
    text = json.dumps([agent, task, data], sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def refusal(*, chain: Sequence[str], agent: str, depth: int, max_depth: int) -> str | None:
    """Tell why a delegation is refused, or None (DESIGN.md, Words: piece; issue 14, point 1).

    Args:
        chain: the agents of the callers, the stage's agent first, the caller last.
        agent: the agent the caller names for the piece.
        depth: the new piece's depth (1: handed out by the stage's agent).
        max_depth: the workspace's ``max_piece_depth``.

    Returns:
        ``"depth limit: …"`` when ``depth`` is over ``max_depth``; ``"cycle: …"`` when
        ``agent`` is already in ``chain``; else None.
    """
    if depth > max_depth:
        return (f"depth limit: a piece of depth {depth} would pass the workspace's "
                f"max_piece_depth of {max_depth} ({' -> '.join([*chain, agent])})")
    if agent in chain:
        return (f"cycle: agent {agent} is already in the chain of callers "
                f"({' -> '.join([*chain, agent])})")
    return None


def choose_piece_agent(*, snapshot: ItemSnapshot, stage_name: str, named: str,
                       chain: Sequence[str],
                       addon_connected: Mapping[str, AddonConnection]
                       | Callable[[str], AddonConnection]) -> Pick:
    """Choose the agent of a piece as a stage's (DESIGN.md, Rules: agent choice), the
    caller's named agent first: named by the caller → the stage's agents → the workspace's
    default agent → the first enabled agent by name. Agents in ``chain`` are never picked.

    Args:
        snapshot: the item's snapshot.
        stage_name: the caller's stage.
        named: the agent the caller asked for.
        chain: the callers' agents (skipped with :data:`WHY_IN_CHAIN`).
        addon_connected: as :func:`~bees_cli.agents.selection.choose_agent` takes it.

    Returns:
        The :class:`Pick` (``agent`` None when none is usable, with the reasons).
    """
    # here: the names and folders above are read without the workspace's models (bees
    # checkpoint verify, issue 29 point 3)
    from bees_cli.agents.eligibility import find_stage
    from bees_cli.agents.selection import REASON_CALLER, Pick, Skipped, choose_agent
    from bees_cli.why import Reason, SkippedAgent

    stage = find_stage(snapshot, stage_name).model_copy(update={"kind": "work"})
    usable = {name: agent for name, agent in snapshot.agents.items() if name not in chain}
    pick = choose_agent(process=snapshot.process_name, stage=stage, item_agents=[named],
                        default_agent=snapshot.default_agent, agents=usable,
                        addon_connected=addon_connected, reviewed_by=None)
    skipped = tuple(Skipped(s.agent, WHY_IN_CHAIN) if s.agent in chain else s
                    for s in pick.skipped)
    reason = REASON_CALLER if pick.agent == named and pick.agent is not None else pick.reason
    why = None
    if pick.agent is None:
        detail = "; ".join(f"{s.agent} {s.why}" for s in skipped)
        reason = f"no enabled agent for a piece of {stage_name}: {detail}"
        why = Reason(code="no_agent_for_piece", stage=stage_name, skipped=[
            SkippedAgent(agent=s.agent, why="in_chain") if s.agent in chain else s
            for s in (pick.why.skipped or [] if pick.why is not None else [])])
        if why.words() != reason:  # no agent looked at: the words have no code
            why = Reason(code="other", text=reason)
    return Pick(agent=pick.agent, reason=reason, skipped=skipped, why=why)


def task_text(task: str, data: Any, chain: Sequence[str]) -> str:
    """Return the task as a piece's agent reads it: who handed it out, the task, the input.

    Args:
        task: what the caller asked.
        data: the caller's input object (JSON value; ``{}`` when none).
        chain: the callers' agents, the caller last.
    """
    lines = [f"A piece of work handed to you by agent {chain[-1] if chain else '?'}: {task}"]
    if data not in ({}, None):
        lines.append("Input (JSON): " + json.dumps(data, sort_keys=True, ensure_ascii=False))
    lines.append("Work in your own folder; your final answer (and the files you write there) "
                 "go back to the caller.")
    return "\n".join(lines)


def check_piece(*, snapshot: ItemSnapshot, stage_name: str, named: str,
                chain: Sequence[str]) -> Eligibility:
    """Check whether a piece can start here now, with a stage's checks (DESIGN.md, Rules:
    eligibility): every folder the item reads is linked here, and an agent is usable
    (:func:`choose_piece_agent`, add-on connections checked live). Writes nothing.

    Returns:
        The :class:`~bees_cli.agents.eligibility.Eligibility` (its ``pick`` the piece's).
    """
    from bees_cli.agents.eligibility import Eligibility, connection_check, linked_reads

    folders, whys = linked_reads(snapshot)
    pick = choose_piece_agent(snapshot=snapshot, stage_name=stage_name, named=named,
                              chain=chain, addon_connected=connection_check(snapshot))
    if pick.why is not None:
        whys.append(pick.why)
    return Eligibility(ok=not whys, reasons=tuple(r.words() for r in whys), pick=pick,
                       folders=folders, whys=tuple(whys))


DELEGATE = "delegate"
"""A model agent's built-in tool that hands a piece to another agent (as ``bees delegate``)."""


def delegate_tool(agents: Sequence[str]) -> ToolDef:
    """Return the ``delegate`` tool offered to a model agent: ``agent`` (one of ``agents``),
    ``task`` and an optional ``input`` object; its result is the piece's answer and files."""
    from bees_cli.agents.chat_wire import FunctionDef, ToolDef

    return ToolDef(function=FunctionDef(
        name=DELEGATE,
        description="Hand a piece of your work to another agent and wait for its answer "
                    "(its final text and the files in its folder).",
        parameters={"type": "object", "properties": {
            "agent": {"type": "string", "enum": list(agents),
                      "description": "the agent to hand the piece to"},
            "task": {"type": "string", "description": "what the agent should do"},
            "input": {"type": "object", "description": "data the agent needs (optional)"}},
            "required": ["agent", "task"]}))
