"""The closed sets of an item's state: its status, why it waits, and the one way to show them.

Decisions compare members of :class:`Status` and :class:`WaitKind`; the ``reason`` beside a
status is for people only (STYLE.md, habit 18). Both enums are ``StrEnum`` whose values are
the strings the local record has always stored, so ``record.db`` keeps its format and
``Status.RUNNING == "running"``.
"""

from __future__ import annotations

from enum import StrEnum

DECIDE_UPDATE = "bees.decide"
"""Update sent by ``bees approve`` / ``bees deny`` (or by ``bees run`` for a queued decision);
queued here under this name while ``bees run`` is down. Defined here, not only in
:mod:`bees_cli.engine.models` (which re-exports it), so ``bees status`` can look for queued
decisions without importing the engine (issue 29, point 3)."""


class Status(StrEnum):
    """An item's status in the local record (``items.status``) and in the shared record."""

    PENDING = "pending"
    """Recorded, its run not started yet (the engine is not running)."""
    STARTING = "starting"
    """Its run was started (or a person retried), no stage runs yet."""
    WAITING = "waiting"
    """Eligibility failed, its agent is busy, its owner claim is not settled: ``reason`` says
    why, :class:`WaitKind` says which."""
    RUNNING = "running"
    """A stage runs (``reason``, when set: it tries a failed model call again)."""
    WAITING_FOR_APPROVAL = "waiting for approval"
    """A held action or a finished stage waits for a person's approval (``reason``: what)."""
    FAILED = "failed"
    """A stage failed (``reason``); it waits for a person's retry."""
    WAITING_FOR_PERSON = "waiting for a person"
    """Stopped at the review limit (``reason``); a person retries or accepts."""
    DONE = "done"
    """The item reached its ``done`` stage."""
    CANCELLED = "cancelled"
    """A person cancelled it."""
    FREE = "free"
    """Relinquished here (``reason``: ``restarts at STAGE``); another computer may continue it."""
    LOST = "lost"
    """Its run vanished: the engine's database was replaced while the item was under way
    (``reason``: :data:`LOST_TEXT`; ``stage``: where it was). ``bees retry`` starts that stage
    again from the top (issue 12, point 7)."""


class WaitKind(StrEnum):
    """Why an item does not move on its own: what must change before it runs again."""

    ELIGIBILITY = "eligibility"
    """An eligibility check failed (agent, add-on or folder missing here); re-checked every 15 s."""
    BUSY_AGENT = "busy_agent"
    """Its agent is at its cap of concurrent runs; re-checked every 15 s, failed after 10 min."""
    ENGINE_NOT_RUNNING = "engine_not_running"
    """``bees run`` is not running on this computer."""
    OWNED_ELSEWHERE = "owned_elsewhere"
    """Another computer owns the item; it never runs here."""
    CLAIM_PENDING = "claim_pending"
    """The owner claim could not be made yet (Bees Cloud unreachable or erred); tried again."""
    RELEASE_PENDING = "release_pending"
    """Its handover is under way but Bees Cloud could not be reached to release it: the
    handover step is tried again (backing off to every 15 s, no attempt limit) until the
    cloud answers (reason: :data:`RELEASE_WAIT_TEXT`)."""
    APPROVAL = "approval"
    """A person's approval (``bees approve`` / ``bees deny``)."""
    PERSON = "person"
    """A person's retry or accept (a failed stage, the review limit)."""
    MODEL = "model"
    """A model call of its stage waits for its next try: the model's server asked to slow
    down (HTTP 429, its ``Retry-After`` honoured) or could not answer (HTTP 5xx, a timeout);
    the engine tries again by itself (``items.model_retry`` says when and which try)."""


ACTIVE_STATUSES: frozenset[Status] = frozenset({Status.PENDING, Status.STARTING, Status.RUNNING})
"""Statuses that keep ``bees run --exit-when-idle`` running: work is under way or about to be."""

END_STATUSES: frozenset[Status] = frozenset({
    Status.DONE, Status.FAILED, Status.WAITING_FOR_PERSON, Status.WAITING_FOR_APPROVAL,
    Status.CANCELLED, Status.LOST})
