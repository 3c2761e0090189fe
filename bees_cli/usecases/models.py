"""What the use cases return: typed results the CLI renders and ``--json`` prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bees_cli.schedules.disagreements import ZoneDisagreement

AgentWhy = Literal["not_declared", "disabled", "under_review", "addons_not_connected"]
"""Why agent choice did not use an agent (:class:`SkippedAgent`)."""
WhyNotHere = Literal["disabled", "no_person", "not_owner"]
"""Why a schedule does not fire on this computer (``bees schedules`` words it)."""


class Result(BaseModel):
    """Base of every use-case result: strict, with ``to_json`` for ``--json`` output."""

    model_config = ConfigDict(extra="forbid")

    def to_json(self) -> dict[str, Any]:
        """Return the result as JSON-ready data."""
        return self.model_dump(mode="json")


class OpenResult(Result):
    """A result whose rows carry record fields beyond the declared ones (kept as they are)."""

    model_config = ConfigDict(extra="allow")


class CreatedItem(Result):
    """A new work item; ``started`` False: recorded as pending until ``bees run`` starts it."""

    id: str
    process: str
    title: str
    run_folder: Path
    started: bool


class StatusWarning(Result):
    """One thing ``bees status`` warns about, as machine values (``warning`` words them all):
    ``bees_run_gone`` (``pid``: killed, it left its file), ``clock_skew`` (``skew_seconds``:
    Bees Cloud's clock minus this one), ``changes_refused`` (``refused``: the server's
    code, ``items``, ``offset_seconds`` or ``owner``), ``team_rows_stale`` (``last_sync``,
    or None: never; ``error``: the last sync's error code, ``cloud_unreachable``…)."""

    code: Literal["bees_run_gone", "clock_skew", "changes_refused", "team_rows_stale"]
    pid: int | None = None
    skew_seconds: float | None = None
    refused: str | None = None
    items: list[str] = []
    offset_seconds: float | None = None
    owner: str | None = None
    last_sync: str | None = None
    error: str | None = None
    messages: list[str] = Field(default=[], exclude=True)
    """The server's message of each of ``items`` (the text view's reason for a code without
    words of its own); not in ``--json``."""
    error_text: str | None = Field(default=None, exclude=True)
    """The last sync's error message (the text view's reason); not in ``--json``."""


class StatusView(Result):
    """``bees status``: this computer's rows, then the team's; the warnings as the text view
    prints them (``warning``, one line each) and as machine values (``warnings``).

    Each row is the record row's JSON plus ``since_human`` (``"2m ago"``).
    """

    rows: list[dict[str, Any]]
    warning: str | None = None
    warnings: list[StatusWarning] = []
    more: int = 0
    """Rows not listed (past the limit; ``--all`` lists them)."""
    held: dict[str, str] = Field(default_factory=dict)
    """Item id → what its approval waits for, without the action's input (``mail.send``,
    ``finish Send``): the text view's status cell."""
    bees_run: bool = False
    """This computer's ``bees run`` is alive (``worker.json`` read once, with the warnings)."""


class TeamItemDetails(Result):
    """``bees item show`` of a team item another computer runs: its row in the shared record
    (as last pulled) and where it runs (issue 11, point 6)."""

    id: str
    process: str | None
    title: str | None
    stage: str | None
    status: str | None
    status_text: str
    """``Draft, running on maya-desktop``."""
    computer: str
    """The computer that runs it."""
    person: str
    agent: str | None
    since: str
    """The origin time of its latest change (that computer's clock, UTC)."""
    team: bool = True


class PersonDone(Result):
    """A person's retry or accept, answered by the run: the stage that starts again."""

    item: str
    stage: str
    who: str
    at: str


class CancelDone(Result):
    """``bees item cancel``: ``requested`` False: cancelled at once (no run to stop);
    ``cancelled`` False: still stopping after the wait."""

    item: str
    requested: bool
    cancelled: bool


class ApprovalRow(OpenResult):
    """One request waiting for approval: the request's fields plus its item's ``title`` and
    ``process`` and ``what`` (one line)."""

    id: int
    item_id: str
    stage: str
    title: str
    process: str
    what: str
    asked_at: str


class DecideDone(Result):
    """An approval or denial: the requests decided now, or ``queued`` for ``bees run``."""

    item: str
    who: str
    at: str
    decided: list[int] | None
    queued: bool
    input: Any = None
    """The corrected input approved instead of the agent's (``bees approve --input``, issue
    26, point 4), or None."""


class ActionOutcome(Result):
    """How ``bees action`` ended: the add-on's exit code and stdout, or the journal's answer;
    ``binary`` says what the result is when it is not text (an MCP tool's media type, or
    ``not UTF-8 text`` for a script's stdout), else None (issue 25, point 6)."""

    exit_code: int
    stdout: str
    from_journal: bool = False
    ran_at: str | None = None
    binary: str | None = None
    edited: str | None = None
    """What a person changed of the input before it ran (``the person changed to: a → b``;
    issue 26, point 4), told to the agent; None: it ran as the agent gave it."""


class Check(OpenResult):
    """One ``bees doctor`` check; ``warning`` True: it did not pass, yet it does not fail the
    doctor (a model server that does not answer: the agent stays eligible)."""

    check: str
    ok: bool
    detail: str
    warning: bool | None = None


class SkippedAgent(Result):
    """An agent agent choice looked at and did not use: ``not_declared``, ``disabled``,
    ``under_review`` (it did the work under review) or ``addons_not_connected`` (``addons``:
    the add-ons of its tools not connected here)."""

    agent: str
    why: AgentWhy
    addons: list[str] = []


class CannotRun(Result):
    """Why a process cannot run here now (DESIGN.md, Rules: eligibility), as machine values:
    ``folder_not_linked`` (``folder``: one it reads; its check says how it resolves) or
    ``no_agent`` (``skipped``: every agent looked at, and why not). ``bees doctor`` words it."""

    code: Literal["folder_not_linked", "no_agent"]
    folder: str | None = None
    skipped: list[SkippedAgent] = []


class ProcessCheck(Result):
    """Whether this computer could run a process's first stage now, and if not, why."""

    process: str
    stage: str
    can_run: bool
    reasons: list[CannotRun]


class DoctorReport(Result):
    """``bees doctor``: ``ok`` when every check passed (processes are reported, not counted)."""

    ok: bool
    checks: list[Check]
    processes: list[ProcessCheck]
    computer: str
    machine_id: str
    person: str | None


class ScheduleRow(Result):
    """One schedule for ``bees schedules``: whether it fires here, its next times in its own
    zone, and this computer's last fires (newest first)."""

    schedule: str
    process: str
    owner: str
    timezone: str
    enabled: bool
    fires_here: bool
    why_not: WhyNotHere | None
    """Why it does not fire here: ``disabled``, ``no_person`` (none signed in here) or
    ``not_owner`` (``owner`` is another person); ``bees schedules`` words it."""
    next: list[str]
    """The next fire instants (UTC, :func:`~bees_cli.utc.format_utc`)."""
    last: list[dict[str, Any]]
    warnings: list[ZoneDisagreement] = []
    """Wall-clock times two of the person's computers placed at two instants (machine
    values; :attr:`~bees_cli.schedules.disagreements.ZoneDisagreement.warning` words one)."""
