"""Add-on actions on a real dev server (issues 10 and 12): the approval gate for each gated
kind, read and write never held, no workflow update for an ungated or journal-answered
action, and an action cut before its result was written held until a person answers."""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.engine.models import RETRY_UPDATE
from bees_cli.errors import Refused, UserError
from bees_cli.machine.computer import Computer
from bees_cli.record.local import LocalRecord, item_journal
from bees_cli.usecases.actions import action_key, digest_of
from bees_cli.usecases.items import create_item
from tests.engine.conftest import Space, until
from tests.engine.test_rules import (
    HERE,
    MAYA,
    SEND,
    action_agent,
    decide,
    here,
    log_lines,
    mail_addon,
    send_update,
    start,
    waiting_approvals,
    worker,  # noqa: F401 - the fixture
)

KINDS = ("read", "write", "send", "post", "delete", "pay")


def ops_addon(space: Space) -> list[str]:
    """Declare add-on ``ops`` with one action of each kind (named after it); return the
    tools naming them all."""
    command = f'["${{BEES_PYTHON}}", "{HERE / "addon_script.py"}"]'
    space.write("addons/ops.yaml", "actions:\n" + "".join(
        f"  {kind}: {{kind: {kind}, command: {command}}}\n" for kind in KINDS))
    return [f"ops.{kind}" for kind in KINDS]


def addon_lines(space: Space) -> list[str]:
    log = space.root.parent / "addon.log"
    return log.read_text().splitlines() if log.exists() else []


async def updates_accepted(env: WorkflowEnvironment, item_id: str) -> int:
    """How many workflow updates the item's run accepted (its history's events)."""
    history = await env.client.get_workflow_handle(item_id).fetch_history()
    return sum(1 for e in history.events
               if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED)


def test_the_action_key_is_the_sha256_of_item_stage_and_input_digest() -> None:
    digest = digest_of({"to": "all"})
    assert action_key("01JH3", "Send", digest) == (
        hashlib.sha256(f"01JH3\nSend\n{digest}".encode()).hexdigest())
    assert action_key("01JH3", "Send", digest) != action_key("01JH3", "Again", digest)
    assert len(action_key("01JH3", "Send", digest)) == 64


@pytest.mark.parametrize("kind", ["send", "post", "delete", "pay"])
async def test_each_gated_kind_is_held_on_an_approval_stage_and_read_write_are_not(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker, kind: str) -> None:  # noqa: F811
    tools = ops_addon(space)
    action_agent(space, "sender", tools=tools,
                 actions=[["ops.read", {}], ["ops.write", {"n": 1}], [f"ops.{kind}", {"n": 2}]])
    space.write("processes/p.yaml", SEND.format(approval="required"))
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "waiting for approval")
    assert row.status_text == f'waiting for approval: ops.{kind} {{"n": 2}}'
    assert addon_lines(space) == ["ops.read {}", 'ops.write {"n": 1}']
    assert [(w["action"], w["kind"]) for w in waiting_approvals()] == [(f"ops.{kind}", kind)]
    done = await asyncio.to_thread(decide, item_id, approve=True, request_id=None, reason=None)
    assert done["decided"] == [1]
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    assert addon_lines(space) == ["ops.read {}", 'ops.write {"n": 1}', f'ops.{kind} {{"n": 2}}']
    assert log_lines(space) == ["run Send sender 1 1", "ops.read 0 done 1 | ",
                                "ops.write 0 done 2 | ", f"ops.{kind} 0 done 3 | ",
                                "end Send 1"]
    assert [(j["action"], j["request_id"]) for j in item_journal(item_id)] == [
        ("ops.read", None), ("ops.write", None), (f"ops.{kind}", 1)]
    # the held action asked the run once (returning at once) and waited on it once (no
    # polling of the local record), the person decided once
    assert await updates_accepted(dev_env, item_id) == 3


