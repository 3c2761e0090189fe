"""The story a handover carries: an item's history, when and where it was created, its reviews.

DESIGN.md, "Under faults": a handover "carries the item's whole story (history, picks, review
rounds and comments)". The computer that relinquishes tells it (:func:`tell_story`) into the
checkpoint, whose SHA-256 covers it like any file; the computer that continues writes it into
its own record (:func:`import_story`) before its own facts, so ``bees item show`` there shows
the whole history with the handover as one fact in it.

Each fact keeps the identity it was born with: the machine id of the computer that recorded
it and its key there. A computer stores a fact of another as key ``MACHINE_ID/KEY`` with
``origin`` and ``computer`` set (record version 8), and its own facts as they are; so a story
imported twice, or one that comes back to a computer it passed through, adds each fact once.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

if TYPE_CHECKING:
    from bees_cli.record.local import LocalRecord

NonEmpty = Annotated[str, StringConstraints(min_length=1)]

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)


class StoryEvent(BaseModel):
    """One fact of the item's history, as the record of the computer that recorded it holds it.

    Attributes:
        key: its key on that computer (unique per item there).
        at: when it was recorded (UTC text, that computer's clock).
        kind: the fact's kind (:mod:`bees_cli.record.events`).
        stage: the stage it belongs to, or None.
        round: the stage's round, or None.
        data: the fact's fields (a JSON object).
        machine_id: the machine id of the computer that recorded it.
        computer: that computer's name.
    """

    model_config = _STRICT

    key: NonEmpty
    at: NonEmpty
    kind: NonEmpty
    stage: str | None
    round: int | None
    data: dict[str, Any]
    machine_id: NonEmpty
    computer: NonEmpty


class ReviewRounds(BaseModel):
    """Where the item's rounds and reviews stood at the handover, for the next run's plan.

    Attributes:
        rounds: stage → rounds it ran (the restart stage's unfinished round not counted), so
            the next run numbers on (``Draft round 3`` after two).
        change_requests: review stage → the comments of each request for changes since the
            last person's answer: the count the "third time" rule reads (Rules: moving).
        comments: the review comments the restart stage gets (sent back, not yet worked on).
    """

    model_config = _STRICT

    rounds: dict[NonEmpty, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    change_requests: dict[NonEmpty, list[list[str]]] = Field(default_factory=dict)
    comments: list[str] = Field(default_factory=list)


class Story(BaseModel):
    """An item's story, as a checkpoint carries it (``story`` of format 2).

    Attributes:
        created: when the item was first created (UTC text, the creating computer's clock).
        created_on: the name of the computer that created it.
        run_folder: the run folder on the computer that told the story; paths in the facts
            under it are rebased onto the run folder of the computer that imports it.
        events: every fact of its history, oldest first.
        reviews: its rounds and review count (:class:`ReviewRounds`).
    """

    model_config = _STRICT

    created: NonEmpty
    created_on: NonEmpty
    run_folder: NonEmpty
    events: list[StoryEvent]
    reviews: ReviewRounds


def tell_story(record: LocalRecord, item_id: str, *, machine_id: str, computer: str,
               run_folder: str, reviews: ReviewRounds) -> Story:
    """Return item ``item_id``'s story from this computer's record (for its checkpoint).

    Args:
        record: this computer's local record.
        item_id: the item's full id.
        machine_id: this computer's machine id (the origin of the facts recorded here).
        computer: this computer's name.
        run_folder: the item's run folder here.
        reviews: the rounds and review count the run reached (from the workflow).

    Returns:
        The :class:`Story`: every fact with its original key and origin, oldest first.

    Raises:
        NotFound: no such item here.
    """
    row = record.item(item_id)
    with record._connect() as db:
        rows = db.execute(
            "SELECT key, at, kind, stage, round, data, origin, computer FROM events"
            " WHERE item_id = ? ORDER BY seq", (row.id,)).fetchall()
    events = []
    for each in rows:
        origin, key = each["origin"], each["key"]
        if origin is not None and key.startswith(f"{origin}/"):
            key = key[len(origin) + 1:]
        data = json.loads(each["data"])
        events.append(StoryEvent(
            key=key, at=each["at"], kind=each["kind"], stage=each["stage"],
            round=each["round"], data=data if isinstance(data, dict) else {"value": data},
            machine_id=origin or machine_id, computer=each["computer"] or computer))
    return Story(created=row.created, created_on=row.created_on or computer,
                 run_folder=run_folder, events=events, reviews=reviews)


def _rebase(data: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """Return ``data`` with each top-level path under ``old`` moved under ``new``."""
    old, new = old.rstrip("/"), new.rstrip("/")
    if old == new:
        return data
    out: dict[str, Any] = {}
    for name, value in data.items():
        if isinstance(value, str) and (value == old or value.startswith(old + "/")):
            value = new + value[len(old):]
        out[name] = value
    return out


def import_story(record: LocalRecord, item_id: str, story: Story, *, machine_id: str,
                 computer: str, run_folder: str) -> int:
    """Write ``story`` into this computer's record for item ``item_id``, in one transaction.

    The item keeps its original created time and computer; each fact is added once (see the
    module docstring), in the story's order, after the facts this record has already;
    ``at`` stays the time it was recorded. Paths under the story's run folder (a stage's
    output and log files) are rebased onto ``run_folder``.

    Args:
        record: this computer's local record (the item's row is there already).
        item_id: the item's full id.
        story: the checkpoint's story.
        machine_id: this computer's machine id (its own facts come back as they were).
        computer: this computer's name.
        run_folder: the item's run folder here.

    Returns:
        How many facts were added (0 when every one was here already).
    """
    rows = []
    for event in story.events:
        mine = event.machine_id == machine_id
        key = event.key if mine else f"{event.machine_id}/{event.key}"
        data = _rebase(event.data, story.run_folder, run_folder)
        rows.append((item_id, key, event.at, event.kind, event.stage, event.round,
                     json.dumps(data), None if mine else event.machine_id,
                     None if mine else event.computer))
    from bees_cli.record import storage

    created_on = None if story.created_on == computer else story.created_on
    with record._connect() as db:
        with storage.immediate(db):
            added = 0
            for values in rows:
                added += db.execute(
                    "INSERT OR IGNORE INTO events (item_id, key, at, kind, stage, round, data,"
                    " origin, computer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", values).rowcount
            db.execute("UPDATE items SET created = ?, created_on = ? WHERE id = ?",
                       (story.created, created_on, item_id))
    return added
