"""An approval that corrects the held action's input (issue 26, point 4): ``bees approve ITEM
--action ID --input JSON`` runs the add-on once with the person's input, never the model's;
the journal keeps the edited input, who changed it and the original digest; the agent (and a
model, in its tool result) is told what was changed."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.agents.action_call import digest_of
from bees_cli.machine.identity import set_identity
from bees_cli.record.local import LocalRecord, item_journal
from tests.agents.model_server import Answer, serve
from tests.conftest import BeesRunner, run_lines
from tests.engine.conftest import Space, until
from tests.engine.test_model_loop import model_agent, sent
from tests.engine.test_queued_decisions import held_send
from tests.engine.test_rules import (
    HERE,
    RETRY_UPDATE,
    SEND,
    action_agent,
    decide,
    log_lines,
    mail_addon,
    send_update,
    start,
    waiting_approvals,
    worker,  # noqa: F401 - the fixture
)
from tests.engine.test_rules import MAYA as MAYA_INPUT

MAYA = "maya@example.com"
TEAM = {"to": "team@example.com"}
BOARD = {"to": "board@example.com"}
CHANGED = "the person changed to: team@example.com → board@example.com"


def test_an_edited_approval_runs_the_edited_input_once_and_journals_it(
        bees: BeesRunner, space: Space, tmp_path: Path) -> None:
    item_id = held_send(bees, space)
    approved = bees("approve", item_id, "--action", "1", "--input", json.dumps(BOARD),
                    "--json")
    assert approved.returncode == 0, approved.stderr
    decision = json.loads(approved.stdout)
    assert (decision["decision"], decision["input"], decision["queued"]) == (
        "approved", BOARD, True)

    ran = bees("run", "-w", str(space.root), "--exit-when-idle")
    assert ran.returncode == 0, ran.stderr
    assert f"delivered the queued decision for {item_id}" in run_lines(ran.stderr)
    # attempt 1 stopped with the first bees run; attempt 2 asked again with the model's
    # input and ran the person's, once
    assert (tmp_path / "addon.log").read_text().splitlines() == [
        'mail.send {"to": "board@example.com"}']
    assert log_lines(space) == [
        "run Send sender 1 1", "run Send sender 1 2",
        f"mail.send 0 done 1 | mail.send: {CHANGED}", "end Send 2"]
    (entry,) = item_journal(item_id)
    assert (entry["digest"], entry["original_digest"], entry["edited_by"],
            json.loads(entry["input"]), entry["request_id"]) == (
        digest_of(BOARD), digest_of(TEAM), MAYA, BOARD, 1)
    shown = json.loads(bees("item", "show", item_id, "--json").stdout)
    (request,) = shown["approvals"]
    assert (request["status"], json.loads(request["input"]),
            json.loads(request["edited_input"])) == ("approved", TEAM, BOARD)
    (fact,) = [e for e in shown["history"] if e["kind"] == "approved"]
    assert (fact["who"], json.loads(fact["edited_input"])) == (MAYA, BOARD)


def test_an_edited_input_is_checked_against_the_schema_and_refused_on_a_finish(
        bees: BeesRunner, space: Space, tmp_path: Path) -> None:
    set_identity(person=MAYA)
    command = f'["{sys.executable}", "{HERE / "addon_script.py"}"]'
    space.write("addons/mail.yaml", f"""\
        actions:
          send:
            kind: send
            command: {command}
            input:
              type: object
              properties: {{to: {{type: string, format: email}}}}
              required: [to]
        """)
    action_agent(space, "sender", tools=["mail.send"], actions=[["mail.send", TEAM]])
    space.write("processes/p.yaml", SEND.format(approval="required"))
    item_id = bees("item", "create", "p", "-w", str(space.root)).stdout.strip()
    assert bees("run", "-w", str(space.root), "--exit-when-idle").returncode == 0
    bad = tmp_path / "edited.json"
    bad.write_text('{"to": "the board"}')
    refused = bees("approve", item_id, "--input", f"@{bad}")
    assert refused.returncode == 2  # bad input the person can fix (UserError), not decided
    assert refused.stderr.splitlines()[0] == (
        "error: mail.send: input \"to\" is not an email address: 'the board'")
    waiting = json.loads(bees("approvals", "--json").stdout)["approvals"]
    assert [a["request_id"] for a in waiting] == [1]  # nothing was decided
    # a deny of the send leaves the stage's finish waiting: an edit there is refused
    assert bees("deny", item_id, "--reason", "no").returncode == 0
    assert bees("run", "-w", str(space.root), "--exit-when-idle").returncode == 0
    finish = bees("approve", item_id, "--action", "2", "--input", "{}")
    assert finish.returncode == 2
    assert finish.stderr.splitlines()[0] == (
        f"error: request 2 of item {item_id} is the finish of stage Send, not an action "
        "call: --input corrects a held action's input")
    waiting = json.loads(bees("approvals", "--json").stdout)["approvals"]
    assert [(a["request_id"], a["kind"]) for a in waiting] == [(2, "finish")]


async def test_an_edited_action_that_ran_is_answered_from_the_journal_on_a_retry(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker) -> None:  # noqa: F811
    addon_log = mail_addon(space)
    action_agent(space, "sender", tools=["mail.send"], FAIL_FIRST="1",
                 actions=[["mail.send", TEAM]])
    space.write("processes/p.yaml", SEND.format(approval="required"))
    item_id = await start(dev_env, record, space, "p")
    await until(record, item_id, lambda r: r.status == "waiting for approval")
    done = await asyncio.to_thread(decide, item_id, approve=True, request_id=1, reason=None,
                                   input_text=json.dumps(BOARD))
    assert (done["decided"], done["input"]) == ([1], BOARD)
    await until(record, item_id, lambda r: r.status == "failed")
    # the agent failed after the send; the retried stage asks with the model's input again:
    # the edited run answers it from the journal, the add-on does not run a second time
    await send_update(worker.client.service_client.config.target_host, item_id, RETRY_UPDATE,
                      MAYA_INPUT, str)
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    assert addon_log.read_text().splitlines() == ['mail.send {"to": "board@example.com"}']
    ran_at = item_journal(item_id)[0]["at"]
    assert log_lines(space) == [
        "run Send sender 1 1", f"mail.send 0 done 1 | mail.send: {CHANGED}",
        "run Send sender 1 2",
        f"mail.send 0 done 1 | mail.send: answered from the journal (it ran at {ran_at}); "
        "not run again", "end Send 2"]
    assert len(item_journal(item_id)) == 1
    assert waiting_approvals() == []


def test_a_model_is_told_what_the_person_changed(bees: BeesRunner, space: Space,
                                                 tmp_path: Path) -> None:
    set_identity(person=MAYA)
    addon_log = mail_addon(space, declared=True)  # bees run hands ADDON_LOG on
    with serve() as server:
        model_agent(space, "sender", server, tools=["mail.send"])
        space.write("processes/p.yaml", SEND.format(approval="required"))
        server.model.push(
            Answer.tool_calls(("c1", "mail.send", json.dumps(TEAM))),
            Answer.reply("sent"))
        item_id = bees("item", "create", "p", "-w", str(space.root)).stdout.strip()
        first = bees("run", "-w", str(space.root), "--exit-when-idle",
                     env={"ADDON_LOG": str(addon_log)})
        assert first.returncode == 0, first.stderr
        assert len(server.model.received) == 1  # the tool call waits for a person
        edited = bees("approve", item_id, "--input", "@-", input=json.dumps(BOARD))
        assert edited.returncode == 0, edited.stderr
        second = bees("run", "-w", str(space.root), "--exit-when-idle",
                      env={"ADDON_LOG": str(addon_log)})
        assert second.returncode == 0, second.stderr
    assert len(server.model.received) == 2
    assert sent(server, 1)[1] == {"role": "tool", "tool_call_id": "c1",
                                  "content": f"{CHANGED}\ndone 1\n"}
    assert addon_log.read_text().splitlines() == ['mail.send {"to": "board@example.com"}']


def test_a_held_finish_shows_the_answer_the_calls_and_the_tools_never_called(
        bees: BeesRunner, space: Space) -> None:
    set_identity(person=MAYA)
    addon_log = mail_addon(space, declared=True)
    env = {"ADDON_LOG": str(addon_log)}
    with serve() as server:
        model_agent(space, "sender", server, tools=["mail.list", "mail.send"])
        space.write("processes/p.yaml", SEND.format(approval="required"))
        server.model.push(
            Answer.tool_calls(("c1", "mail.list", '{"folder": "outbox"}')),
            Answer.reply("Nothing to send:\nthe outbox is empty."))
        item_id = bees("item", "create", "p", "-w", str(space.root)).stdout.strip()
        ran = bees("run", "-w", str(space.root), "--exit-when-idle", env=env)
        assert ran.returncode == 0, ran.stderr
    shown = bees("approvals", "show", item_id)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[3].startswith("action    finish: output ")
    assert lines[5:9] == [
        "answer    Nothing to send:",
        "          the outbox is empty.",
        'called    mail.list {"folder": "outbox"} (ran)',
        "not called mail.send"]
    (request,) = json.loads(bees("approvals", "show", item_id, "--json").stdout)["approvals"]
    assert (request["final_answer"], request["tool_calls"], request["tools_not_called"]) == (
        "Nothing to send:\nthe outbox is empty.",
        [{"tool": "mail.list", "input": {"folder": "outbox"}, "outcome": "ran"}],
        ["mail.send"])
