"""Inputs and outputs of the engine's workflow and activities: one pydantic model each.

They travel through Temporal as JSON (``temporalio.contrib.pydantic``), so their fields are
the engine's wire format: add fields with defaults, never rename, so running items still
replay.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, Field

# the gate's models live in gate_models; models re-exports them (one import path)
from bees_cli.engine.gate_models import STDOUT_KEPT as STDOUT_KEPT
from bees_cli.engine.gate_models import ActionAnswer as ActionAnswer
from bees_cli.engine.gate_models import ActionAsk as ActionAsk
from bees_cli.engine.gate_models import ApprovalRequest as ApprovalRequest
from bees_cli.engine.gate_models import DecideInput as DecideInput
from bees_cli.engine.gate_models import DecisionWait as DecisionWait
from bees_cli.engine.gate_models import JournalEntry as JournalEntry
from bees_cli.engine.gate_models import JournalFound as JournalFound
from bees_cli.engine.gate_models import JournalQuery as JournalQuery
from bees_cli.engine.snapshot import EngineSnapshot
from bees_cli.record.event_base import EventBase
from bees_cli.record.reasons import Reason
from bees_cli.record.states import DECIDE_UPDATE as DECIDE_UPDATE

WORKFLOW_NAME = "bees.item"
"""Temporal workflow type of a work item's run."""

CHECK_ACTIVITY = "bees.check_stage"
RUN_ACTIVITY = "bees.run_stage"
RECORD_ACTIVITY = "bees.record"
SLOT_ACTIVITY = "bees.acquire_slot"
RELEASE_ACTIVITY = "bees.release_slot"
JOURNAL_ACTIVITY = "bees.journal_lookup"
AWAIT_ELIGIBLE_ACTIVITY = "bees.await_eligible"
"""Activity: check eligibility, failing (retryably) until the stage can start here."""
AWAIT_SLOT_ACTIVITY = "bees.await_slot"
REVIEW_CHECKS_ACTIVITY = "bees.review_checks"
"""Activity: run a review stage's ``checks:`` before its reviewer (issue 26, point 5)."""
"""Activity: take a slot of a capped agent, failing (retryably) until one frees or time is up."""

RETRY_UPDATE = "bees.retry"
"""Update sent by ``bees retry``: start the failed (or stopped) stage again from the top."""
ACCEPT_UPDATE = "bees.accept"
"""Update sent by ``bees item accept``: take the work under review as it is, move past it."""
ACTION_UPDATE = "bees.action"
"""Update sent by ``bees action`` before an add-on action runs: may it run? (held, journal…)."""
ACTION_DONE_UPDATE = "bees.action_done"
"""Update sent by ``bees action`` after the add-on ran: journal its result."""
AWAIT_DECISION_UPDATE = "bees.await_decision"
"""Update sent by a model agent's held tool call (in the worker): it returns once a person
decided the held request and the decision is in the local record (:class:`DecisionWait`)."""
STATE_QUERY = "bees.state"
"""Query answered by a run: where the item is (:class:`RunView`); ``bees run`` rebuilds a
lost local record from it. A query adds nothing to the history."""



def task_queue(machine_id: str) -> str:
    """Return this computer's task queue: ``bees-<machine_id>``."""
    return f"bees-{machine_id}"


class ReviewRounds(BaseModel):
    """The rounds and review count a handover carries into the next run (DESIGN.md: a
    handover "carries the item's whole story (history, picks, review rounds and comments)").

    ``rounds``: stage → rounds it ran (the restart stage's unfinished round not counted), so
    the next run numbers on; ``change_requests``: review stage → the comments of each request
    for changes since the last person's answer, which the "third time" rule counts (Rules:
    moving); ``comments``: the review comments the restart stage gets.
    """

    rounds: dict[str, int] = Field(default_factory=dict)
    change_requests: dict[str, list[list[str]]] = Field(default_factory=dict)
    comments: list[str] = Field(default_factory=list)


class ItemInput(BaseModel):
    """Input of the ``bees.item`` workflow: one work item, with the engine's view of its snapshot.

    The workflow id is ``item_id``; ``run_folder`` is the absolute path of the item's run
    folder. ``snapshot_digest`` names the whole snapshot stored beside the local record
    (:mod:`bees_cli.engine.snapshot_store`); None in items made before the store.
    """

    item_id: str
    title: str
    run_folder: str
    snapshot: EngineSnapshot
    snapshot_digest: str | None = None
    state: ItemState | None = None
    """A run continued as new (Temporal suggested it): where the last run of the plan was."""
    start_stage: str | None = None
    """Continued run (handover): the stage to start at, from the top; None: the first."""
    journal: list[JournalEntry] = Field(default_factory=list)
    """Continued run: add-on actions already run, from the checkpoint (answered, not re-run)."""
    run: int = 1
    """Which run of the item this is: 1, then 2 after the first handover…"""
    previous: dict[str, str] = Field(default_factory=dict)
    """Continued run: stage → output folder of the stages before the restart stage that are
    in the run folder (handed to the stages as ``previous``, as without a handover)."""
    attempts: dict[str, int] = Field(default_factory=dict)
    """Continued run: ``"STAGE:ROUND"`` → the first attempt number to use, one after the
    attempts whose logs are in the checkpoint (so their logs stay)."""
    reviews: ReviewRounds | None = None
    """Continued run: the rounds and review count the earlier runs reached (from the
    checkpoint's story); None: a first run, or a checkpoint without a story."""


