"""Where a work item goes when a stage ends, decided in one pure function.

DESIGN.md, Rules: moving; approvals. When a stage of an item's run ends, or a person answers
an item that waits for one, :func:`next_move` says what the run does next from the run's
state (:class:`RunState`) and what happened (an event): go to a stage, wait for a person's
retry, stop for a person, hold for a person's approval, or end as done. It reads no clock,
record or engine, so every rule is tested directly (tests/rules/test_moves.py) and mutated
(scripts/mutate_rules.sh). :class:`~bees_cli.engine.workflows.ItemWorkflow` carries the
moves out (the activities, the facts, the waits).

The rules, as the run applies them:

1. **A stage that finished moves the item on** to the next stage of the process; the ``done``
   stage ends the run. A work stage's finish uses up the review comments it was given.
2. **A stage with** ``approval: required`` **that finished is held for a person's approval**
   first (unless a person already approved this stage round, e.g. with one of its held
   actions); approved, it moves on as rule 1 or 3 says; denied, it failed (rule 4).
3. **A review that asks for changes sends the item back** to the stage it reviews, as a new
   round with the review's comments. The :data:`~bees_cli.rules.REVIEW_LIMIT`-th request
   (the third) since the last person's answer stops the item for a person instead, with
   :func:`~bees_cli.rules.review_limit_reason`. (A review stage that names no stage under
   review moves on as rule 1.)
4. **A stage that failed** (its agent failed, a busy agent's slot never came, its finish was
   denied, a handover could not be written) **waits for a person's retry**, which starts
   the same stage round again as a new attempt.
5. **An item stopped at the review limit** waits for a person: a retry sends it back to the
   stage under review with the last comments (one more round), an accept moves it past the
   review. Either way the review's count of requests starts again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from bees_cli.rules import review_limit_reason, review_stops


class Phase(Enum):
    """What an item's run is doing; the values are the states the run shows and records."""

    STARTING = "starting"
    WAITING = "waiting"
    RUNNING = "running"
    FAILED = "failed"
    STOPPED = "waiting for a person"
    APPROVAL = "waiting for approval"
    DONE = "done"
    CANCELLED = "cancelled"
    RELINQUISHED = "relinquished"


class StageKind(Enum):
    """A stage's kind (the process's ``kind:``)."""

    WORK = "work"
    REVIEW = "review"
    DONE = "done"


@dataclass(frozen=True)
class Stage:
    """One stage of the process: its ``name``, ``kind``, the stage it ``reviews`` (None: none)
    and whether its finish needs a person's approval (``approval: required``)."""

    name: str
    kind: StageKind
    reviews: str | None = None  # pragma: no mutate
    approval_required: bool = False


@dataclass(frozen=True)
class RunState:
    """The run's state when a stage ended or a person answered.

    ``stages``: the process, in order; ``stage``: the stage that ended (or where the item
    waits); ``round``: its round; ``phase``: what the run does (``STOPPED`` at the review
    limit, ``FAILED`` after a failure, else ``RUNNING``); ``rounds``: stage -> rounds started;
    ``change_requests``: how many times this (review) stage asked for changes since the last
    person's answer, before this event; ``comments``: the review comments the next work
    stage gets; ``finish_approved``: a person approved this stage round's finish.
    """

    stages: tuple[Stage, ...]
    stage: str
    round: int
    phase: Phase = Phase.RUNNING
    rounds: Mapping[str, int] = field(default_factory=dict)
    change_requests: int = 0
    comments: tuple[str, ...] = ()
    finish_approved: bool = False


@dataclass(frozen=True)
class Finished:
    """The stage's agent finished (for a review: it approved, or gave no verdict)."""


@dataclass(frozen=True)
class ChangesRequested:
    """The review stage's agent asked for changes with ``comments``."""

    comments: tuple[str, ...] = ()


@dataclass(frozen=True)
class Failed:
    """The stage failed with ``reason`` (its agent, a busy agent, a denied finish...)."""

    reason: str


@dataclass(frozen=True)
class Retried:
    """A person retried the failed or stopped item."""


@dataclass(frozen=True)
class Accepted:
    """A person accepted the work under review of an item stopped at the review limit."""


Event = Finished | ChangesRequested | Failed | Retried | Accepted
"""What can happen to a run at the end of a stage, or to an item that waits for a person."""


