"""The approval gate's whole decision table (bees_cli.gate), without an engine.

Every kind × stage approval × journal × intent × request × answer × in-tools-or-not is
checked against a table written out here on its own: rows with sets of values, exactly one
row matching each combination (DESIGN.md, Rules: approvals; the journal).
"""

from __future__ import annotations

import dataclasses
import itertools
import json

import pytest

from bees_cli.gate import (
    ActionCall,
    Answer,
    Decision,
    Facts,
    Intent,
    Journal,
    Kind,
    Request,
    Verdict,
    decide,
    refusal,
)

ACTION = "mail.send"
ALL_KINDS = {"read", "write", "send", "post", "delete", "pay"}
HELD_KINDS = {"send", "post", "delete", "pay", "gated"}  # written out here, not GATED_KINDS
NOT_READ = ALL_KINDS - {"read"}
APPROVALS = ["required", "none", None]
REQUESTS = set(Request)
ANSWERS = {None, *Answer}
ANY_JOURNAL, ANY_INTENT = set(Journal), set(Intent)
UNDECIDED = {Request.NONE, Request.WAITING}
ENDED = {Request.CANCELLED, Request.RELINQUISHED}

# in tools, kinds, approvals, journal, intent, requests, answers -> verdict
TABLE: list[tuple[set[bool], set[str], set[str | None], set[Journal], set[Intent],
                  set[Request], set[Answer | None], Verdict]] = [
    # outside the agent's tools: refused, whatever else holds
    ({False}, ALL_KINDS, set(APPROVALS), ANY_JOURNAL, ANY_INTENT, REQUESTS, ANSWERS,
     Verdict.REFUSE),
    # read: never journaled nor gated
    ({True}, {"read"}, set(APPROVALS), ANY_JOURNAL, ANY_INTENT, REQUESTS, ANSWERS, Verdict.RUN),
    # it ran here (exit 0): the journal answers, before any intent or person
    ({True}, NOT_READ, set(APPROVALS), {Journal.RAN}, ANY_INTENT, REQUESTS, ANSWERS,
     Verdict.JOURNAL),
    # an intent without a result: a person decides, whatever the kind and approval
    ({True}, NOT_READ, set(APPROVALS), {Journal.NONE}, {Intent.OPEN}, UNDECIDED, ANSWERS,
     Verdict.HOLD_MAY_HAVE_RUN),
    ({True}, NOT_READ, set(APPROVALS), {Journal.NONE}, {Intent.OPEN}, {Request.APPROVED},
     {Answer.RAN}, Verdict.CONFIRM_RAN),
    ({True}, NOT_READ, set(APPROVALS), {Journal.NONE}, {Intent.OPEN}, {Request.APPROVED},
     {None, Answer.AGAIN}, Verdict.RUN),
    ({True}, NOT_READ, set(APPROVALS), {Journal.NONE}, {Intent.OPEN}, {Request.DENIED},
     ANSWERS, Verdict.DENIED),
    ({True}, NOT_READ, set(APPROVALS), {Journal.NONE}, {Intent.OPEN}, ENDED, ANSWERS,
     Verdict.NOT_RUN),
    # not gated: runs
    ({True}, {"write"}, set(APPROVALS), {Journal.NONE}, {Intent.NONE}, REQUESTS, ANSWERS,
     Verdict.RUN),
    ({True}, HELD_KINDS, {"none", None}, {Journal.NONE}, {Intent.NONE}, REQUESTS, ANSWERS,
     Verdict.RUN),
    # gated on an approval stage: as the person decides
    ({True}, HELD_KINDS, {"required"}, {Journal.NONE}, {Intent.NONE}, UNDECIDED, ANSWERS,
     Verdict.HOLD),
    ({True}, HELD_KINDS, {"required"}, {Journal.NONE}, {Intent.NONE}, {Request.APPROVED},
     ANSWERS, Verdict.RUN),
    ({True}, HELD_KINDS, {"required"}, {Journal.NONE}, {Intent.NONE}, {Request.DENIED},
     ANSWERS, Verdict.DENIED),
    ({True}, HELD_KINDS, {"required"}, {Journal.NONE}, {Intent.NONE}, ENDED, ANSWERS,
     Verdict.NOT_RUN),
]

