"""Where an item goes when a stage ends (bees_cli.moves.next_move), without an engine.

A table of (state, event) -> the exact move, written out here on its own (DESIGN.md, Rules:
moving, approvals): the review limit's words are spelled out, not taken from rules.py.
"""

from __future__ import annotations

import dataclasses

import pytest

from bees_cli import rules
from bees_cli.moves import (
    Accepted,
    ChangesRequested,
    Failed,
    Finished,
    Move,
    Phase,
    Retried,
    RunState,
    Stage,
    StageKind,
    To,
    next_move,
)

W, R, D = StageKind.WORK, StageKind.REVIEW, StageKind.DONE
STAGES = (
    Stage("Draft", W),
    Stage("Review", R, reviews="Draft"),
    Stage("Publish", W, approval_required=True),
    Stage("Check", R),  # a review that names no stage under review
    Stage("Gate", R, reviews="Publish", approval_required=True),
    Stage("Done", D),
)
ROUNDS = {"Draft": 2, "Review": 1, "Publish": 4}
OLD = ("old comment",)
NEW = ("tighten the intro", "cite the source")


def state(stage: str, round_: int = 1, phase: Phase = Phase.RUNNING, asked: int = 0,
          approved: bool = False, comments: tuple[str, ...] = OLD,
          stages: tuple[Stage, ...] = STAGES) -> RunState:
    return RunState(stages=stages, stage=stage, round=round_, phase=phase, rounds=ROUNDS,
                    change_requests=asked, comments=comments, finish_approved=approved)


CASES = [
    # a work stage finishes: the next stage, a new round; its comments used up
    ("work finishes", state("Draft", 2), Finished(), Move(To.STAGE, "Review", 2)),
    # a review approves: the next stage; the comments stay
    ("review approves", state("Review", 1), Finished(),
     Move(To.STAGE, "Publish", 5, comments=OLD)),
    ("approved finish moves on", state("Publish", 1, approved=True), Finished(),
     Move(To.STAGE, "Check", 1)),
    # the last stage: done
    ("last stage done", state("Gate", 3, approved=True), Finished(),
     Move(To.DONE, "Done", 0, comments=OLD)),
    ("done after a work stage",
     state("Draft", 1, stages=(Stage("Draft", W), Stage("End", D))), Finished(),
     Move(To.DONE, "End", 0)),
    # a review asks for changes the 1st and 2nd time: back to the reviewed stage, round + 1
    ("1st change request", state("Review", 1, asked=0), ChangesRequested(NEW),
     Move(To.STAGE, "Draft", 3, comments=NEW)),
    ("2nd change request", state("Review", 2, asked=1), ChangesRequested(NEW),
     Move(To.STAGE, "Draft", 3, comments=NEW)),
    # the 3rd: stops for a person with the review-limit reason
    ("3rd change request", state("Review", 3, asked=2), ChangesRequested(NEW),
     Move(To.PERSON, "Review", 3, comments=NEW, reason="Review asked for changes 3 times",
          code="review_limit")),
    # past the limit (a record from before the count reset, say): still stops for a person
    ("4th change request", state("Review", 4, asked=3), ChangesRequested(NEW),
     Move(To.PERSON, "Review", 4, comments=NEW, reason="Review asked for changes 3 times",
          code="review_limit")),
    ("approved 3rd change request", state("Gate", 3, asked=2, approved=True),
     ChangesRequested(NEW),
     Move(To.PERSON, "Gate", 3, comments=NEW, reason="Gate asked for changes 3 times",
          code="review_limit")),
    # a review naming no stage under review moves on, its comments dropped
    ("changes with nothing reviewed", state("Check", 2, asked=5), ChangesRequested(NEW),
     Move(To.STAGE, "Gate", 1, comments=OLD)),
    # a failure waits for a person's retry
    ("work fails", state("Draft", 2), Failed("exit 1"),
     Move(To.RETRY, "Draft", 2, comments=OLD, reason="exit 1")),
    ("review fails", state("Review", 2, asked=1), Failed("busy"),
     Move(To.RETRY, "Review", 2, comments=OLD, reason="busy")),
    ("finish denied", state("Publish", 4, phase=Phase.APPROVAL), Failed("denied"),
     Move(To.RETRY, "Publish", 4, comments=OLD, reason="denied")),
    # a retry of a failed stage: the same stage and round again
    ("retry failed", state("Draft", 2, phase=Phase.FAILED), Retried(),
     Move(To.STAGE, "Draft", 2, again=True, comments=OLD)),
    ("retry failed review", state("Review", 1, phase=Phase.FAILED, asked=2), Retried(),
     Move(To.STAGE, "Review", 1, again=True, comments=OLD)),
    # an item stopped at the review limit: retry goes back to the work; accept moves past
    ("retry stopped", state("Review", 3, phase=Phase.STOPPED, asked=3), Retried(),
     Move(To.STAGE, "Draft", 3, comments=OLD)),
    ("accept stopped", state("Review", 3, phase=Phase.STOPPED, asked=3), Accepted(),
     Move(To.STAGE, "Publish", 5, comments=OLD)),
    ("accept stopped last review", state("Gate", 1, phase=Phase.STOPPED, asked=3), Accepted(),
     Move(To.DONE, "Done", 0, comments=OLD)),
    # an approval-required stage that finished holds for approval, whatever its verdict
    ("finish holds", state("Publish", 4), Finished(),
     Move(To.APPROVAL, "Publish", 4, comments=OLD)),
    ("review finish holds", state("Gate", 2, asked=2), ChangesRequested(NEW),
     Move(To.APPROVAL, "Gate", 2, comments=OLD)),
    ("approved review sends back", state("Gate", 2, asked=1, approved=True),
     ChangesRequested(NEW), Move(To.STAGE, "Publish", 5, comments=NEW)),
    # approval given for another stage's round does not count: only this state's flag
    ("unapproved review approves", state("Gate", 2), Finished(),
     Move(To.APPROVAL, "Gate", 2, comments=OLD)),
]


