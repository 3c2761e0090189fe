"""The base of every history fact (:mod:`bees_cli.record.events`) and the wording they share."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


def _no_default(schema: dict[str, Any]) -> None:
    """Keep ``at`` without a default in ``--json``'s schema: every fact shown has one."""
    schema.pop("default", None)


class EventBase(BaseModel):
    """What every fact has: when (UTC ISO 8601), the stage and round it belongs to, and the
    computer that recorded it when it was not this one."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True,
                              json_schema_serialization_defaults_required=True)

    kind: str
    at: str = Field(default="", json_schema_extra=_no_default)
    """When it was recorded; a fact being written leaves it empty (the record stamps it)."""
    stage: str | None = None
    round: int | None = None
    computer: str | None = None
    """The computer that recorded it, when another one did and handed the item over (its
    story travelled with the run); None: this computer."""

    def where(self) -> str:
        """Return the prefix naming the computer when it is another one (``[maya-laptop] ``)
        and the stage (``Draft: ``, ``Draft round 2: ``), or ``""``."""
        on = f"[{self.computer}] " if self.computer else ""
        if not self.stage:
            return on
        if self.round is not None:
            return on + f"{self.stage} round {self.round}: "
        return on + f"{self.stage}: "

    @abstractmethod
    def render(self) -> str:
        """Return the fact as one line for people (``bees item show``), stage prefix included."""

    def to_json(self) -> dict[str, Any]:
        """Return the fact as ``bees item show --json`` emits it (flat, JSON-safe)."""
        return self.model_dump(mode="json", by_alias=True)

    def stored_data(self) -> dict[str, Any]:
        """Return the ``data`` object of the fact's ``events`` row: the fields its writer set,
        beside ``kind``, ``at``, ``stage``, ``round`` and ``computer`` (their own columns),
        JSON-safe, by alias (``from``). Reasons are stored as codes (:class:`Reason` objects).

        Why only the fields set: a writer that passes the keys the old string-and-dict writer
        passed stores the same bytes, so records and saved histories read alike.
        """
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True,
                               exclude=set(COMMON_FIELDS))


COMMON_FIELDS = ("kind", "at", "stage", "round", "computer")
"""The fields of every fact kept in their own columns of an ``events`` row, not in ``data``."""


def joined(comments: list[str]) -> str:
    """Return comments as one line: ``first | second``."""
    return " | ".join(comments)


def approval_object(action: str | None, summary: str | None) -> str:
    """An approval's object: ``ACTION SUMMARY`` for a held action, ``finish (SUMMARY)``."""
    return f"{action} {summary}" if action else f"finish ({summary})"


def restarts(stages: dict[str, str]) -> str:
    """``Draft`` for the main piece alone, else ``main at Draft, piece-2 at Review``."""
    if list(stages) == ["main"]:
        return stages["main"]
    return ", ".join(f"{piece} at {stage}" for piece, stage in stages.items()) or "?"