async def test_ungated_and_journal_answered_actions_spend_no_workflow_update(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker) -> None:  # noqa: F811
    tools = ops_addon(space)
    actions: list[object] = [[tool, {"n": i}] for i, tool in enumerate(tools)]
    actions.append(["ops.send", {"n": 2}])  # the same send again: the journal answers it
    action_agent(space, "sender", tools=tools, actions=actions)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    item_id = await start(dev_env, record, space, "p")
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    assert addon_lines(space) == [f'ops.{kind} {{"n": {i}}}' for i, kind in enumerate(KINDS)]
    journal = item_journal(item_id)
    assert [j["action"] for j in journal] == tools
    assert log_lines(space) == (
        ["run Send sender 1 1"]
        + [f"ops.{kind} 0 done {i + 1} | " for i, kind in enumerate(KINDS)]
        + ["ops.send 0 done 3 | ops.send: answered from the journal (it ran at "
           f"{journal[2]['at']}); not run again", "end Send 1"])
    assert [(e.data["action"], e.data["attempt"]) for e in record.events(item_id)
            if e.kind == "action_answered"] == [("ops.send", 1)]
    assert [e.data["action"] for e in record.events(item_id)
            if e.kind == "action_ran"] == tools
    assert await updates_accepted(dev_env, item_id) == 0
    # every intent ended with its result (a read writes none)
    assert [record.open_intent(item_id, "Send", tool, digest_of({"n": i}))
            for i, tool in enumerate(tools)] == [None] * 6


def cut_addon(space: Space) -> Path:
    """Declare add-on ``mail`` whose ``send`` kills its ``bees action`` after delivering
    while the returned cut file exists (see ``cut_addon.py``)."""
    command = f'["${{BEES_PYTHON}}", "{HERE / "cut_addon.py"}"]'
    space.write("addons/mail.yaml", f"actions:\n  send: {{kind: send, command: {command}}}\n")
    cut = space.root.parent / "cut"
    cut.write_text("")
    return cut


@pytest.mark.parametrize(("answer", "killed"), [
    ("ran", "caller"), ("again", "caller"), ("ran", "addon"), ("again", "addon")])
async def test_an_action_cut_before_its_result_is_held_until_a_person_answers(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker, answer: str, killed: str) -> None:  # noqa: F811
    """``killed``: ``caller`` kills ``bees action`` after the add-on took effect (a power cut
    in one process); ``addon`` kills the add-on itself with SIGKILL, so ``bees action`` lives
    on and sees the signal: the outcome is unknown either way, never a result to rerun on."""
    cut = cut_addon(space)
    action_agent(space, "sender", tools=["mail.send"], actions=[["mail.send", {"to": "all"}]],
                 FAIL_FIRST="1", CUT_FILE=str(cut), CUT_WHO=killed)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    item_id = await start(dev_env, record, space, "p")
    await until(record, item_id, lambda r: r.status == "failed")
    key = action_key(item_id, "Send", digest_of({"to": "all"}))[:12]
    assert addon_lines(space) == [f'mail.send {{"to": "all"}} {key}']
    (intent,) = [i for i in [record.open_intent(item_id, "Send", "mail.send",
                                                digest_of({"to": "all"}))] if i]
    await send_update(worker.client.service_client.config.target_host, item_id, RETRY_UPDATE,
                      MAYA, str)
    row = await until(record, item_id, lambda r: r.status == "waiting for approval")
    question = (f"mail.send may already have run (interrupted at {intent['at']}): confirm it "
                "ran, or run it again")
    assert row.status_text == f"waiting for approval: {question}"
    assert [(w["id"], w["what"], w["interrupted_at"]) for w in waiting_approvals()] == [
        (1, question, intent["at"])]
    with pytest.raises(UserError, match="mail.send may already have run"):
        await asyncio.to_thread(decide, item_id, approve=True, request_id=None, reason=None)
    done = await asyncio.to_thread(decide, item_id, approve=True, request_id=None,
                                   reason=None, answer=answer)
    assert done["decided"] == [1]
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    lines = log_lines(space)
    assert lines[0] == "run Send sender 1 1"
    if killed == "caller":
        assert lines[1].startswith("mail.send -9  | ")  # bees action was killed mid-action
    else:
        assert lines[1] == (
            "mail.send 1  | hint: the stage's next attempt holds it for a person: bees "
            f"approve {item_id} --ran (it ran) or --again (run it once more)")
    if answer == "ran":
        assert addon_lines(space) == [f'mail.send {{"to": "all"}} {key}']
        assert lines[2:] == [
            "run Send sender 1 2", "mail.send 0  | mail.send: answered from the journal (it "
            f"ran at {intent['at']}); not run again", "end Send 2"]
    else:
        assert addon_lines(space) == [f'mail.send {{"to": "all"}} {key}'] * 2
        assert lines[2:] == ["run Send sender 1 2", "mail.send 0 done 2 | ", "end Send 2"]
    assert record.open_intent(item_id, "Send", "mail.send", digest_of({"to": "all"})) is None
    assert [(e.data["answer"], e.data["interrupted_at"]) for e in record.events(item_id)
            if e.kind == "approved"] == [(answer, intent["at"])]
    # the retry, the held question (returning at once), the wait on it and the answer
    assert await updates_accepted(dev_env, item_id) == 4


