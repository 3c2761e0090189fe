"""What ``bees item show --json`` prints of an item of this computer, as typed models.

Its JSON Schema, ``schemas/output/item-show.json``, is generated with the other commands'
by ``python -m bees_cli.cli.json_schemas`` (STYLE.md habit 6).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
)

from bees_cli.agents.selection import PickTier, pick_tier, pick_words
from bees_cli.record.events import EventBase, HistoryEvent, parse_event_json
from bees_cli.record.pieces import Piece
from bees_cli.record.states import Status, WaitKind, status_text
from bees_cli.utc import display_utc, parse_utc

UTC_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"
"""Every time of a ``--json`` document: RFC 3339 UTC to whole seconds, ``Z``."""

TIME_KEYS = frozenset({"at", "asked_at", "decided_at", "ran_at", "interrupted_at", "started",
                       "ended"})
"""The time-valued keys of ``bees item show --json``'s untyped parts (its history, journal,
approvals and pieces, as their writers stored them)."""


def _utc(value: Any) -> Any:
    """Return a time given as text as ``--json`` writes it (other values are left to fail)."""
    return display_utc(parse_utc(value)) if isinstance(value, str) else value


UtcTime = Annotated[str, BeforeValidator(_utc), Field(pattern=UTC_PATTERN)]
"""An instant as ``--json`` prints it: RFC 3339 UTC to whole seconds with ``Z``
(:func:`bees_cli.utc.display_utc`); stored times keep their microseconds."""


def json_times(node: Any) -> Any:
    """Return ``node`` (JSON data) with the value of every :data:`TIME_KEYS` key that is a
    zoned time written as ``--json`` writes times (:data:`UtcTime`); other values as they are.
    """
    if isinstance(node, list):
        return [json_times(value) for value in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in TIME_KEYS and isinstance(value, str):
            try:
                value = display_utc(parse_utc(value))
            except ValueError:
                pass  # not a zoned time: left as its writer stored it
        out[key] = json_times(value)
    return out


class QueuedDecision(BaseModel):
    """A person's decision on what waits for approval, given while ``bees run`` was down:
    kept in the local record, and delivered to the run when ``bees run`` starts (issue 23,
    point 2; DESIGN.md, Rules: approvals).

    ``request_id`` null answers every request of the item that waits; ``answer`` is the
    answer to an action that may already have run (``ran``: record it as run; ``again``:
    run it once more); ``reason`` is a denial's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    decision: Literal["approved", "denied"]
    request_id: int | None
    answer: Literal["ran", "again"] | None = None
    who: str
    at: UtcTime
    reason: str | None = None

    @classmethod
    def of(cls, payload: dict[str, Any]) -> Self:
        """Return the decision of a queued ``bees.decide`` payload (the engine's
        ``DecideInput`` as JSON: ``approve``, ``request_id``, ``who``, ``at``, ``reason``,
        ``answer``)."""
        return cls(decision="approved" if payload.get("approve") else "denied",
                   request_id=payload.get("request_id"), answer=payload.get("answer"),
                   who=str(payload.get("who")), at=str(payload.get("at")),
                   reason=payload.get("reason"))

    def answers(self, request_id: int) -> bool:
        """Tell whether it answers request ``request_id`` of its item."""
        return self.request_id in (None, request_id)

    def words(self, now: datetime, *, coarse: bool = False) -> str:
        """Return it as every text view says it: ``approved by maya@example.com 2m ago:
        delivered when bees run starts``; ``approved (it ran) by …``, ``approved (run it
        again) by …``; a denial's reason in quotes after the age.

        Args:
            now: the clock the age is counted from (UTC).
            coarse: ``just now`` instead of an age in seconds (the app's live part, which is
                swapped only when its markup changes).
        """
        from bees_cli.record.local import human_since

        said: str = self.decision
        if self.answer is not None:
            said += " (it ran)" if self.answer == "ran" else " (run it again)"
        age = human_since(self.at, now)
        if coarse and age.endswith("s ago"):
            age = "just now"
        why = f' ("{self.reason}")' if self.decision == "denied" and self.reason else ""
        return f"{said} by {self.who} {age}{why}: delivered when bees run starts"


def decisions_words(decisions: Sequence[QueuedDecision], now: datetime, *,
                    coarse: bool = False) -> str:
    """Return the words of an item's queued decisions (:meth:`QueuedDecision.words`), ``; ``
    between two."""
    return "; ".join(decision.words(now, coarse=coarse) for decision in decisions)
