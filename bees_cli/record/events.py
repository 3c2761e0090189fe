"""The facts of an item's history, one typed model per kind, each with its one-line rendering.

Writers (the workflow, its activities, ``bees item create``, a schedule, a handover) store
each fact as a row of ``events``: ``kind`` plus a JSON ``data`` object. :func:`parse_event`
reads a row back as a member of :data:`HistoryEvent`, a pydantic union discriminated on
``kind``; ``bees item show`` prints :meth:`EventBase.render` and ``--json`` the models'
dump. Old rows stay readable: fields a model does not know are ignored, missing ones take
their defaults, and a kind this Bees does not know (or a row that does not fit its model)
becomes :class:`UnknownEvent`, shown as it is rather than crashing.

A new kind needs a model here with its own ``render`` (``render`` is abstract: a model
without it cannot be made, which mypy and ``tests/record/test_events.py`` both notice).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AliasChoices,
    Field,
    TypeAdapter,
    ValidationError,
)

from bees_cli.record import events_pieces as pieces
from bees_cli.record.event_base import EventBase, joined, restarts
from bees_cli.record.events_approvals import (
    ActionAnswered,
    ActionRan,
    ApprovalAsked,
    ApprovalCancelled,
    ApprovalRelinquished,
    Approved,
    Denied,
    Resumed,
)
from bees_cli.record.events_pieces import PickData
from bees_cli.record.events_recovery import Lost, Recovered
from bees_cli.record.reasons import ReasonField


class Created(EventBase):
    """The item was recorded here (``bees item create``)."""

    kind: Literal["created"] = "created"

    def render(self) -> str:
        return self.where() + "created"


class Scheduled(EventBase):
    """A schedule's fire made the item."""

    kind: Literal["scheduled"] = "scheduled"
    schedule: str | None = None

    def render(self) -> str:
        return self.where() + f"created by schedule {self.schedule or '?'}"


class Picked(EventBase):
    """Eligibility passed and an agent was chosen for the stage."""

    kind: Literal["pick"] = "pick"
    pick: PickData
    reviewed_by: str | None = None

    def render(self) -> str:
        skipped = "; ".join(f"{s.agent} ({s.why_words()})" for s in self.pick.skipped)
        text = f"picked {self.pick.agent}: {self.pick.words()}"
        return self.where() + text + (f"; skipped {skipped}" if skipped else "")


class Waiting(EventBase):
    """An eligibility check failed; the item waits and checks again every 15 s."""

    kind: Literal["waiting"] = "waiting"
    reasons: list[ReasonField] = Field(default_factory=list)
    pick: PickData | None = None

    def render(self) -> str:
        return self.where() + "waiting: " + "; ".join(r.words() for r in self.reasons)


class Busy(EventBase):
    """The stage's agent is at its cap; the stage waits for a slot."""

    kind: Literal["busy"] = "busy"
    reason: ReasonField
    position: int | None = None

    def render(self) -> str:
        return self.where() + self.reason.words()


class StageStarted(EventBase):
    """An attempt of the stage started (with the review comments it was sent)."""

    kind: Literal["stage_started"] = "stage_started"
    agent: str
    attempt: int
    comments: list[str] = Field(default_factory=list)

    def render(self) -> str:
        sent = f", with review comments: {joined(self.comments)}" if self.comments else ""
        return self.where() + f"started {self.agent} (attempt {self.attempt}){sent}"


class _StageEnd(EventBase):
    """What a stage attempt left: its agent, output folder, logs and exit code."""

    agent: str | None = None
    attempt: int | None = None
    reason: ReasonField | None = None
    verdict: str | None = None
    comments: list[str] = Field(default_factory=list)
    output_dir: str | None = None
    stdout: str | None = None
    stderr: str | None = None
    exit_code: int | None = None
    turns: int | None = None
    """A model stage's model calls."""
    tokens: int | None = None
    """A model stage's tokens, in plus out (read by the shared record's sync)."""
    tokens_in: int | None = None
    tokens_out: int | None = None


class StageFinished(_StageEnd):
    """An attempt of the stage finished (a review: with its verdict and comments)."""

    kind: Literal["stage_finished"] = "stage_finished"

    def render(self) -> str:
        verdict = f", verdict {self.verdict}" if self.verdict else ""
        said = f", comments: {joined(self.comments)}" if self.comments else ""
        return self.where() + f"finished{verdict}{said}; output {self.output_dir}"


