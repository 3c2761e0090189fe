"""The Bees app's view models: typed, display-ready shapes of the use cases' results.

Each builder is a pure function from a use case's result (:mod:`bees_cli.usecases.models`)
to a frozen dataclass the templates read, so tests assert exact values without a browser.
No rule lives here: what an item may do is the use cases' to refuse; these only choose which
buttons are worth offering (issue 17, point 3).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from bees_cli.record.states import Status
from bees_cli.record.views import QueuedDecision, decisions_words
from bees_cli.usecases.models import StatusView
from bees_cli.utc import display_utc, format_utc, parse_utc, utc_now

Show = Literal["all", "mine", "waiting", "failed"]
"""The item list's filters: every item, this computer's, waiting for a person, failed."""

SHOWS: tuple[Show, ...] = ("all", "mine", "waiting", "failed")

Verb = Literal["approve", "deny", "retry", "accept", "cancel", "relinquish", "continue"]
"""A person's action on an item page: each is ``POST /items/ITEM_ID/<verb>``."""

VERBS: tuple[Verb, ...] = ("approve", "deny", "retry", "accept", "cancel", "relinquish",
                           "continue")

WAITING_FOR_ME = frozenset({Status.WAITING_FOR_APPROVAL, Status.WAITING_FOR_PERSON})
"""Statuses in which an item waits for a person's answer (the ``waiting`` filter)."""

FAILED = frozenset({Status.FAILED, Status.LOST})
"""Statuses of an item that stopped on an error (the ``failed`` filter)."""

STATUSES: dict[str, frozenset[Status]] = {"waiting": WAITING_FOR_ME, "failed": FAILED}
"""The statuses each filter lists (read so from the record, before the page is cut)."""

PAGE = 50
"""Rows the item list shows at first, and how many more its "more" link adds (as ``bees
status`` lists 50)."""

MOST = 10_000
"""The most rows one list page shows (``?n=``)."""

OFFERED: dict[str, tuple[Verb, ...]] = {
    Status.PENDING: ("cancel",),
    Status.STARTING: ("cancel", "relinquish"),
    Status.WAITING: ("cancel", "relinquish"),
    Status.RUNNING: ("cancel", "relinquish"),
    Status.WAITING_FOR_APPROVAL: ("approve", "deny", "cancel", "relinquish"),
    Status.FAILED: ("retry", "cancel", "relinquish"),
    Status.LOST: ("retry", "cancel"),
    Status.WAITING_FOR_PERSON: ("retry", "accept", "cancel", "relinquish"),
    Status.FREE: ("continue",),
}
"""The buttons an item of this computer offers, by status (done and cancelled: none)."""


@dataclass(frozen=True)
class ItemRowView:
    """One row of ``/items``: ``<tr data-item-id>`` with its six cells."""

    item_id: str
    title: str
    process: str
    stage: str
    status: str
    """The status word (``running``, ``waiting for approval``...)."""
    detail: str
    """What ``bees status`` says beside the word (``exit 1``, ``mail.send``), or ``""``."""
    agent: str
    where: str
    """The computer that runs it (``-`` when free: nobody runs it)."""
    since: str
    team: bool
    """A team row from the shared record (another computer runs it)."""


@dataclass(frozen=True)
class ItemList:
    """``/items``: the rows under the filter, and the warnings ``bees status`` gives."""

    show: Show
    rows: list[ItemRowView]
    warnings: list[str]
    more: int
    """Rows under the filter not shown (past ``shown``), or only whether there are any
    (``bees status`` asked not to count them: 1 or 2 for some)."""
    shown: int = PAGE
    """How many rows at most this page shows (``?n=``)."""

    @property
    def next(self) -> int:
        """The ``?n=`` of the "more" link: :data:`PAGE` more, at most :data:`MOST`."""
        return min(self.shown + PAGE, MOST)


def since_text(text: str, now: datetime | None = None) -> str:
    """Return when ``text`` (UTC) was, for a live part: ``2026-12-01T10:00:00Z (3m ago)``,
    ``(just now)`` under a minute.

    Why coarse: a live part is swapped only when its markup changes, and a swap moves the
    keyboard's focus; an age in seconds would change it every second.
    """
    from bees_cli.record.local import human_since

    try:
        moment = parse_utc(text)
    except ValueError:
        return text
    age = human_since(text, now or utc_now())
    return f"{display_utc(moment)} ({'just now' if age.endswith('s ago') else age})"