ModelRetryWhy = Literal["rate_limited", "unavailable", "interrupted"]
"""Why a model call's last try gave no answer: ``rate_limited`` (HTTP 429), ``unavailable``
(HTTP 5xx or 408, a timeout, no connection), ``interrupted`` (its worker stopped mid-call)."""


def clock_words(when: datetime, now: datetime) -> str:
    """Return the local time ``when`` as a person reads it beside ``now``: ``14:05`` on the
    same local day, ``2026-12-02 14:05`` otherwise (both aware; shown in this computer's
    time zone)."""
    local = when.astimezone()
    if local.date() == now.astimezone().date():
        return local.strftime("%H:%M")
    return local.strftime("%Y-%m-%d %H:%M")


class ModelRetry(BaseModel):
    """A model call of the item's stage that waits for its next try, or whose next try runs
    (issue 23, point 7); the engine tries it again by itself, up to ``tries`` in all.

    Written by the model call's activity beside the item's reason, and cleared once the call
    answers (or the stage ends)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    why: ModelRetryWhy
    """Why the last try gave no answer (:data:`ModelRetryWhy`)."""
    server: str
    """The model's server: the host and port of its base URL (``127.0.0.1:8080``)."""
    try_number: int
    """The try that waits (or runs), the first being 1."""
    tries: int | None
    """Tries in all before the stage fails; None: no limit."""
    until: UtcTime | None = None
    """When the next try starts (the server's ``Retry-After``, or the backoff between tries);
    None once it runs."""
    error: str | None = None
    """What the last try got, one line (the server's URL and words, never a key)."""

    def words(self, now: datetime) -> str:
        """Return the reason people read: ``rate limited by 127.0.0.1:8080 until 14:05``
        while a rate-limited call waits, else ``retrying model call, try 3 of 5``.

        Args:
            now: the clock ``until`` is shown beside (aware), for its date.
        """
        if self.why == "rate_limited" and self.until is not None:
            return f"rate limited by {self.server} until {clock_words(parse_utc(self.until), now)}"
        of = f" of {self.tries}" if self.tries else ""
        return f"retrying model call, try {self.try_number}{of}"


class ItemView(BaseModel):
    """One item of the local record as ``--json`` shows it (``ItemRow.to_json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    item_id: str
    process: str
    title: str
    workspace: str
    run_folder: str
    stage: str | None
    status: Status
    reason: str | None
    """Why it waits, failed or is free (``restarts at STAGE``); the text view words the
    status with it (:func:`~bees_cli.record.states.status_text`)."""
    wait: WaitKind | None
    """Why it waits, when its writer said so."""
    agent: str | None
    since: UtcTime
    created: UtcTime
    """When the item was first created (on the computer that created it, its clock)."""
    created_on: str | None
    """The name of the computer that created it (this one, or the one that handed it over)."""
    queued_decisions: list[QueuedDecision] = Field(default_factory=list)
    """Decisions a person gave while ``bees run`` was down, that it delivers when it starts
    (issue 23, point 2); while every request that waited is answered by one, ``wait`` is
    ``engine_not_running``."""
    model_retry: ModelRetry | None = None
    """A model call of its stage that waits for its next try, or is tried again: which try,
    of how many, until when and why (the text view words it in ``reason``)."""


class ModelUsage(BaseModel):
    """What one model stage used, from its transcript (issue 13, point 8)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stage: str
    model: str
    turns: int
    tokens_in: int
    tokens_out: int
    seconds: float
    cost: float | None = None
    """Estimated from the agent's declared prices; None when it declares none."""


class PieceView(Piece):
    """A piece as ``--json`` shows it: its ``pick_reason`` is the tier of agent choice that
    picked its agent (:data:`~bees_cli.agents.selection.PickTier`; the text view words it)."""

    pick_reason: PickTier | None = None

    @field_validator("pick_reason", mode="before")
    @classmethod
    def _tier(cls, value: Any) -> Any:
        """Read a stored reason (``named by the caller``…) as its tier."""
        return pick_tier(value) if isinstance(value, str) else value