class CheckInput(BaseModel):
    """Input of ``bees.check_stage`` and ``bees.await_eligible``: check eligibility and choose
    the agent for ``stage``.

    ``round`` counts the stage's runs (1, 2 after a send-back…); ``reviewed_by`` is, on a
    review stage, the agent of the latest round of the stage under review. The activity loads
    the item's snapshot by ``snapshot_digest`` (None: from the item's record row).
    """

    item_id: str
    stage: str
    round: int
    reviewed_by: str | None = None
    snapshot_digest: str | None = None


class ChecksInput(BaseModel):
    """Input of ``bees.review_checks``: the review ``stage`` and ``round`` of the item whose
    run folder the checks look at."""

    item_id: str
    run_folder: str
    stage: str
    round: int
    snapshot_digest: str | None = None


class ChecksOutput(BaseModel):
    """Output of ``bees.review_checks``: ``ok`` when every check passed, else the failed
    checks' messages as the change request's ``comments``."""

    ok: bool
    comments: list[str] = Field(default_factory=list)


class CheckOutput(BaseModel):
    """Output of ``bees.check_stage``: ``ok`` with the chosen ``agent``, or the ``reasons`` to wait.

    ``folders`` maps each folder the stage reads to its path here.
    """

    ok: bool
    reasons: list[str] = Field(default_factory=list)
    agent: str | None = None
    pick: dict[str, Any] | None = None
    folders: dict[str, str] = Field(default_factory=dict)


class StageInput(BaseModel):
    """Input of ``bees.run_stage``: run ``agent`` on ``stage`` of the item.

    ``previous`` maps each earlier stage to its output folder; ``comments`` are the review
    comments sent back to this work stage (empty on a first round). ``attempt_base`` is the
    attempt number of the activity's first try: a person's retry starts a new base, a lost
    worker's retry adds one (attempt = base + activity attempt - 1).
    """

    item_id: str
    title: str
    run_folder: str
    stage: str
    round: int
    agent: str
    folders: dict[str, str] = Field(default_factory=dict)
    previous: dict[str, str] = Field(default_factory=dict)
    comments: list[str] = Field(default_factory=list)
    snapshot_digest: str | None = None
    attempt_base: int = 1
    piece: str | None = None
    """A piece's name (issue 14): the agent works in ``RUN/STAGE/pieces/PIECE``, not the
    stage's folder; None: the stage itself."""
    task: str | None = None
    """A piece's task as its agent reads it (who handed it out, the task, the input)."""


class StageOutput(BaseModel):
    """Output of ``bees.run_stage``: ``ok`` (exit 0), or the ``reason`` it failed (``why``:
    as its code); a review stage's ``verdict`` (``approve`` or ``changes_requested``) with
    its ``comments``."""

    ok: bool
    reason: str | None = None
    verdict: str | None = None
    comments: list[str] = Field(default_factory=list)
    output_dir: str
    stdout_path: str | None = None
    stderr_path: str | None = None
    exit_code: int | None = None
    attempt: int = 1
    tokens_in: int = 0
    tokens_out: int = 0
    """A model agent's tokens in (prompt) and out (completion), summed over its calls."""
    why: Reason | None = None
    """``reason`` as its code and values, handed over by whoever failed the stage (the
    runner, the model loop, a denied finish; issue 24, point 3). None in an output an older
    history carries: its ``reason`` is then read back (``read_reason``)."""


