"""The ``--json`` contract's base: :class:`Out`, :class:`Part`, :func:`emit`, errors."""

from __future__ import annotations

import json
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from bees_cli.record.states import Status

VERSION: Literal[1] = 1
"""The version of the JSON contract; it grows when a field's meaning changes or one goes."""


DISPLAY_KEYS = frozenset({"id", "since_human", "status_text", "what"})
"""Keys of a use case's row that only the text view reads: display text (``since_human``,
``status_text``, ``what``: it words machine values the document has) or the item id
repeated (``id``)."""


class Out(BaseModel):
    """Base of every ``--json`` document: strict, with the contract's ``version``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1] = VERSION

    def to_json(self) -> dict[str, Any]:
        """Return the document as JSON-ready data."""
        return self.model_dump(mode="json", by_alias=True)


class Part(BaseModel):
    """Base of a typed part inside a document (no ``version`` of its own)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def emit(doc: BaseModel) -> None:
    """Print the document ``doc`` (an :class:`Out`, or :class:`ItemShowOut`) as indented JSON
    on stdout: the one way a ``--json`` document leaves."""
    from bees_cli.cli.pipes import write_stdout

    data = doc.model_dump(mode="json", by_alias=True)
    write_stdout(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


D = TypeVar("D", bound="Out")


def item_out(model: type[D], data: dict[str, Any]) -> D:
    """Return document ``model`` of a use case's outcome whose item id is ``item``, without
    its display text (:data:`DISPLAY_KEYS`: ``bees relinquish``'s ``status_text``)."""
    return model.model_validate({"item_id": data["item"], **{
        k: v for k, v in data.items() if k != "item" and k not in DISPLAY_KEYS}})


class ErrorBody(Part):
    """An error: its stable ``code``, one-line ``message`` and ``hint`` (or null), and
    ``problems`` (an invalid workspace or checkpoint) or ``status`` (Bees Cloud's HTTP
    status) when the error carries them; ``timed_out`` (``item create --wait --timeout``)
    carries the item: ``item_id``, ``item_status`` and ``stage`` as last seen."""

    code: str
    message: str
    hint: str | None
    problems: list[dict[str, Any]] | None = Field(default=None, exclude_if=lambda v: v is None)
    status: int | None = Field(default=None, exclude_if=lambda v: v is None)
    item_id: str | None = Field(default=None, exclude_if=lambda v: v is None,
                                description="The item waited for (``timed_out``).")
    item_status: Status | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="The item's status when the wait gave up (``timed_out``).")
    stage: str | None = Field(default=None, exclude_if=lambda v: v is None,
                              description="The item's stage then (``timed_out``).")


class ErrorOut(Out):
    """Any command's error in JSON mode (its exit code is the table's, ``cli/errors.py``)."""

    error: ErrorBody