"""Statuses where an item stops until a person acts (or forever, for ``done``, ``cancelled``)."""

SLOT_KEEPING_STATUSES: frozenset[Status] = frozenset({
    Status.STARTING, Status.RUNNING, Status.WAITING, Status.WAITING_FOR_APPROVAL})
"""Statuses of items whose slots ``bees run`` keeps when it starts; other items' slots are
freed (their stage ended, failed or was cancelled while no worker was there to say so)."""

IMPLIED_WAITS: dict[Status, WaitKind] = {
    Status.PENDING: WaitKind.ENGINE_NOT_RUNNING,
    Status.WAITING_FOR_APPROVAL: WaitKind.APPROVAL,
    Status.FAILED: WaitKind.PERSON,
    Status.WAITING_FOR_PERSON: WaitKind.PERSON,
    Status.LOST: WaitKind.PERSON,
}
"""The wait kind a status implies by itself; ``waiting`` implies none (its writer says which)."""


def wait_kind(status: Status, stored: str | None) -> WaitKind | None:
    """Return why an item waits: the kind its writer stored, else the one its status implies.

    Args:
        status: the item's status.
        stored: ``items.wait`` (a :class:`WaitKind` value), or None.

    Returns:
        The wait kind, or None for an item that does not wait (or whose writer did not say
        why it waits).
    """
    if stored is not None:
        return WaitKind(stored)
    return IMPLIED_WAITS.get(status)


NOT_RUNNING_TEXT = "the engine is not running (bees run)"
"""What a ``pending`` item shows after ``waiting:``: nothing runs it until ``bees run``."""

LOST_TEXT = "the engine's database was replaced"
"""The reason of a ``lost`` item: the engine no longer has its run."""

RELEASE_WAIT_TEXT = "relinquishing: Bees Cloud unreachable, retrying"
"""The reason of an item whose handover waits for Bees Cloud (:attr:`WaitKind.RELEASE_PENDING`)."""

RUN_STATUSES: frozenset[Status] = frozenset({
    Status.STARTING, Status.RUNNING, Status.WAITING, Status.WAITING_FOR_APPROVAL,
    Status.FAILED, Status.WAITING_FOR_PERSON})
"""Statuses of an item whose run the engine has (or had): a ``waiting`` one only when its
wait is not :data:`NOT_STARTED_WAITS`. The engine missing such a run means it lost it."""

NOT_STARTED_WAITS: frozenset[WaitKind] = frozenset({
    WaitKind.OWNED_ELSEWHERE, WaitKind.CLAIM_PENDING})
"""Waits of an item whose run was never started here (no owner claim yet, or not ours)."""

_WITH_REASON = frozenset({Status.WAITING, Status.FAILED, Status.WAITING_FOR_APPROVAL,
                          Status.LOST, Status.RUNNING})


def status_text(status: str, reason: str | None) -> str:
    """Return an item's status as people read it, the one place that words it.

    ``waiting: REASON``, ``failed: REASON``, ``waiting for approval: WHAT``; ``running``,
    or ``running: retrying model call, try 2 of 5`` while a model call is tried again;
    ``waiting: the engine is not running (bees run)`` for ``pending``;
    ``free, restarts at STAGE`` for a relinquished item; ``lost: the engine's database was
    replaced`` for an item whose run the engine lost; else the status itself.
    A status this Bees does not know (written by a newer one) is shown as it is.

    Args:
        status: the stored status (a :class:`Status` value, or unknown text).
        reason: the stored reason, or None.

    Returns:
        One line of text; used by ``bees status``, ``bees item show`` and the shared record.
    """
    if status in _WITH_REASON and reason:
        return f"{status}: {reason}"
    if status == Status.PENDING:
        return f"waiting: {NOT_RUNNING_TEXT}"
    if status == Status.FREE and reason:
        return f"free, {reason}"
    return str(status)


def parse_status(text: str) -> Status | None:
    """Return the :class:`Status` stored as ``text``, or None for a status this Bees does not
    know (a newer Bees wrote it; it is shown as it is and decides nothing)."""
    try:
        return Status(text)
    except ValueError:
        return None