class ItemShow(BaseModel):
    """``bees item show --json``: the item, its typed history, its logs, journal, approvals."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    item: ItemView
    history: list[HistoryEvent]
    """Every fact, oldest first (one model per ``kind``)."""
    logs: list[str]
    """Each stage attempt's stdout and stderr files."""
    engine_log: str
    journal: list[dict[str, Any]]
    """Its add-on action runs (the engine's ``JournalEntry`` as JSON)."""
    approvals: list[dict[str, Any]]
    """Every approval request, any status (the engine's ``ApprovalRequest`` as JSON)."""
    models: list[ModelUsage] = Field(default_factory=list)
    """Each model stage's model, turns, tokens in and out, and estimated cost."""
    pieces: list[PieceView] = Field(default_factory=list)
    """Work its agents handed to other agents (issue 14), in the order handed out."""

    @field_validator("journal", "approvals", "pieces", mode="before")
    @classmethod
    def _times(cls, value: Any) -> Any:
        """Write the times of the parts as their writers stored them as every ``--json`` time
        is written (:func:`json_times`)."""
        return json_times(value)

    @field_validator("history", mode="before")
    @classmethod
    def _typed(cls, value: Any) -> Any:
        """Read each fact given as JSON with :func:`parse_event_json` (never fails on one), its
        times as every ``--json`` time (:func:`json_times`)."""
        if not isinstance(value, list):
            return value
        return [parse_event_json(json_times(e)) if isinstance(e, dict) else e for e in value]

    @classmethod
    def of(cls, details: dict[str, Any]) -> Self:
        """Return the view of a use case's item details (``ItemDetails.to_json()``): the
        row's ``id`` is its ``item_id``, and the display text (``since_human``, the row's
        ``status_text``) stays out."""
        data = {key: value for key, value in details.items() if key != "since_human"}
        data["item"] = {key: value for key, value in details["item"].items()
                        if key not in ("id", "status_text")}
        return cls.model_validate(data)

    def events(self) -> list[EventBase]:
        """Return the history as :class:`~bees_cli.record.events.EventBase` models."""
        return list(self.history)

    def waits_for_bees_run(self) -> bool:
        """Tell whether what waited for approval is all answered by decisions queued while
        ``bees run`` was down (:attr:`ItemView.queued_decisions`): it waits for ``bees
        run``, not for a person."""
        return (self.item.status == Status.WAITING_FOR_APPROVAL
                and bool(self.item.queued_decisions)
                and not any(r.get("status") == "waiting" for r in self.approvals))

    def status_words(self, now: datetime, *, coarse: bool = False) -> str:
        """Return the status as ``bees item show`` and the app say it: the status with its
        reason (:func:`~bees_cli.record.states.status_text`), or the queued decisions'
        words (``approved by maya@example.com 2m ago: delivered when bees run starts``)
        while they answer all that waited (issue 23, point 2); ``coarse``: see
        :meth:`QueuedDecision.words`."""
        if self.waits_for_bees_run():
            return decisions_words(self.item.queued_decisions, now, coarse=coarse)
        return status_text(self.item.status, self.item.reason)

    def to_json(self) -> dict[str, Any]:
        """Return the JSON ``bees item show --json`` prints."""
        return self.model_dump(mode="json", by_alias=True)


def piece_tree(pieces: Sequence[Piece]) -> list[str]:
    """Return the pieces as ``bees item show`` draws them: under their stage (and round), each
    piece under the piece that handed it out, with its agent, pick reason, status and what it
    used (tokens or exit code).

    Example line: ``    r1-a1-p1  alpha (named by the caller)  finished  exit 0``.
    """
    lines: list[str] = []
    stages: list[tuple[str, int]] = list(dict.fromkeys((p.stage, p.round) for p in pieces))
    for stage, round_ in stages:
        lines.append(f"  {stage} round {round_}")
        mine = [p for p in pieces if (p.stage, p.round) == (stage, round_)]

        def draw(parent: str | None, depth: int, mine: list[Piece] = mine) -> None:
            for piece in (p for p in mine if p.parent == parent):
                status = str(piece.status) + (f": {piece.reason}" if piece.reason else "")
                lines.append(f"{'  ' * (depth + 1)}{piece.piece}  {piece.agent or piece.named}"
                             f" ({pick_words(piece.pick_reason)})  {status}  "
                             f"{piece.usage()}")
                draw(piece.piece, depth + 1)

        draw(None, 1)
    return lines
