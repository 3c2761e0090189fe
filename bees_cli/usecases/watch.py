"""``bees item watch``: an item's new facts as they happen, then its outcome (issue 28, point 4).

Reads the local record (history, status, each model stage's transcript) every ``poll``
seconds; an item another computer runs (or one relinquished to it) is followed in the
synced shared record, where only its stage and status are known. ``bees item create --wait``
follows an item here too, and ends with the code ``--until-waiting`` would (:data:`EXIT_OF`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from bees_cli.errors import NotFound, WaitTimedOut
from bees_cli.record.local import LocalRecord, OwnedElsewhere
from bees_cli.record.states import Status
from bees_cli.record.views import HistoryEvent, ModelUsage
from bees_cli.usecases.models import Result

if TYPE_CHECKING:
    from bees_cli.usecases.bees import Bees

Outcome = Literal["done", "failed", "cancelled", "lost", "waiting"]
"""How a watch ends: the item is done, failed (or cancelled, or lost: a person must act), or,
with ``until_waiting``, waits for a person (an approval, the review limit)."""

EXIT_OF: dict[Outcome, int] = {"done": 0, "failed": 1, "cancelled": 1, "lost": 1, "waiting": 3}
"""Each outcome's exit code (the exit-code table: ``bees help exit-codes``)."""

_ENDS: dict[Status, Outcome] = {
    Status.DONE: "done", Status.FAILED: "failed", Status.CANCELLED: "cancelled",
    Status.LOST: "lost"}
_WAITS_FOR_A_PERSON = frozenset({Status.WAITING_FOR_APPROVAL, Status.WAITING_FOR_PERSON})


class FactSeen(Result):
    """A new fact of the item's history (stage started, pick and reason, approval asked,
    handover…), as ``bees item show`` has it."""

    kind: Literal["fact"] = "fact"
    item_id: str
    fact: HistoryEvent
    text: str
    """The fact in one line, for people."""


class StatusSeen(Result):
    """The item's stage or status changed (from the local record, or from the shared record
    when ``computer`` names the computer that runs it)."""

    kind: Literal["status"] = "status"
    item_id: str
    stage: str | None
    status: str | None
    wait: str | None = None
    reason: str | None = None
    agent: str | None = None
    computer: str | None = None
    text: str
    """``Draft: running (writer)``; ``Draft, running on maya-laptop``."""


class ModelSeen(Result):
    """A model stage answered one more turn: what it used so far."""

    kind: Literal["model"] = "model"
    item_id: str
    usage: ModelUsage


class WatchEnd(Result):
    """The watch ended: the item's outcome, its status and stage then, and the exit code."""

    kind: Literal["end"] = "end"
    item_id: str
    outcome: Outcome
    stage: str | None
    status: str
    reason: str | None = None
    exit_code: int = Field(ge=0)
    text: str
    """``Send: waiting for approval: mail.send …``, for people."""


Seen = FactSeen | StatusSeen | ModelSeen | WatchEnd
"""One line of a watch."""


class _Look(Result):
    """One read of the record: the item's state and what is new since the last read."""

    item_id: str
    stage: str | None
    status: str | None
    wait: str | None = None
    reason: str | None = None
    agent: str | None = None
    computer: str | None = None
    status_text: str
    facts: list[tuple[int, Any]] = Field(default_factory=list)
    models: list[ModelUsage] = Field(default_factory=list)


def _look(record: LocalRecord, item_id: str, after: int) -> _Look:
    """Read the item (a unique prefix is enough), its facts after seq ``after`` and its model
    usage; an item not here is read from the shared record.

    Raises:
        NotFound, Ambiguous: no such item here nor in the team's shared record.
    """
    from bees_cli.engine.transcript import stage_usage
    from bees_cli.usecases.items import _team_details, describe

    try:
        row = record.item(item_id, with_input=False)
    except (OwnedElsewhere, NotFound):
        team = _team_details(record.path, item_id)
        if team is None:
            raise
        return _Look(item_id=team.id, stage=team.stage, status=team.status,
                     agent=team.agent, computer=team.computer, status_text=team.status_text)
    facts = [(event.seq, event.typed()) for event in record.events(row.id) if event.seq > after]
    if row.status == Status.FREE:  # relinquished here: the team's row says where it went
        team = _team_details(record.path, row.id)
        if team is not None and team.computer:
            return _Look(item_id=row.id, stage=team.stage, status=team.status,
                         agent=team.agent, computer=team.computer,
                         status_text=team.status_text, facts=facts)
    return _Look(item_id=row.id, stage=row.stage, status=str(row.status),
                 wait=None if row.wait is None else str(row.wait), reason=row.reason,
                 agent=row.agent, status_text=describe(row).split(" ", 1)[1], facts=facts,
                 models=stage_usage(row.run_folder))


