"""Decisions given while ``bees run`` is down (issue 23, points 1 and 2): the README flow
(``bees run --exit-when-idle``, ``bees approve``/``bees deny``, ``bees run`` again) keeps a
denial and its reason for the retried ask, and shows the queued decision everywhere."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bees_cli.machine.identity import set_identity
from tests.agents.model_server import Answer, serve
from tests.conftest import BeesRunner, run_lines
from tests.engine.conftest import Space
from tests.engine.test_model_loop import model_agent, sent
from tests.engine.test_rules import SEND, action_agent, log_lines, mail_addon

MAYA = "maya@example.com"
REASON = "wrong address: it goes to the board, not the team"
AGE = r"\d+s ago"
"""How long ago the decision was, as the text views say it (the pure views are tested at a
fixed clock in tests/cli/test_tables.py and tests/app/test_views.py)."""


def queued_shown(bees: BeesRunner, item_id: str, words: str,
                 decision: dict[str, object]) -> None:
    """Assert that ``bees status``, ``bees item show`` and their ``--json`` show the queued
    ``decision`` (as ``--json`` prints it) with the one line ``words`` (``AGE`` a pattern)."""
    line = re.compile(re.escape(words).replace("AGE", AGE))
    (row,) = json.loads(bees("status", "--json").stdout)["items"]
    assert (row["status"], row["wait"]) == ("waiting for approval", "engine_not_running")
    assert row["queued_decisions"] == [decision]
    table = bees("status", "--wide").stdout.splitlines()
    assert line.search(table[2]) and table[2].startswith(item_id), table
    shown = json.loads(bees("item", "show", item_id, "--json").stdout)
    assert shown["item"]["queued_decisions"] == [decision]
    assert shown["item"]["wait"] == "engine_not_running"
    (request,) = shown["approvals"]
    said = "approved" if decision["decision"] == "approved" else "denied"
    assert [request[k] for k in ("id", "status", "who", "at", "reason", "delivered")] == [
        1, said, decision["who"], decision["at"], decision["reason"], False]
    text = bees("item", "show", item_id).stdout.splitlines()
    assert text[3].startswith("status      ") and line.fullmatch(text[3][12:]), text[3]


def held_send(bees: BeesRunner, space: Space) -> str:
    """Declare a sender whose mail.send is held on an approval stage, create an item and run
    ``bees run --exit-when-idle`` until it waits for approval; return the item's id."""
    set_identity(person=MAYA)
    mail_addon(space)
    action_agent(space, "sender", tools=["mail.send"],
                 actions=[["mail.send", {"to": "team@example.com"}]])
    space.write("processes/p.yaml", SEND.format(approval="required"))
    item_id = bees("item", "create", "p", "-w", str(space.root)).stdout.strip()
    ran = bees("run", "-w", str(space.root), "--exit-when-idle")
    assert ran.returncode == 0, ran.stderr
    assert ("nothing left to run here: 1 item waits for approval (bees approvals); stopping"
            in run_lines(ran.stderr))
    return item_id


def test_a_denial_given_while_bees_run_is_down_reaches_the_retried_ask(
        bees: BeesRunner, space: Space, tmp_path: Path) -> None:
    item_id = held_send(bees, space)
    denied = bees("deny", item_id, "--reason", REASON, "--json")
    assert denied.returncode == 0, denied.stderr
    assert "bees run delivers it when it starts" in denied.stderr
    at = json.loads(denied.stdout)["at"]
    queued_shown(bees, item_id, f'denied by {MAYA} AGE ("{REASON}"): delivered when '
                 "bees run starts", {"decision": "denied", "request_id": None,
                                     "answer": None, "who": MAYA, "at": at, "reason": REASON})

    ran = bees("run", "-w", str(space.root), "--exit-when-idle")
    assert ran.returncode == 0, ran.stderr
    assert f"delivered the queued decision for {item_id}" in run_lines(ran.stderr)
    # attempt 1 stopped with the first bees run, unanswered; attempt 2 asked again and was
    # answered with the denial and its exact reason
    assert log_lines(space) == [
        "run Send sender 1 1", "run Send sender 1 2",
        f"mail.send 3  | error: mail.send was denied by {MAYA}: {REASON}", "end Send 2"]
    assert not (tmp_path / "addon.log").exists()  # never sent
    shown = json.loads(bees("item", "show", item_id, "--json").stdout)
    # one request for the mail, denied; the retried ask did not make a second one (what
    # waits now is the stage's finish, which a denied action does not approve)
    assert [(a["id"], a["action"], a["status"], a["who"], a["reason"])
            for a in shown["approvals"]] == [(1, "mail.send", "denied", MAYA, REASON),
                                             (2, None, "waiting", None, None)]
    assert [e["request"] for e in shown["history"]
            if e["kind"] == "approval_asked" and e["action"] == "mail.send"] == [1]