CASES = list(itertools.product([True, False], sorted(ALL_KINDS), APPROVALS, list(Journal),
                               list(Intent), list(Request), [None, *Answer]))


def expected(case: tuple[bool, str, str | None, Journal, Intent, Request,
                         Answer | None]) -> Verdict:
    rows = [row[-1] for row in TABLE if all(value in allowed
                                            for value, allowed in zip(case, row[:-1], strict=True))]
    assert len(rows) == 1, f"{case} matches {len(rows)} rows of the table"
    return rows[0]


def call_of(in_tools: bool, kind: str, approval: str | None) -> ActionCall:
    tools = ("files.read", ACTION) if in_tools else ("files.read",)
    return ActionCall(action=ACTION, agent="writer", tools=tools, kind=Kind(kind),
                      approval=approval)


def test_the_table_covers_every_combination_once() -> None:
    assert len(CASES) == 2 * 6 * 3 * 2 * 2 * 6 * 3 == 2592
    assert {expected(case) for case in CASES} == set(Verdict)


def test_decide_follows_the_table() -> None:
    wrong = []
    for case in CASES:
        in_tools, kind, approval, journal, intent, request, answer = case
        facts = Facts(journal=journal, intent=intent, request=request, answer=answer,
                      who="ann", why="not this week")
        verdict = decide(call_of(in_tools, kind, approval), facts).verdict
        if verdict is not expected(case):
            wrong.append((case, verdict, expected(case)))
    assert wrong == []


def test_a_refusal_names_the_agent_the_action_and_its_tools() -> None:
    call = call_of(False, "write", None)
    assert decide(call, Facts()) == Decision(
        Verdict.REFUSE, "agent writer may not use mail.send: it is not in its tools "
                        "(tools: files.read)")
    assert refusal(ACTION, "writer", ("files.read",)) == decide(call, Facts())
    bare = dataclasses.replace(call, tools=())
    assert decide(bare, Facts()).reason == ("agent writer may not use mail.send: it is not "
                                            "in its tools (tools: none)")
    assert refusal(ACTION, "writer", ("files.read", ACTION)) is None


@pytest.mark.parametrize("intent", list(Intent))
def test_a_denial_names_who_and_why(intent: Intent) -> None:
    facts = Facts(intent=intent, request=Request.DENIED, who="ann", why="not this week")
    assert decide(call_of(True, "pay", "required"), facts) == Decision(
        Verdict.DENIED, "mail.send was denied by ann: not this week")


@pytest.mark.parametrize("request_state", [Request.CANCELLED, Request.RELINQUISHED])
def test_an_ended_item_says_why_the_action_did_not_run(request_state: Request) -> None:
    facts = Facts(request=request_state)
    assert decide(call_of(True, "send", "required"), facts) == Decision(
        Verdict.NOT_RUN, f"mail.send was not run: the item was {request_state.value}")


@pytest.mark.parametrize("verdict_facts", [
    Facts(), Facts(journal=Journal.RAN), Facts(intent=Intent.OPEN),
    Facts(request=Request.APPROVED)])
def test_only_refusals_and_denials_carry_a_reason(verdict_facts: Facts) -> None:
    assert decide(call_of(True, "send", "required"), verdict_facts).reason is None


def test_the_stage_approval_is_compared_by_value() -> None:
    """A stage's ``approval`` read from JSON is an equal string, not the interned constant."""
    required = json.loads('"required"')
    assert decide(call_of(True, "pay", required), Facts()).verdict is Verdict.HOLD


def test_only_read_is_not_journaled() -> None:
    assert {kind.value for kind in Kind if not call_of(True, kind, None).journaled} == {"read"}


def test_the_gate_s_values_are_frozen() -> None:
    for value in (call_of(True, "read", None), Facts(), Decision(Verdict.RUN)):
        with pytest.raises(dataclasses.FrozenInstanceError):
            value.__setattr__("reason", "changed")
