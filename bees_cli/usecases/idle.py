"""When ``bees run --exit-when-idle`` stops, and what ``bees run`` says of the items it leaves.

:mod:`bees_cli.usecases.run` asks these while it runs and on its way out; it re-exports
:func:`is_idle` and :func:`closing_runs`.
"""

from __future__ import annotations

from bees_cli.record.local import ACTIVE_STATUSES, NOT_RUNNING, LocalRecord
from bees_cli.record.states import Status, WaitKind

INTERRUPTED_STATUSES: frozenset[str] = frozenset({"starting", "running"})
"""Statuses of an item whose stage runs: ``bees run`` stopping leaves them waiting."""


def is_idle(record: LocalRecord) -> bool:
    """Return True when no item of this computer is pending, starting or running, and no
    decision waits to be delivered.

    An item waiting for approval (or for a person) is idle: nothing happens to it until a
    person acts, so ``bees run --exit-when-idle`` returns; ``bees approve`` then queues the
    decision and the next ``bees run`` delivers it. An item whose stage was interrupted when
    ``bees run`` stopped (:func:`mark_interrupted`) is not idle: its stage runs again.

    An item waiting for its owner claim because Bees Cloud was unreachable
    (``WaitKind.CLAIM_PENDING``) is not idle either: ``bees run`` tries the claim again
    every 15 s (issue 11, point 5; :func:`claim_wait_line` says so). Nor is an item whose
    handover waits for Bees Cloud to release it (``WaitKind.RELEASE_PENDING``), nor one whose
    model call waits for its next try (``WaitKind.MODEL``: the engine tries it again by
    itself, an hour later if the model's server asks so; issue 23, point 7).
    """
    if record.queued_controls():
        return False
    return not any(row.status in ACTIVE_STATUSES
                   or row.wait in (WaitKind.ENGINE_NOT_RUNNING, WaitKind.CLAIM_PENDING,
                                   WaitKind.RELEASE_PENDING, WaitKind.MODEL)
                   for row in record.items())


CLOSED_STATUSES: frozenset[Status] = frozenset({Status.DONE, Status.CANCELLED, Status.FREE})
"""Statuses of an item whose run has ended in the engine (finished, cancelled, handed over)."""

CLOSING_WAIT = 30.0
"""Seconds ``bees run --exit-when-idle`` waits for runs whose items ended to close in the
engine (their last workflow task) before it stops anyway."""


def closing_runs(record: LocalRecord, open_runs: set[str]) -> list[str]:
    """Return the ids of items that the record shows ended (:data:`CLOSED_STATUSES`) while
    the engine still lists their run open: the run's last workflow task has not been handled
    yet, and a worker that stopped now would leave it open until the next ``bees run``."""
    return sorted(row.id for row in record.items()
                  if row.id in open_runs and row.status in CLOSED_STATUSES)


def claim_wait_line(record: LocalRecord) -> str | None:
    """Return what ``bees run --exit-when-idle`` says while items wait for an owner claim
    that could not reach Bees Cloud (``not stopping: 1 item waits for its owner claim
    (Bees Cloud unreachable); trying again every 15 s``), or None when none waits."""
    from bees_cli.schedules.owners import CLAIM_RETRY

    waiting = sum(row.wait == WaitKind.CLAIM_PENDING for row in record.items())
    if not waiting:
        return None
    items = "1 item waits" if waiting == 1 else f"{waiting} items wait"
    return (f"not stopping: {items} for its owner claim (Bees Cloud unreachable); trying "
            f"again every {CLAIM_RETRY:g} s")


def mark_interrupted(record: LocalRecord) -> int:
    """Say in the local record that the items running here wait for the next ``bees run``
    (``waiting: the engine is not running (bees run)``); return how many.

    Why: a stage interrupted by Ctrl-C would otherwise read ``running`` in ``bees status``
    while nothing runs it. The next ``bees run`` starts the stage again (a new attempt) and
    the history says the earlier attempt was interrupted.
    """
    rows = record.items(statuses=INTERRUPTED_STATUSES)
    for row in rows:
        record.set_state(row.id, status=Status.WAITING, stage=row.stage, reason=NOT_RUNNING,
                         agent=row.agent, wait=WaitKind.ENGINE_NOT_RUNNING,
                         only_if=INTERRUPTED_STATUSES)
    return len(rows)


def idle_line(record: LocalRecord) -> str:
    """Return what ``bees run --exit-when-idle`` says when it stops: ``nothing left to run
    here: 1 item waits for approval (bees approvals)``, naming what waits for a person."""
    rows = record.items()
    approval = sum(r.wait == WaitKind.APPROVAL for r in rows)
    person = sum(r.wait == WaitKind.PERSON for r in rows)
    parts = []
    if approval:
        parts.append(f"{approval} {'item waits' if approval == 1 else 'items wait'} for "
                     "approval (bees approvals)")
    if person:
        parts.append(f"{person} {'item waits' if person == 1 else 'items wait'} for a person "
                     "(bees status)")
    return "nothing left to run here" + (": " + "; ".join(parts) if parts else "") + \
        "; stopping"
