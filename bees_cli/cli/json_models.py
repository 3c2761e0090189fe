"""What each command prints with ``--json``: one typed model per output (issue 15, point 2).

The contract, for every command: stdout is one JSON object with ``version``
(:data:`VERSION`); lists sit under a named key (``items``, ``approvals``…); an item's id is
always ``item_id``; every time is RFC 3339 UTC with ``Z`` as :func:`bees_cli.utc.format_utc`
writes it; data holds machine values, never display strings (the text view formats them).
An error is ``{"version", "error": {"code", "message", "hint", …}}`` (:class:`ErrorOut`).
The JSON Schemas generated from these models are in ``schemas/output/``
(:mod:`bees_cli.cli.json_schemas`).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from bees_cli.record.fires import FireOutcome
from bees_cli.record.views import ItemShow, ItemView, UtcTime

if TYPE_CHECKING:  # the use cases import httpx: kept off `bees --help` (test_imports)
    from bees_cli.usecases.models import StatusView

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
    data = doc.model_dump(mode="json", by_alias=True)
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


D = TypeVar("D", bound="Out")


def item_out(model: type[D], data: dict[str, Any]) -> D:
    """Return document ``model`` of a use case's outcome whose item id is ``item``, without
    its display text (:data:`DISPLAY_KEYS`: ``bees relinquish``'s ``status_text``)."""
    return model.model_validate({"item_id": data["item"], **{
        k: v for k, v in data.items() if k != "item" and k not in DISPLAY_KEYS}})


class ErrorBody(Part):
    """An error: its stable ``code``, one-line ``message`` and ``hint`` (or null), and
    ``problems`` (an invalid workspace or checkpoint) or ``status`` (Bees Cloud's HTTP
    status) when the error carries them."""

    code: str
    message: str
    hint: str | None
    problems: list[dict[str, Any]] | None = Field(default=None, exclude_if=lambda v: v is None)
    status: int | None = Field(default=None, exclude_if=lambda v: v is None)


class ErrorOut(Out):
    """Any command's error in JSON mode (its exit code is the table's, ``cli/errors.py``)."""

    error: ErrorBody


class WhoamiOut(Out):
    """``bees whoami``."""

    machine_id: str
    computer: str
    person: str | None


class LinkOut(Out):
    """``bees link``: the folder and the absolute directory it now resolves to."""

    folder: str
    path: str


class UnlinkOut(Out):
    """``bees unlink``: the folder whose link of this computer was removed."""

    folder: str


class FolderLink(Part):
    """One declared folder: where it resolves here, whether linked, and why."""

    folder: str
    path: str | None
    linked: bool
    reason: str


class LinksOut(Out):
    """``bees links``."""

    folders: list[FolderLink]


class AddonConnection(Part):
    """One add-on: connected here, or the environment it misses."""

    addon: str
    connected: bool
    missing: list[str]


class AddonsOut(Out):
    """``bees addons``."""

    addons: list[AddonConnection]


class InitOut(Out):
    """``bees init``: the workspace folder and every file written."""

    workspace: str
    files: list[str]


class ValidateOut(Out):
    """``bees validate`` of a valid workspace (an invalid one is an error, exit 2)."""

    ok: Literal[True]
    workspace: str
    name: str
    counts: dict[str, int]
    warnings: list[dict[str, Any]]


class SchemasWriteOut(Out):
    """``bees schemas write``: every schema file written."""

    files: list[str]


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


class StatusOut(Out):
    """``bees status``: the items (the 50 most relevant unless ``--all``), then the warnings
    (``bees run`` gone, clock skew…); ``more`` counts the items not listed."""

    items: list[StatusItem]
    warnings: list[str]
    more: int = 0


def status_out(view: StatusView) -> StatusOut:
    """Return ``bees status --json`` of the use case's view: each row without its display
    text (:data:`DISPLAY_KEYS`), and the warnings as a list."""
    items = [StatusItem.model_validate(
        {"team": False, **{k: v for k, v in row.items() if k not in DISPLAY_KEYS}})
        for row in view.rows]
    return StatusOut(items=items, warnings=(view.warning or "").splitlines(), more=view.more)


class ItemCreateOut(Out):
    """``bees item create``: the new item; with ``--wait``, ``final`` is its row once the wait
    ended (done, failed or waiting for a person)."""

    item_id: str
    process: str
    title: str
    run_folder: str
    started: bool
    final: ItemView | None = None


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


class FireOut(Part):
    """One fire handled on this computer (``local``: the wall-clock time in the schedule's
    zone, no offset)."""

    key: str
    scheduled: UtcTime
    local: str
    handled: UtcTime
    outcome: FireOutcome
    detail: str | None
    """The outcome's detail: the item it ran as, the computer that took it, seconds late…"""
    tries: int


class ScheduleOut(Part):
    """One schedule: fires here or why not, its next instants, this computer's last fires."""

    schedule: str
    process: str
    owner: str
    timezone: str
    enabled: bool
    fires_here: bool
    why_not: str | None
    next: list[UtcTime]
    last: list[FireOut]
    warnings: list[str]


class SchedulesOut(Out):
    """``bees schedules``."""

    schedules: list[ScheduleOut]


def _opt(description: str) -> Any:
    """A field of some checks only: left out of the document when None."""
    return Field(default=None, exclude_if=lambda v: v is None, description=description)


class LostItem(Part):
    """An item whose run the engine lost, and the stage ``bees retry`` starts again."""

    item_id: str
    stage: str | None


class RefusedChange(Part):
    """A change Bees Cloud refused, kept until it can be sent (``code``: ``clock_ahead``
    with ``offset_seconds``, ``not_owner`` with ``owner``…)."""

    item_id: str
    code: str
    message: str
    offset_seconds: float | None
    owner: str | None


class DoctorCheck(Part):
    """One ``bees doctor`` check: its name, ``ok``, and the machine values of its kind (the
    text view words them; a field a check does not have is left out).

    ``engine``: ``address``, ``version``; ``bees run``: ``state``, ``pid``; ``lost items``:
    ``lost``, ``items``, ``hint``; ``cloud``: ``configured``, ``url``, ``url_from``,
    ``token_from``, ``person``, ``team``; ``clock``: ``skew_seconds``, ``measured``;
    ``time zones``: ``tz_version``, ``tz_source``; ``workspace``: ``path``, ``from_env``;
    ``folder NAME``: ``folder``, ``path``, ``reason``; ``add-on NAME``: ``addon``,
    ``missing``; ``shared record``: ``last_sync``; ``refused changes``: ``refused``. A check
    that failed on an error has its ``error`` code, ``message`` and ``hint``."""

    check: str
    ok: bool
    error: str | None = _opt("The error's code when the check failed on one.")
    message: str | None = _opt("The error's one-line message.")
    hint: str | None = _opt("What to do next (lost items: `bees retry ITEM`).")
    address: str | None = _opt("The engine's address.")
    version: str | None = _opt("The engine's Bees version (left out: unknown).")
    state: Literal["running", "starting", "not_running", "stopped_without_cleanup"] | None = (
        _opt("``bees run``'s process: ``stopped_without_cleanup`` after a kill -9 or crash."))
    pid: int | None = _opt("``bees run``'s pid (the live one, or the last one seen).")
    lost: int | None = _opt("How many items are lost.")
    items: list[LostItem] | None = _opt("The lost items.")
    configured: bool | None = _opt("A Bees Cloud is configured on this computer.")
    url: str | None = _opt("Bees Cloud's URL.")
    url_from: str | None = _opt("Where the URL comes from: ``saved`` or ``BEES_CLOUD_URL``.")
    token_from: str | None = _opt("Where the token comes from: ``saved`` or ``BEES_TOKEN``.")
    person: str | None = _opt("Who Bees Cloud says is signed in.")
    team: str | None = _opt("The person's team.")
    skew_seconds: float | None = _opt("Bees Cloud's clock minus this one, seconds.")
    measured: Literal["now", "last_sync"] | None = _opt("When the skew was measured.")
    tz_version: str | None = _opt("The time-zone database's version (left out: unknown).")
    tz_source: str | None = _opt("Where the time-zone database comes from.")
    path: str | None = _opt("The workspace's folder, or where the folder resolves here.")
    from_env: bool | None = _opt("The workspace was found by ``BEES_WORKSPACE``.")
    folder: str | None = _opt("The folder's name.")
    reason: str | None = _opt("How the folder resolves, or why it does not.")
    addon: str | None = _opt("The add-on's name.")
    missing: list[str] | None = _opt("What the add-on misses here (``env GMAIL_TOKEN``…).")
    last_sync: UtcTime | None = _opt("The last sync of the shared record (left out: never).")
    refused: list[RefusedChange] | None = _opt("The changes Bees Cloud refused.")


class ProcessCheck(Part):
    """Whether this computer could run a process's first stage now, and if not, why."""

    process: str
    stage: str
    can_run: bool
    reasons: list[str]


class DoctorOut(Out):
    """``bees doctor``: ``ok`` when every check passed (exit 1 otherwise)."""

    ok: bool
    computer: str
    machine_id: str
    person: str | None
    checks: list[DoctorCheck]
    processes: list[ProcessCheck]


def doctor_out(report: dict[str, Any]) -> DoctorOut:
    """Return ``bees doctor --json`` of the use case's report (``DoctorReport.to_json()``):
    each check without its ``detail``, the text view's line."""
    checks = [{k: v for k, v in check.items() if k != "detail"} for check in report["checks"]]
    return DoctorOut.model_validate({**report, "checks": checks})


class RelinquishOut(Out):
    """``bees relinquish``: the stopped stage, where each piece restarts (the item is free
    and restarts at ``restart_stages["main"]``), the checkpoint."""

    item_id: str
    stage: str | None
    restart_stages: dict[str, str]
    checkpoint: str
    checkpoint_sha256: str
    files: int
    total_bytes: int
    released: bool


class RepairOut(Out):
    """``bees relinquish --repair``: the digest released now and the one held before."""

    item_id: str
    checkpoint: str
    checkpoint_sha256: str
    before: str | None
    restart_stages: dict[str, str]
    released: bool
    changed: bool


class TeamAddOut(Out):
    """``bees cloud team add``: the team, whether this call created it (False: it existed),
    and the server URL or the database URL it was added on (the other is None)."""

    team: str
    created: bool
    server: str | None = None
    database: str | None = None


class PersonRevokeOut(Out):
    """``bees cloud person revoke``: how many tokens of the person were revoked, and the
    server URL or the database URL it was done on (the other is None)."""

    email: str
    team: str
    revoked: int
    server: str | None = None
    database: str | None = None


class DelegateOut(Out):
    """``bees delegate``: what the piece gave back: which piece and agent (and why that agent),
    its status, final ``text`` and the ``files`` in its ``folder`` (relative paths), and
    whether it was answered from a saved result (``saved``) instead of run again."""

    piece: str
    agent: str | None
    pick_reason: str | None
    status: str
    text: str
    files: list[str]
    folder: str
    saved: bool = False


class ContinueOut(Out):
    """``bees continue``: the claimed item, its run folder and the stage it restarts at."""

    item_id: str
    run_folder: str
    stage: str
    checkpoint_sha256: str
    journal: int
    run: int
    started: bool


class CheckpointProblem(Part):
    """One reason a checkpoint is invalid."""

    code: str
    path: str | None
    message: str


class VerifyOut(Out):
    """``bees checkpoint verify`` of a valid checkpoint (an invalid one is the error
    ``checkpoint_invalid`` with its ``problems``, exit 3)."""

    ok: Literal[True]
    sha256: str
    files: int
    total_bytes: int


class CloudStatusOut(Out):
    """``bees cloud status``: reachable, who, the server's clock; ``error`` when it failed."""

    url: str
    reachable: bool
    person: str | None
    team: str | None
    server_time: UtcTime | None
    skew_seconds: float | None
    round_trip_seconds: float | None
    error: ErrorBody | None


class AppOut(Out):
    """``bees app``: its first line, the URL that lets a browser in (it holds the session's
    secret) and the port it listens on (127.0.0.1)."""

    url: str
    port: int


class PersonAddOut(Out):
    """``bees cloud person add``: the new bearer token (shown this once only), and the server
    URL or the database URL it was added on (the other is None)."""

    email: str
    team: str
    token: str
    server: str | None = None
    database: str | None = None