class RecordInput(BaseModel):
    """Input of ``bees.record``: set the item's state in the local record and add one fact.

    ``status`` is a local-record status (``done``, ``failed``, ``waiting for a person``,
    ``running``…), or None to leave the state alone; ``key`` makes the fact idempotent across
    activity retries. ``approval`` (an :class:`ApprovalRequest` as JSON) is written to the
    record's approvals; ``journal`` (a :class:`JournalEntry` as JSON) to its journal.
    """

    item_id: str
    status: str | None
    stage: str | None = None
    reason: str | None = None
    agent: str | None = None
    key: str
    kind: str
    round: int | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    approval: dict[str, Any] | None = None
    journal: dict[str, Any] | None = None

    @classmethod
    def of(cls, fact: EventBase, *, item_id: str, key: str, status: str | None,
           reason: str | None = None, agent: str | None = None,
           approval: dict[str, Any] | None = None,
           journal: dict[str, Any] | None = None) -> Self:
        """Return the input that stores ``fact`` (a model of :mod:`bees_cli.record.events`)
        and sets the item's state: the one place a workflow's fact becomes ``kind`` and
        ``data`` (issue 24, point 3: writers build the model, so mypy catches a wrong key).

        ``stage`` and ``round`` are the fact's; ``data`` is
        :meth:`~bees_cli.record.event_base.EventBase.stored_data` (the fields the writer
        set, reasons as codes), the shape ``bees.record`` always took, so the activity input
        in a history keeps its shape. ``reason`` is the item's status reason (a sentence for
        people, stored on the item row), apart from the fact's own.
        """
        return cls(item_id=item_id, status=status, stage=fact.stage, round=fact.round,
                   reason=reason, agent=agent, key=key, kind=fact.kind,
                   data=fact.stored_data(), approval=approval, journal=journal)


class PersonInput(BaseModel):
    """A person's retry or accept: ``who`` (the signed-in person, else the OS user) and
    ``at`` (UTC ISO 8601, the time they asked)."""

    who: str
    at: str


class SlotInput(BaseModel):
    """Input of ``bees.acquire_slot`` and ``bees.await_slot``: item ``item_id`` asks a slot of
    ``agent`` for ``stage`` (its ``round``), which runs at most ``cap`` stages at once on this
    computer (``max_concurrent_runs``)."""

    item_id: str
    stage: str
    agent: str
    cap: int
    round: int | None = None


class SlotOutput(BaseModel):
    """Output of ``bees.acquire_slot``: ``granted``, or the ``reason`` to wait
    (``"waiting for agent writer: 2 of 2 busy (items A, B)"``) and the 1-based ``position``
    among the waiters of the agent; ``why`` is that reason as its code (``agent_busy``, the
    agent, slots taken, cap, items, position), None from a Bees before issue 24."""

    granted: bool
    reason: str | None = None
    why: Reason | None = None
    position: int | None = None


class ReleaseInput(BaseModel):
    """Input of ``bees.release_slot``: give back the slot (or queue place) of ``item_id``
    (of ``stage`` only, or every stage when None)."""

    item_id: str
    stage: str | None = None


class ItemState(BaseModel):
    """Where a run of the plan was when it continued as new (Temporal suggested it): the next
    ``stage`` to run (``again``: the same round as a new attempt, after a person's retry) and
    the plan's memory.

    ``rounds``: stage → rounds started; ``attempts``: ``"STAGE:ROUND"`` → next attempt;
    ``done_by``: stage → its agent; ``outputs``: stage → output folder; ``comments``: review
    comments for the next work stage; ``change_requests``: review stage → its requests since
    the last limit; ``requests`` and ``approved`` (``[stage, round]``): approvals;
    ``journal``: action runs; ``facts``: the counter of history keys; ``retried_denials``:
    denied requests a person's retry of their round set aside.
    """

    stage: str
    again: bool = False
    rounds: dict[str, int] = Field(default_factory=dict)
    attempts: dict[str, int] = Field(default_factory=dict)
    done_by: dict[str, str] = Field(default_factory=dict)
    outputs: dict[str, str] = Field(default_factory=dict)
    comments: list[str] = Field(default_factory=list)
    change_requests: dict[str, list[list[str]]] = Field(default_factory=dict)
    requests: list[ApprovalRequest] = Field(default_factory=list)
    approved: list[tuple[str, int]] = Field(default_factory=list)
    journal: list[JournalEntry] = Field(default_factory=list)
    facts: int = 0
    retried_denials: list[int] = Field(default_factory=list)


class RunView(BaseModel):
    """Answer of the ``bees.state`` query: what the run knows of its item, enough to rebuild
    the item's row of the local record (issue 12, point 7).

    ``item`` is the run's input (None before its first task); ``state`` what the run does
    (``starting``, ``waiting``, ``running``, ``failed``, ``waiting for a person``,
    ``waiting for approval``, ``done``, ``cancelled``, ``relinquished``); ``stage``, ``round``
    and ``agent`` where; ``reason`` why it stopped (a failure's reason, what waits for
    approval); ``restart`` the stage a relinquished item restarts at; ``requests`` and
    ``journal`` the approvals and action runs the run holds.
    """

    item: ItemInput | None = None
    state: str
    stage: str | None = None
    round: int = 0
    agent: str | None = None
    reason: str | None = None
    restart: str | None = None
    requests: list[ApprovalRequest] = Field(default_factory=list)
    journal: list[JournalEntry] = Field(default_factory=list)


ItemInput.model_rebuild()