def outcome_of(status: str | None, *, until_waiting: bool) -> Outcome | None:
    """Return how a watch of an item in ``status`` ends, or None while it goes on.

    Done, failed, cancelled and lost end it (a person must act on the last three); an item
    that waits for a person (an approval, the review limit) ends it only ``until_waiting``:
    otherwise the watch goes on, since a person may answer from another terminal.
    """
    try:
        known = Status(status or "")
    except ValueError:
        return None
    if known in _ENDS:
        return _ENDS[known]
    if until_waiting and known in _WAITS_FOR_A_PERSON:
        return "waiting"
    return None


async def _watch_item(record: Any, item_id: str, *, until_waiting: bool = False,
                      poll: float = 0.5) -> AsyncIterator[Seen]:
    """Yield each new fact of item ``item_id`` as it is recorded, each change of its status
    and each model turn, oldest first (the facts already recorded come first), then one
    :class:`WatchEnd` (instead of the status that ends the watch).

    Args:
        record: the :class:`~bees_cli.record.aio.AsyncRecord` to read.
        item_id: the item, or a unique prefix of its id.
        until_waiting: end also when the item waits for a person (exit 3).
        poll: seconds between two reads of the record.

    Raises:
        NotFound, Ambiguous: no such item (exit 1), or the prefix matches several (exit 2).
    """
    after = 0
    status_seen: tuple[Any, ...] | None = None
    turns: dict[str, int] = {}
    while True:
        look = await record.run(_look, item_id, after)
        item_id = look.item_id
        for seq, fact in look.facts:
            after = seq
            yield FactSeen(item_id=look.item_id, fact=fact, text=fact.render())
        for usage in look.models:
            if turns.get(usage.stage) != usage.turns:
                turns[usage.stage] = usage.turns
                yield ModelSeen(item_id=look.item_id, usage=usage)
        outcome = outcome_of(look.status, until_waiting=until_waiting)
        if outcome is not None:  # the end says the last status itself
            yield WatchEnd(item_id=look.item_id, outcome=outcome, stage=look.stage,
                           status=str(look.status), reason=look.reason,
                           exit_code=EXIT_OF[outcome], text=look.status_text)
            return
        state = (look.stage, look.status, look.reason, look.agent, look.computer)
        if state != status_seen:
            status_seen = state
            yield StatusSeen(item_id=look.item_id, stage=look.stage, status=look.status,
                             wait=look.wait, reason=look.reason, agent=look.agent,
                             computer=look.computer, text=look.status_text)
        await asyncio.sleep(poll)


async def _wait_for_item(bees: Bees, item_id: str, *, poll: float = 0.2,
                        timeout: float | None = None,
                        engine_up: Callable[[], bool] | None = None) -> int:
    """Wait until item ``item_id`` ends or stops for a person, saying each move.

    Says once ``waiting for bees run to start (Ctrl-C to stop)`` when ``bees run`` is not
    up (``engine_up``, default: this computer's worker is running).

    Returns:
        The exit code ``bees item watch --until-waiting`` ends with for the same state
        (:data:`EXIT_OF`): 0 done; 1 failed, cancelled or lost; 3
        waiting for a person (an approval, the review limit).

    Raises:
        WaitTimedOut: ``timeout`` seconds passed first (exit 1, with the item's state).
    """
    from bees_cli.usecases.items import describe

    def worker_up() -> bool:
        return bees.worker_address() is not None

    up = engine_up or worker_up
    deadline = None if timeout is None else time.monotonic() + timeout
    last = ""
    told = False
    while True:
        row = await bees.async_record.item(item_id)
        line = describe(row)
        if line != last:
            bees.say(line)
            last = line
        outcome = outcome_of(row.status, until_waiting=True)
        if outcome is not None:
            return EXIT_OF[outcome]
        if not told and not await asyncio.to_thread(up):
            bees.say("waiting for bees run to start (Ctrl-C to stop)")
        told = True
        if deadline is not None and time.monotonic() >= deadline:
            raise WaitTimedOut(row.id, seconds=timeout or 0, status=str(row.status),
                               stage=row.stage, status_text=row.status_text)
        await asyncio.sleep(poll)


__all__ = ["EXIT_OF", "FactSeen", "ModelSeen", "Outcome", "Seen", "StatusSeen", "WatchEnd",
           "outcome_of"]