async def test_ungated_actions_need_no_engine_and_a_stage_not_running_is_refused(
        space: Space, record: LocalRecord) -> None:
    tools = ops_addon(space)
    action_agent(space, "sender", tools=tools, actions=[])
    space.write("processes/p.yaml", SEND.format(approval="required"))
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    env = dict(os.environ, BEES_ITEM_ID=item.id, BEES_STAGE="Send", BEES_AGENT="sender",
               BEES_TEMPORAL_ADDRESS="127.0.0.1:9", ADDON_LOG=str(space.root.parent / "addon.log"))
    with pytest.raises(Refused) as refused:
        await here().action("ops.write", '{"n": 1}', env=env)
    assert refused.value.message == (
        f"item {item.id}: stage Send is not running (the item is waiting: the engine is "
        "not running (bees run))")
    record.set_state(item.id, status="running", stage="Send", agent="sender")
    # no engine listens at 127.0.0.1:9: a write and a read on an approval stage run anyway
    wrote = await here().action("ops.write", '{"n": 1}', env=env)
    read = await here().action("ops.read", None, env=env)
    assert (wrote.exit_code, wrote.stdout, wrote.from_journal) == (0, "done 1\n", False)
    assert (read.exit_code, read.stdout) == (0, "done 2\n")
    again = await here().action("ops.write", '{"n": 1}', env=env)
    assert (again.exit_code, again.stdout, again.from_journal) == (0, "done 1\n", True)
    with pytest.raises(Refused, match="agent sender may not use ops.run: it is not in its "
                       "tools"):
        await here().action("ops.run", None, env=env)
    assert addon_lines(space) == ['ops.write {"n": 1}', "ops.read {}"]


async def test_a_person_s_retry_after_a_denial_asks_again_and_the_attempt_stays_denied(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker) -> None:  # noqa: F811
    """A denial refuses the action for the rest of the attempt it was given in (the agent
    asking the same input again is refused with the reason), and a person's ``bees retry``
    runs a new attempt whose action is held for a person afresh (docs/rules.md)."""
    mail_addon(space)
    send = ["mail.send", {"to": "team@example.com"}]
    action_agent(space, "sender", tools=["mail.send"], actions=[send, send], FAIL_FIRST="1")
    space.write("processes/p.yaml", SEND.format(approval="required"))
    item_id = await start(dev_env, record, space, "p")
    await until(record, item_id, lambda r: r.status == "waiting for approval")
    await asyncio.to_thread(decide, item_id, approve=False, request_id=1, reason="oops")
    await until(record, item_id, lambda r: r.status == "failed")
    denied = f"error: mail.send was denied by {MAYA.who}: oops"
    assert log_lines(space) == ["run Send sender 1 1", f"mail.send 3  | {denied}",
                                f"mail.send 3  | {denied}"]
    address = worker.client.service_client.config.target_host
    await send_update(address, item_id, RETRY_UPDATE, MAYA, str)
    row = await until(record, item_id, lambda r: r.status == "waiting for approval")
    assert row.status_text == 'waiting for approval: mail.send {"to": "team@example.com"}'
    assert [(w["id"], w["action"]) for w in waiting_approvals()] == [(2, "mail.send")]
    await asyncio.to_thread(decide, item_id, approve=True, request_id=2, reason=None)
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    assert addon_lines(space) == ['mail.send {"to": "team@example.com"}']
    journal = item_journal(item_id)
    assert log_lines(space)[3:] == [
        "run Send sender 1 2", "mail.send 0 done 1 | ",
        "mail.send 0 done 1 | mail.send: answered from the journal (it ran at "
        f"{journal[0]['at']}); not run again", "end Send 2"]
    decided = [(e.kind, e.data["request"], e.data["reason"]) for e in record.events(item_id)
               if e.kind in ("approved", "denied")]
    assert decided == [("denied", 1, "oops"), ("approved", 2, None)]