class StageFailed(_StageEnd):
    """The stage failed (its agent, a busy wait over 10 minutes, a denial, a relinquish)."""

    kind: Literal["stage_failed"] = "stage_failed"

    def render(self) -> str:
        attempt = f" (attempt {self.attempt})" if self.attempt else ""
        why = self.reason.words() if self.reason else None
        return self.where() + f"failed{attempt}: {why}"


class StageInterrupted(EventBase):
    """An attempt did not end: ``bees run`` stopped or its worker was lost."""

    kind: Literal["stage_interrupted"] = "stage_interrupted"
    agent: str | None = None
    attempt: int
    reason: ReasonField

    def render(self) -> str:
        return self.where() + f"attempt {self.attempt} interrupted: {self.reason.words()}"


class ReviewCheck(EventBase):
    """One of a review stage's ``checks:`` ran before its reviewer: passed, or failed with the
    ``message`` sent back as the change request (issue 26, point 5)."""

    kind: Literal["review_check"] = "review_check"
    check: str
    ok: bool
    message: str | None = None

    def render(self) -> str:
        if self.ok:
            return self.where() + f"check {self.check} passed"
        return self.where() + f"check {self.check} failed: {self.message}"


class ReviewLimit(EventBase):
    """The third request for changes stopped the item for a person (every round's comments)."""

    kind: Literal["review_limit"] = "review_limit"
    rounds: list[list[str]] = Field(default_factory=list)

    def render(self) -> str:
        rounds = "; ".join(f"round {n}: {joined(c) or '(no comments)'}"
                           for n, c in enumerate(self.rounds, start=1))
        return self.where() + (f"stopped for a person after {len(self.rounds)} requests for "
                               f"changes — {rounds}")


class Retried(EventBase):
    """A person retried the stopped stage."""

    kind: Literal["retried"] = "retried"
    who: str
    asked_at: str

    def render(self) -> str:
        return self.where() + f"retried by {self.who} at {self.asked_at}"


class Accepted(EventBase):
    """A person accepted the work past the review limit."""

    kind: Literal["accepted"] = "accepted"
    who: str
    asked_at: str

    def render(self) -> str:
        return self.where() + f"accepted by {self.who} at {self.asked_at}"


class Done(EventBase):
    """The item reached its ``done`` stage."""

    kind: Literal["done"] = "done"

    def render(self) -> str:
        return self.where() + "done"


class CancelAsked(EventBase):
    """A person asked the run to cancel."""

    kind: Literal["cancel_asked"] = "cancel_asked"
    who: str | None = None

    def render(self) -> str:
        return self.where() + "cancel asked" + (f" by {self.who}" if self.who else "")


class Cancelled(EventBase):
    """The item was cancelled."""

    kind: Literal["cancelled"] = "cancelled"
    who: str | None = None

    def render(self) -> str:
        return self.where() + "cancelled" + (f" by {self.who}" if self.who else "")


class Relinquished(EventBase):
    """This computer handed the item over: the checkpoint it wrote and where it restarts."""

    kind: Literal["relinquished"] = "relinquished"
    who: str | None = None
    asked_at: str | None = None
    restart_stages: dict[str, str] = Field(default_factory=dict)
    checkpoint_sha256: str
    files: int | None = None
    total_bytes: int | None = None
    released: bool | None = None

    def render(self) -> str:
        who = f" by {self.who}" if self.who else ""
        return self.where() + (f"relinquished{who}; restarts at "
                               f"{restarts(self.restart_stages)}; checkpoint "
                               f"{self.checkpoint_sha256[:12]} ({self.files} files, "
                               f"{self.total_bytes} bytes)")


class Continued(EventBase):
    """This computer continued an item handed over by another (from its checkpoint)."""

    kind: Literal["continued"] = "continued"
    from_computer: str | None = Field(
        default=None, validation_alias=AliasChoices("from", "from_computer"),
        serialization_alias="from")
    """Stored as ``from``; a writer gives ``from_computer=`` (mypy checks it)."""
    checkpoint_sha256: str
    restart_stages: dict[str, str] = Field(default_factory=dict)
    files: int | None = None
    journal: int | None = None
    pieces: int | None = None
    run: int | None = None
    retired_runner: str | None = None
    """Set when the item was offered back by retiring this runner (handover/takeover.py)."""
    set_aside: str | None = None
    """Where the retired runner's unfinished work was moved in the run folder (relative)."""
    set_aside_files: int | None = None

    def render(self) -> str:
        run = f" as run {self.run}" if self.run is not None else ""
        text = (f"continued here{run} from {self.from_computer or '?'}; "
                f"restarts at {restarts(self.restart_stages)}; checkpoint "
                f"{self.checkpoint_sha256[:12]} ({self.files} files)")
        if self.retired_runner is not None:
            text += f"; offered back by retiring {self.retired_runner}"
            if self.set_aside is not None:
                text += (f": its unfinished work ({self.set_aside_files} files) kept in "
                         f"{self.set_aside}/ of the run folder")
        return self.where() + text


