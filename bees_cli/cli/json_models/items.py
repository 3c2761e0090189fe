"""``--json`` documents of items: ``bees status``, ``bees item ...``, retry, delegate."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from bees_cli.agents.selection import PickTier, pick_tier
from bees_cli.cli.json_models.base import DISPLAY_KEYS, VERSION, ErrorOut, Out, Part
from bees_cli.cli.json_models.handover import OfferOut
from bees_cli.record.views import ItemShow, ItemView, ModelRetry, QueuedDecision, UtcTime

if TYPE_CHECKING:  # the use cases import httpx: kept off `bees --help` (test_imports)
    from bees_cli.usecases.models import StatusView


class StatusItem(Part):
    """One row of ``bees status``: an item of this computer (``team`` false) or of the team
    in the shared record (``team`` true: ``computer`` and ``person`` say where it runs).

    Machine values only: the text view words ``status`` with ``reason`` (``waiting:
    REASON``), a free item's restart stage is its ``stage``, a team row's place is
    ``computer``."""

    item_id: str
    process: str | None
    title: str | None
    stage: str | None
    status: str | None
    agent: str | None
    since: UtcTime
    team: bool
    workspace: str | None = None
    run_folder: str | None = None
    reason: str | None = None
    wait: str | None = None
    created: UtcTime | None = None
    created_on: str | None = None
    computer: str | None = None
    person: str | None = None
    pieces: int = 0
    """How many of its run's pieces wait or run (issue 14; 0 for a team row)."""
    queued_decisions: list[QueuedDecision] = []
    """Decisions a person gave while ``bees run`` was down, delivered when it starts (issue
    23, point 2); while they answer every request that waited, ``wait`` is
    ``engine_not_running``."""
    model_retry: ModelRetry | None = None
    """A model call of its stage that waits for its next try, or is tried again (the text
    view words it in ``reason``; always null for a team row)."""


class StatusWarningOut(Part):
    """One warning of ``bees status`` as machine values (the text view words it):
    ``bees_run_gone`` (``pid``), ``clock_skew`` (``skew_seconds``: Bees Cloud's clock minus
    this one), ``changes_refused`` (``refused``: the server's code such as ``clock_ahead``
    or ``not_owner``, the ``items``, ``offset_seconds`` or ``owner``), ``team_rows_stale``
    (``last_sync``, null: never; ``error``: the last sync's error code)."""

    code: Literal["bees_run_gone", "clock_skew", "changes_refused", "team_rows_stale"]
    pid: int | None
    skew_seconds: float | None
    refused: str | None
    items: list[str]
    offset_seconds: float | None
    owner: str | None
    last_sync: UtcTime | None
    error: str | None


class StatusOut(Out):
    """``bees status``: the items (the 50 most relevant unless ``--all``), then the warnings
    (``bees run`` gone, clock skew…); ``more`` counts the items not listed."""

    items: list[StatusItem]
    warnings: list[StatusWarningOut]
    more: int = 0


def status_out(view: StatusView) -> StatusOut:
    """Return ``bees status --json`` of the use case's view: each row without its display
    text (:data:`DISPLAY_KEYS`), and the warnings as machine values."""
    items = [StatusItem.model_validate(
        {"team": False, **{k: v for k, v in row.items() if k not in DISPLAY_KEYS}})
        for row in view.rows]
    return StatusOut(items=items, more=view.more, warnings=[
        StatusWarningOut.model_validate(w.to_json()) for w in view.warnings])


class ItemCreateOut(Out):
    """``bees item create``: the new item; with ``--wait``, ``final`` is its row once the wait
    ended (done, failed or waiting for a person)."""

    item_id: str
    process: str
    title: str
    run_folder: str
    started: bool
    final: ItemView | None = None
    offer: OfferOut | None = None
    """With ``--on POOL``: the offer to that pool (the item was released at once, never
    started here)."""


class ItemCreateErrorOut(ErrorOut):
    """``bees item create``'s error: ``item_id`` at the top level, as in its success, so a
    script's ``jq -r .item_id`` finds the item however the command ended (issue 23,
    point 8)."""

    item_id: str | None = Field(description="The item made before the error (a --wait that "
                                "timed out, an engine that refused its start), or null when "
                                "no item was made.")


class TeamItemShow(Out):
    """``bees item show`` of a team item another computer runs (its shared-record row:
    ``stage`` and ``status`` as pushed, ``computer`` and ``person`` where it runs)."""

    item_id: str
    process: str | None
    title: str | None
    stage: str | None
    status: str | None
    computer: str
    person: str
    agent: str | None
    since: UtcTime
    team: Literal[True] = True


class ItemShowOut(ItemShow):
    """``bees item show`` of an item of this computer (:class:`~bees_cli.record.views.ItemShow`
    with the contract's ``version``)."""

    version: Literal[1] = VERSION


class PersonDoneOut(Out):
    """``bees retry`` and ``bees item accept``: the stage that starts again, who asked, when."""

    item_id: str
    stage: str
    who: str
    at: UtcTime


class CancelOut(Out):
    """``bees item cancel``: ``requested`` false: cancelled at once (no run to stop);
    ``cancelled`` false: still stopping after the wait."""

    item_id: str
    requested: bool
    cancelled: bool


class DelegateOut(Out):
    """``bees delegate``: what the piece gave back: which piece and agent (and why that agent),
    its status, final ``text`` and the ``files`` in its ``folder`` (relative paths), and
    whether it was answered from a saved result (``saved``) instead of run again."""

    piece: str
    agent: str | None
    pick_reason: PickTier | None
    """Which tier of agent choice picked ``agent``: ``item``, ``stage``, ``default``,
    ``by_name``, ``caller`` (the agent you named), ``none``."""
    status: str
    text: str
    files: list[str]
    folder: str
    saved: bool = False

    @field_validator("pick_reason", mode="before")
    @classmethod
    def _tier(cls, value: Any) -> Any:
        """Read the piece's stored reason (``named by the caller``…) as its tier."""
        return pick_tier(value) if isinstance(value, str) else value
