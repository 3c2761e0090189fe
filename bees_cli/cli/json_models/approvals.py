"""``--json`` documents of requests waiting for a person: ``bees approvals``, approve, deny."""

from __future__ import annotations

from typing import Any, Literal

from bees_cli.cli.json_models.base import DISPLAY_KEYS, Out, Part
from bees_cli.record.views import UtcTime


class ApprovalOut(Part):
    """One request waiting for a person (``request_id`` is what ``--action`` takes)."""

    request_id: int
    item_id: str
    title: str
    process: str
    stage: str
    round: int
    action: str | None
    kind: str
    summary: str
    input: str
    digest: str | None = None
    status: str
    asked_at: UtcTime
    interrupted_at: UtcTime | None = None
    """An action that may already have run: when its intent was written, with no result."""


def approval_out(row: dict[str, Any]) -> ApprovalOut:
    """Return one ``bees approvals --json`` row of the use case's row (the request's ``id``
    is ``request_id``; who decided, when and why stay out: it still waits; what waits is
    ``action`` (null: the stage's finish), ``kind``, ``summary`` and ``input``, not the text
    view's one line ``what``)."""
    data = {k: v for k, v in row.items()
            if k not in DISPLAY_KEYS | {"who", "at", "reason", "answer"}}
    return ApprovalOut.model_validate({"request_id": row["id"], **data})


class ApprovalsOut(Out):
    """``bees approvals``."""

    approvals: list[ApprovalOut]


class DecisionOut(Out):
    """``bees approve`` and ``bees deny``: the requests decided now, or ``queued`` for the
    next ``bees run``."""

    item_id: str
    decision: Literal["approved", "denied"]
    who: str
    at: UtcTime
    decided: list[int]
    queued: bool