class UnknownEvent(EventBase):
    """A fact this Bees cannot read: a kind it does not know (a newer Bees wrote it), or a
    row that does not fit its kind's model. Kept whole, shown as it is."""

    kind: str
    data: dict[str, Any] = Field(default_factory=dict)

    def render(self) -> str:
        data = json.dumps(self.data, sort_keys=True, ensure_ascii=False)
        return self.where() + f"{self.kind} {data}"

    def stored_data(self) -> dict[str, Any]:
        """Return the ``data`` it was read from, whole (a relayed fact is stored unchanged)."""
        return dict(self.data)


KnownEvent = Annotated[
    Created | Scheduled | Picked | Waiting | Busy | StageStarted | StageFinished | StageFailed
    | StageInterrupted | ReviewCheck | ReviewLimit | Retried | Accepted | ApprovalAsked
    | Approved | Denied
    | ApprovalCancelled | ApprovalRelinquished | Resumed | ActionRan | ActionAnswered | Done
    | CancelAsked | Cancelled | Relinquished | Continued | Recovered | Lost
    | pieces.PieceStarted | pieces.PiecePicked | pieces.PieceWaiting | pieces.PieceFinished
    | pieces.PieceFailed | pieces.PieceStopped,
    Field(discriminator="kind"),
]
"""Every kind of fact this Bees writes, discriminated on ``kind``."""

HistoryEvent = KnownEvent | UnknownEvent
"""One fact of a history as read back: a known kind, or :class:`UnknownEvent`."""

_KNOWN: TypeAdapter[Any] = TypeAdapter(KnownEvent)

KNOWN_MODELS: tuple[type[EventBase], ...] = get_args(get_args(KnownEvent)[0])
"""The model of each known kind, in the order of :data:`KnownEvent`."""

KINDS: frozenset[str] = frozenset(m.model_fields["kind"].default for m in KNOWN_MODELS)
"""The kinds :data:`KnownEvent` reads."""


def parse_event(kind: str, data: dict[str, Any], *, at: str, stage: str | None = None,
                round: int | None = None, computer: str | None = None) -> EventBase:
    """Read one stored fact (an ``events`` row) as its typed model.

    Args:
        kind: the row's ``kind``.
        data: its ``data`` object (decoded JSON).
        at: when it was recorded (UTC ISO 8601).
        stage: the stage it belongs to, or None.
        round: the stage's round, or None.
        computer: the computer that recorded it when another one did (handed over), or None.

    Returns:
        The member of :data:`KnownEvent` for ``kind``; :class:`UnknownEvent` (with ``data``
        kept whole) for a kind this Bees does not know or data that does not fit. Never
        raises for what a row holds.
    """
    if kind in KINDS:
        try:
            event: EventBase = _KNOWN.validate_python(
                {**data, "kind": kind, "at": at, "stage": stage, "round": round,
                 "computer": computer})
            return event
        except ValidationError:
            pass
    return UnknownEvent(kind=kind, at=at, stage=stage, round=round, computer=computer,
                        data=data)


def parse_event_json(item: dict[str, Any]) -> EventBase:
    """Read back one fact as :meth:`EventBase.to_json` emitted it (``item show --json``).

    Args:
        item: the flat JSON object (``kind``, ``at``, ``stage``, ``round``, ``computer`` and
            the kind's fields; an unknown kind's fields under ``data``).

    Returns:
        The typed fact, as :func:`parse_event` would.
    """
    common = ("kind", "at", "stage", "round", "computer")
    fields = {k: v for k, v in item.items() if k not in common}
    kind, at, stage, round_ = (str(item.get("kind")), str(item.get("at")), item.get("stage"),
                               item.get("round"))
    computer = item.get("computer") if isinstance(item.get("computer"), str) else None
    if set(fields) == {"data"} and isinstance(fields["data"], dict):
        # an UnknownEvent's dump (no known model has a field named data)
        return UnknownEvent(kind=kind, at=at, stage=stage, round=round_, computer=computer,
                            data=fields["data"])
    return parse_event(kind, fields, at=at, stage=stage, round=round_, computer=computer)