@pytest.mark.parametrize(("given", "event", "move"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_next_move(given: RunState, event: object, move: Move) -> None:
    assert next_move(given, event) == move  # type: ignore[arg-type]


@pytest.mark.parametrize("limit", [2, 3, 4])
def test_the_request_that_reaches_the_review_limit_stops_whatever_the_limit(
        limit: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # the limit lives in one place (rules.REVIEW_LIMIT): the request before it sends the work
    # back, the one that reaches it stops for a person (with 3 alone, a count of
    # ``asked | 1`` or ``asked << 1`` instead of ``asked + 1`` stops at the same request)
    monkeypatch.setattr(rules, "REVIEW_LIMIT", limit)
    before = next_move(state("Review", asked=limit - 2), ChangesRequested(NEW))
    reached = next_move(state("Review", asked=limit - 1), ChangesRequested(NEW))
    assert (before.to, reached.to) == (To.STAGE, To.PERSON)


REFUSED = [
    ("retry a running stage", state("Draft"), Retried(), "Draft waits for no such answer"),
    ("accept a failed stage", state("Review", phase=Phase.FAILED), Accepted(),
     "Review waits for no such answer"),
    ("retry stopped without review", state("Check", phase=Phase.STOPPED), Retried(),
     "Check waits for no such answer"),
    ("accept a work stage", state("Draft", phase=Phase.STOPPED), Accepted(),
     "Draft waits for no such answer"),
    ("finish a failed stage", state("Draft", phase=Phase.FAILED), Finished(),
     "Draft is not running: it cannot finish"),
    ("finish while stopped", state("Review", phase=Phase.STOPPED), ChangesRequested(NEW),
     "Review is not running: it cannot finish"),
    ("work asks for changes", state("Draft"), ChangesRequested(NEW),
     "Draft is not a review: it cannot ask for changes"),
    ("unknown stage", state("Nope"), Finished(), "the process has no stage Nope"),
    ("nothing after", state("Draft", stages=(Stage("Draft", W),)), Finished(),
     "the process has no stage after Draft"),
]


@pytest.mark.parametrize(("given", "event", "message"), [c[1:] for c in REFUSED],
                         ids=[c[0] for c in REFUSED])
def test_next_move_refuses(given: RunState, event: object, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        next_move(given, event)  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_phases_are_the_states_the_run_shows() -> None:
    assert [phase.value for phase in Phase] == [
        "starting", "waiting", "running", "failed", "waiting for a person",
        "waiting for approval", "done", "cancelled", "relinquished"]


def test_defaults_are_a_fresh_running_round() -> None:
    assert Stage("Draft", W) == Stage("Draft", W, reviews=None, approval_required=False)
    assert RunState(stages=STAGES, stage="Draft", round=1) == RunState(
        stages=STAGES, stage="Draft", round=1, phase=Phase.RUNNING, rounds={},
        change_requests=0, comments=(), finish_approved=False)
    assert Move(To.STAGE, "Draft", 1) == Move(To.STAGE, "Draft", 1, again=False, comments=(),
                                              reason=None, code=None)
    assert ChangesRequested() == ChangesRequested(comments=())


@pytest.mark.parametrize("value", [
    Stage("Draft", W), state("Draft"), Finished(), ChangesRequested(NEW), Failed("x"),
    Retried(), Accepted(), Move(To.DONE, "Done", 0)], ids=lambda value: type(value).__name__)
def test_states_events_and_moves_are_frozen(value: object) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.stage = "Other"  # type: ignore[attr-defined]