def _where(row: dict[str, Any], here: str) -> str:
    if row.get("team"):
        return str(row.get("computer") or "-")
    return "-" if row.get("status") == Status.FREE else here


def detail(status: str, text: str) -> str:
    """Return what ``text`` (a status as :func:`~bees_cli.record.states.status_text` words
    it) says beside the status word: ``failed: exit 1`` → ``exit 1``, ``free, restarts at
    Draft`` → ``restarts at Draft``; ``""`` when nothing."""
    if text == status:
        return ""
    for joint in (": ", ", "):
        if text.startswith(status + joint):
            return text[len(status + joint):]
    return text


BEES_RUN_DOWN = ("bees run is not running on this computer: its items do not move and "
                 "decisions wait until it starts (`bees run`)")
"""The list's note when this computer's ``bees run`` is not running."""


def item_list(view: StatusView, show: Show, *, here: str, shown: int = PAGE,
              now: datetime | None = None) -> ItemList:
    """Return ``/items`` of ``bees status``'s result under filter ``show``.

    Args:
        view: the result of :meth:`~bees_cli.usecases.bees.Bees.status` (``mine`` already
            applied by the caller for ``show="mine"``).
        show: the filter.
        here: this computer's name (the ``where`` of its own items).
        shown: how many rows at most the page shows (the limit ``view`` was read with).
        now: the clock ages are counted from (default: now).

    The warnings are ``bees status``'s, after :data:`BEES_RUN_DOWN` when ``bees run`` is not
    alive here (``view.bees_run``) and the warnings do not say so already. An item whose
    queued decisions (given while ``bees run`` was down) answer all that waited is said as
    ``bees status`` says it (:meth:`~bees_cli.record.views.QueuedDecision.words`, an age
    under a minute ``just now``) and is not under ``waiting`` (issue 23, point 2).
    """
    rows: list[ItemRowView] = []
    clock = now or utc_now()
    for row in view.rows:
        status = str(row.get("status") or "")
        held = view.held.get(str(row["id"]))
        queued = [QueuedDecision.model_validate(d) for d in row.get("queued_decisions") or []]
        # answered in full while bees run was down: it waits for bees run, not for a person
        answered = bool(queued) and status == Status.WAITING_FOR_APPROVAL and not held
        if show == "waiting" and (status not in WAITING_FOR_ME or answered):
            continue
        if show == "failed" and status not in FAILED:
            continue
        text = str(row.get("status_text") or status)
        if not row.get("team") and status == Status.WAITING_FOR_APPROVAL and held:
            text = f"{status}: {held}"
        elif answered:  # as bees status says it (issue 23, point 2)
            text = f"{status}: {decisions_words(queued, clock, coarse=True)}"
        rows.append(ItemRowView(
            item_id=str(row["id"]), title=str(row.get("title") or "-"),
            process=str(row.get("process") or "-"), stage=str(row.get("stage") or "-"),
            status=status or "-", detail="" if row.get("team") else detail(status, text),
            agent=str(row.get("agent") or "-"),
            where=_where(row, here),
            since=since_text(str(row.get("since") or "-"), clock),
            team=bool(row.get("team"))))
    warnings = view.warning.splitlines() if view.warning else []
    if not view.bees_run and not any(w.code == "bees_run_gone" for w in view.warnings):
        warnings.insert(0, BEES_RUN_DOWN)
    return ItemList(show=show, rows=rows, warnings=warnings, more=view.more, shown=shown)


@dataclass(frozen=True)
class Field_:
    """One key/value of a held action's input (``<dt>``/``<dd>``)."""

    key: str
    value: str


@dataclass(frozen=True)
class HeldView:
    """What waits for a person's approval: a held action with its input shown readably (a
    mail's ``to``, ``subject``, ``body``), or the stage's finish with its output."""

    request: int
    stage: str
    action: str | None
    """``mail.send``; None for the stage's finish."""
    summary: str
    mail: dict[str, str] | None
    """A mail's ``to``, ``subject`` and ``body`` (each as text), or None."""
    fields: list[Field_] = field(default_factory=list)
    """Any other action's input, key by key."""
    raw: str = ""
    """The input as given, when it is not a JSON object."""
    interrupted_at: str | None = None
    """An action that may already have run (interrupted at this time)."""
    output: list[Field_] = field(default_factory=list)
    """A waiting finish: the stage's output files (name, text)."""
    edit: str | None = None
    """A held action call's input as indented JSON, for Edit and approve (issue 26, point
    4); None for a finish, an action that may already have run, or an input not JSON."""


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(value)
    return json.dumps(value, indent=2, ensure_ascii=False)