def test_a_queued_denial_is_the_model_s_tool_result(bees: BeesRunner, space: Space,
                                                    tmp_path: Path) -> None:
    set_identity(person=MAYA)
    mail_addon(space)
    with serve() as server:
        model_agent(space, "sender", server, tools=["mail.send"])
        space.write("processes/p.yaml", SEND.format(approval="required"))
        server.model.push(
            Answer.tool_calls(("c1", "mail.send", '{"to": "team@example.com"}')),
            Answer.reply("not sent: the address was wrong"))
        item_id = bees("item", "create", "p", "-w", str(space.root)).stdout.strip()
        first = bees("run", "-w", str(space.root), "--exit-when-idle")
        assert first.returncode == 0, first.stderr
        assert len(server.model.received) == 1  # the tool call waits for a person
        assert bees("deny", item_id, "--reason", REASON).returncode == 0
        second = bees("run", "-w", str(space.root), "--exit-when-idle")
        assert second.returncode == 0, second.stderr
    # the model's next turn got the denial and its exact reason as the tool's result
    assert len(server.model.received) == 2
    assert sent(server, 1)[1] == {
        "role": "tool", "tool_call_id": "c1",
        "content": f"refused: mail.send was denied by {MAYA}: {REASON}"}
    assert not (tmp_path / "addon.log").exists()
    shown = json.loads(bees("item", "show", item_id, "--json").stdout)
    assert [(a["id"], a["action"], a["status"]) for a in shown["approvals"]] == [
        (1, "mail.send", "denied"), (2, None, "waiting")]


def test_an_approval_given_while_bees_run_is_down_is_shown_until_delivered(
        bees: BeesRunner, space: Space, tmp_path: Path) -> None:
    item_id = held_send(bees, space)
    approved = bees("approve", item_id, "--action", "1", "--json")
    assert approved.returncode == 0, approved.stderr
    at = json.loads(approved.stdout)["at"]
    queued_shown(bees, item_id, f"approved by {MAYA} AGE: delivered when bees run starts",
                 {"decision": "approved", "request_id": 1, "answer": None, "who": MAYA,
                  "at": at, "reason": None})
    assert json.loads(bees("approvals", "--json").stdout)["approvals"] == []

    ran = bees("run", "-w", str(space.root), "--exit-when-idle")
    assert ran.returncode == 0, ran.stderr
    (row,) = json.loads(bees("status", "--json").stdout)["items"]
    assert (row["status"], row["queued_decisions"]) == ("done", [])
    shown = json.loads(bees("item", "show", item_id, "--json").stdout)
    assert [(a["status"], a["who"], a["at"], "delivered" in a)
            for a in shown["approvals"]] == [("approved", MAYA, at, False)]
    # bees run ending while the stage waited for the approval is the pause, not an
    # interruption: the story says the stage started again with the answer, nothing more
    story = bees("item", "show", item_id).stdout
    assert [line for line in story.splitlines() if "interrupted" in line] == []
    assert "Send round 1: started sender (attempt 2)" in story
    assert (tmp_path / "addon.log").read_text().splitlines() == [
        'mail.send {"to": "team@example.com"}']
