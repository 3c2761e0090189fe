"""Decisions given while ``bees run`` is down (issue 23, points 1 and 2): the README flow
(``bees run --exit-when-idle``, ``bees approve``/``bees deny``, ``bees run`` again) keeps a
denial and its reason for the retried ask, and shows the queued decision everywhere."""

from __future__ import annotations

import json
from pathlib import Path

from bees_cli.machine.identity import set_identity
from tests.agents.model_server import Answer, serve
from tests.conftest import BeesRunner, run_lines
from tests.engine.conftest import Space
from tests.engine.test_model_loop import model_agent, sent
from tests.engine.test_rules import SEND, action_agent, log_lines, mail_addon

MAYA = "maya@example.com"
REASON = "wrong address: it goes to the board, not the team"


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
    denied = bees("deny", item_id, "--reason", REASON)
    assert denied.returncode == 0, denied.stderr
    assert "bees run delivers it when it starts" in denied.stderr

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