MAIL_KEYS = ("to", "subject", "body")

RECIPIENT_KEYS = ("to", "cc", "bcc", "recipients", "recipient", "channel", "reply_to")
"""Input keys that name who receives an action's effect: shown first on its card."""


def held_view(request: dict[str, Any], output: list[Field_] | None = None) -> HeldView:
    """Return the view of one waiting approval request (the engine's ``ApprovalRequest`` as
    JSON, from ``bees item show``'s ``approvals``).

    A JSON object input with ``to``, ``subject`` or ``body`` is a mail (the other keys are
    listed after it); any other object is listed key by key; other input is shown as is.
    """
    raw = str(request.get("input") or "")
    mail: dict[str, str] | None = None
    fields: list[Field_] = []
    shown = ""
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        data, shown = None, raw
    if isinstance(data, dict):
        if any(key in data for key in MAIL_KEYS):
            mail = {key: _text(data.get(key, "")) for key in MAIL_KEYS}
        fields = [Field_(str(k), _text(v)) for k, v in data.items()
                  if mail is None or k not in MAIL_KEYS]
        # who receives it first (issue 28, point 5), then the rest as given
        fields.sort(key=lambda f: RECIPIENT_KEYS.index(f.key) if f.key in RECIPIENT_KEYS
                    else len(RECIPIENT_KEYS))
    elif data is not None:
        shown = _text(data)
    edit = None
    if request.get("action") and not request.get("interrupted_at") and not shown:
        edit = json.dumps(data, indent=2, ensure_ascii=False)
    return HeldView(request=int(request["id"]), stage=str(request.get("stage") or "-"),
                    action=request.get("action"), summary=str(request.get("summary") or ""),
                    mail=mail, fields=fields, raw=shown,
                    interrupted_at=request.get("interrupted_at"), output=output or [],
                    edit=edit)


def offered(status: str, *, runs_here: bool, held: bool) -> tuple[Verb, ...]:
    """Return the buttons worth offering for an item in ``status``.

    Args:
        runs_here: this computer holds the item (a team item run elsewhere offers none but
            ``continue`` when it is free).
        held: an approval request waits (approve and deny need one).
    """
    if not runs_here:
        return ("continue",) if status == Status.FREE else ()
    verbs = OFFERED.get(status, ())
    if not held:
        verbs = tuple(v for v in verbs if v not in ("approve", "deny"))
    return verbs


@dataclass(frozen=True)
class ComputerView:
    """One computer on ``/team``: ``<section data-computer>`` with what it runs."""

    computer: str
    person: str
    here: bool
    """This computer (its items from its own record)."""
    heard: str
    """When it was last heard from (``2026-12-01 10:00 UTC (3m ago)``), or for this computer
    whether ``bees run`` runs."""
    under_way: int
    """Its items under way (not ended nor free), listed or not."""
    running: list[ItemRowView]
    """Its items under way (not ended nor free), latest changed first."""


def team_view(here: ComputerView, others: list[Any], *,
              now: datetime | None = None) -> list[ComputerView]:
    """Return ``/team``: this computer first, then every other computer of the team from
    the shared record (:func:`~bees_cli.record.listing.team_computers`), the latest heard
    from first."""
    clock = now or utc_now()
    shown = [here]
    for other in others:
        rows = [ItemRowView(
            item_id=str(r["id"]), title=str(r.get("title") or "-"),
            process=str(r.get("process") or "-"), stage=str(r.get("stage") or "-"),
            status=str(r.get("status") or "-"), detail="", agent=str(r.get("agent") or "-"),
            where=other.computer, since=since_text(str(r.get("since") or "-"), clock),
            team=True) for r in other.active]
        shown.append(ComputerView(
            computer=other.computer, person=other.person, here=False,
            heard=since_text(format_utc(other.last_heard), clock),
            under_way=other.under_way, running=rows))
    return shown