class To(Enum):
    """Where a move takes the run."""

    STAGE = "stage"
    """Run ``stage`` (``again``: the same round as its next attempt; else a new round)."""
    DONE = "done"
    """Reach the ``done`` stage: the run ends."""
    RETRY = "wait for retry"
    """The stage failed: wait for a person's retry."""
    PERSON = "stop for a person"
    """Stopped (the review limit): wait for a person's retry or accept."""
    APPROVAL = "hold for approval"
    """The finish waits for a person's approval."""


REVIEW_LIMIT_CODE = "review_limit"
"""The reason code (and fact kind) of an item stopped at its review limit."""


@dataclass(frozen=True)
class Move:
    """What the run does next (:func:`next_move`).

    ``to``: where; ``stage``: the stage run next (``STAGE``, ``DONE``) or where the item waits;
    ``round``: that stage's round (0 for the done stage); ``again``: the same round as a new
    attempt; ``comments``: the review comments the next work stage gets; ``reason`` and
    ``code``: why it waits or stopped (``code`` :data:`REVIEW_LIMIT_CODE` at the review
    limit).
    """

    to: To
    stage: str
    round: int
    again: bool = False
    comments: tuple[str, ...] = ()
    reason: str | None = None  # pragma: no mutate
    code: str | None = None  # pragma: no mutate


def next_move(state: RunState, event: Event) -> Move:
    """Return what the run does when ``event`` happens in ``state`` (module docstring: rules
    1 to 5; DESIGN.md, Rules: moving, approvals).

    Raises:
        ValueError: the event cannot happen there (a person's answer to an item that does
            not wait for one, changes asked by a work stage, an unknown stage), or the process
            has no stage after the one that finished.
    """
    stage = _stage(state, state.stage)
    if isinstance(event, Failed):
        return Move(To.RETRY, stage.name, state.round, comments=state.comments,
                    reason=event.reason)
    if isinstance(event, Retried | Accepted):
        return _answered(state, stage, event)
    if state.phase is not Phase.RUNNING:
        raise ValueError(f"{stage.name} is not running: it cannot finish")
    if stage.approval_required and not state.finish_approved:
        return Move(To.APPROVAL, stage.name, state.round, comments=state.comments)
    if isinstance(event, ChangesRequested):
        if stage.kind is not StageKind.REVIEW:
            raise ValueError(f"{stage.name} is not a review: it cannot ask for changes")
        if stage.reviews is not None:
            if review_stops(state.change_requests + 1):
                return Move(To.PERSON, stage.name, state.round, comments=event.comments,
                            reason=review_limit_reason(stage.name), code=REVIEW_LIMIT_CODE)
            return _go(state, stage.reviews, event.comments)
    comments = () if stage.kind is StageKind.WORK else state.comments
    return _go(state, _after(state, stage), comments)


def _answered(state: RunState, stage: Stage,
              event: Retried | Accepted) -> Move:  # pragma: no mutate
    """Return the move of a person's retry or accept (rules 4 and 5)."""
    if state.phase is Phase.FAILED and isinstance(event, Retried):
        return Move(To.STAGE, stage.name, state.round, again=True, comments=state.comments)
    if state.phase is not Phase.STOPPED or stage.reviews is None:
        raise ValueError(f"{stage.name} waits for no such answer")
    if isinstance(event, Accepted):
        return _go(state, _after(state, stage), state.comments)
    return _go(state, stage.reviews, state.comments)


def _go(state: RunState, name: str, comments: tuple[str, ...]) -> Move:
    """Return the move to stage ``name`` as its next round (``DONE`` for a done stage)."""
    stage = _stage(state, name)
    if stage.kind is StageKind.DONE:
        return Move(To.DONE, name, 0, comments=comments)
    return Move(To.STAGE, name, state.rounds.get(name, 0) + 1, comments=comments)


def _after(state: RunState, stage: Stage) -> str:
    """Return the name of the stage after ``stage``."""
    if stage is state.stages[-1]:
        raise ValueError(f"the process has no stage after {stage.name}")
    return state.stages[state.stages.index(stage) + 1].name


def _stage(state: RunState, name: str) -> Stage:
    for stage in state.stages:
        if stage.name == name:
            return stage
    raise ValueError(f"the process has no stage {name}")
