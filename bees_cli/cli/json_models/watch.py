"""``bees item watch --json``: one document per line, each a fact, a status, a model turn or
the end (issue 28, point 4)."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, RootModel, field_validator

from bees_cli.cli.json_models.base import Out
from bees_cli.record.events import parse_event_json
from bees_cli.record.views import HistoryEvent, ModelUsage, json_times


class WatchFactOut(Out):
    """A new fact of the item's history, as ``bees item show --json`` lists it."""

    kind: Literal["fact"]
    item_id: str
    fact: HistoryEvent

    @field_validator("fact", mode="before")
    @classmethod
    def _typed(cls, value: Any) -> Any:
        """Read the fact given as JSON as ``bees item show --json`` reads its history: its
        times as every ``--json`` time (:func:`~bees_cli.record.views.json_times`)."""
        return parse_event_json(json_times(value)) if isinstance(value, dict) else value


class WatchStatusOut(Out):
    """The item's stage or status changed; ``computer``: the computer that runs it, when it
    is followed in the shared record (null: this one)."""

    kind: Literal["status"]
    item_id: str
    stage: str | None
    status: str | None
    wait: str | None
    reason: str | None
    agent: str | None
    computer: str | None


class WatchModelOut(Out):
    """A model stage answered one more turn: its model, turns and tokens so far."""

    kind: Literal["model"]
    item_id: str
    usage: ModelUsage


class WatchEndOut(Out):
    """The last line: the item's outcome and the exit code the command ends with (0 done;
    1 failed, cancelled or lost; 3 waiting for a person, with --until-waiting)."""

    kind: Literal["end"]
    item_id: str
    outcome: Literal["done", "failed", "cancelled", "lost", "waiting"]
    stage: str | None
    status: str
    reason: str | None
    exit_code: int


class ItemWatchOut(RootModel[Annotated[
        WatchFactOut | WatchStatusOut | WatchModelOut | WatchEndOut,
        Field(discriminator="kind")]]):
    """One line of ``bees item watch --json``."""


def watch_line(seen: BaseModel) -> str:
    """Return one use-case line (:mod:`bees_cli.usecases.watch`) as its JSON document on one
    line (its display ``text`` left out), with the final newline."""
    data: dict[str, Any] = {k: v for k, v in seen.model_dump(mode="json").items()
                            if k != "text"}
    doc = ItemWatchOut.model_validate(data)
    return json.dumps(doc.model_dump(mode="json", by_alias=True), ensure_ascii=False) + "\n"
