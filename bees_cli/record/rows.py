"""The rows the local record gives back: an item (:class:`ItemRow`), a fact of its history
(:class:`Event`)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bees_cli.record.states import Status, WaitKind, status_text, wait_kind

if TYPE_CHECKING:
    from bees_cli.record.events import EventBase

SHOWN_COLUMNS = ("id", "process", "title", "workspace", "run_folder", "stage", "status",
                 "reason", "agent", "since", "created", "wait", "created_on", "model_retry")
"""The ``items`` columns a command that shows items reads: every one but ``input``."""


@dataclass(frozen=True)
class ItemRow:
    """One work item as the local record holds it (statuses: :mod:`bees_cli.record.local`).

    ``input`` is the JSON of the run's workflow input (snapshot included), kept so
    ``bees run`` can start a pending item; empty in a listing, which does not read it
    (:mod:`bees_cli.record.listing`). ``wait`` says why the item waits: the kind its
    writer stored, else the one its status implies
    (:func:`~bees_cli.record.states.wait_kind`); None when it does not wait, or when a
    ``waiting`` row's writer did not say (rows written before version 2 of the record).
    ``model_retry`` is the model call that waits for its next try or is tried again
    (version 11; :class:`~bees_cli.record.views.ModelRetry` as JSON), beside its ``reason``.
    """

    id: str
    process: str
    title: str
    workspace: str
    run_folder: str
    stage: str | None
    status: Status
    reason: str | None
    agent: str | None
    since: str
    created: str
    input: str = field(default="", repr=False)
    wait: WaitKind | None = None
    created_on: str | None = None
    """The computer that created the item, when another one did and handed it over (version
    7); None: this computer."""
    model_retry: dict[str, Any] | None = None
    """The model call of its stage that waits for its next try, or is tried again (version
    11): ``why``, ``server``, ``try_number``, ``tries``, ``until``, ``error``; None otherwise."""

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> ItemRow:
        """Return the item of one ``items`` row (``status`` and ``wait`` as enum members,
        ``model_retry`` read from its JSON)."""
        data = dict(row)
        data["status"] = Status(data["status"])
        data["wait"] = wait_kind(data["status"], data.get("wait"))
        retry = data.get("model_retry")
        data["model_retry"] = json.loads(retry) if retry else None
        return cls(**data)

    @property
    def status_text(self) -> str:
        """Return the status as users read it (:func:`~bees_cli.record.states.status_text`)."""
        return status_text(self.status, self.reason)

    def to_json(self) -> dict[str, Any]:
        """Return the row as JSON (without the workflow input); ``item_id`` repeats ``id``,
        the name ``bees approvals --json`` uses for the item."""
        return {
            "id": self.id,
            "item_id": self.id,
            "process": self.process,
            "title": self.title,
            "workspace": self.workspace,
            "run_folder": self.run_folder,
            "stage": self.stage,
            "status": str(self.status),
            "status_text": self.status_text,
            "reason": self.reason,
            "wait": None if self.wait is None else str(self.wait),
            "agent": self.agent,
            "since": self.since,
            "created": self.created,
            "created_on": self.created_on,
            "model_retry": self.model_retry,
        }


@dataclass(frozen=True)
class Event:
    """One fact of an item's history as stored: ``kind`` (``pick``, ``stage_started``, …) with
    its ``data`` (a JSON object); ``computer`` names the computer that recorded it when
    another one did and handed the item over (None: this one). :meth:`typed` reads it as its
    model (:mod:`bees_cli.record.events`)."""

    seq: int
    at: str
    kind: str
    stage: str | None
    round: int | None
    data: dict[str, Any]
    computer: str | None = None

    def typed(self) -> EventBase:
        """Return the fact as its typed model (an unknown kind as ``UnknownEvent``)."""
        from bees_cli.record.events import parse_event  # pydantic models: off bees status

        return parse_event(self.kind, self.data, at=self.at, stage=self.stage, round=self.round,
                           computer=self.computer)

    def to_json(self) -> dict[str, Any]:
        """Return the event as ``bees item show --json`` emits it: the typed model's dump
        (``at``, ``kind``, ``stage``, ``round`` and the kind's fields)."""
        return self.typed().to_json()
