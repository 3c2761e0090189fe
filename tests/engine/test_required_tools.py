"""Tools a stage must call, in any mode (issue 26, point 3), on a dev server against a
scripted model that ignores what it is asked.

A final answer before each of ``runner.required_tools`` ran is told back once; the next one
that still lacks them fails the stage with the reason. In json mode a step naming a tool the
step's schema did not offer is an invalid step, not a call for the gate to refuse.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker

from bees_cli.engine.workflows import ItemWorkflow
from bees_cli.record.local import LocalRecord
from tests.agents.model_server import Answer, ScriptedServer
from tests.engine.conftest import Space, until
from tests.engine.test_model_loop import (
    DiesAfterReply,
    loop_worker,
    model_agent,
    model_server,
    note_this_worker,
    result,
    sent,
)
from tests.engine.test_model_settings import worker
from tests.engine.test_rules import SEND, mail_addon, start

__all__ = ["model_server", "worker"]  # the fixtures, imported

TOLD = {"role": "user", "content": "you have not called mail.send; call it before your "
        "final answer"}
"""What the loop tells a model whose final answer came before mail.send ran."""
FAILED = ("agent sender: the final answer came before mail.send was called "
          "(runner.required_tools), also after the model was told once")
"""The stage's reason when the next final answer still lacks it."""


def kinds(record: LocalRecord, item_id: str) -> list[str]:
    return [e.kind for e in record.events(item_id) if e.kind.startswith("stage_")]


async def test_a_native_final_answer_before_the_required_tool_is_told_once_then_fails(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Native mode, a server that never calls mail.send: told once, then the stage fails."""
    log = mail_addon(space, declared=True)
    monkeypatch.setenv("ADDON_LOG", str(log))
    model_agent(space, "sender", model_server, tools=["mail.send"], file_tools="false",
                required_tools="[mail.send]")
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(Answer.reply("done"), Answer.reply("done, really"))
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "failed")
    assert row.reason == FAILED
    received = model_server.model.received
    assert len(received) == 2
    assert [t["function"]["name"] for t in received[0].body["tools"]] == ["mail__send"]
    assert [t["function"]["name"] for t in received[1].body["tools"]] == ["mail__send"]
    assert sent(model_server, 1) == [{"role": "assistant", "content": "done"}, TOLD]
    assert kinds(record, item_id) == ["stage_started", "stage_failed"]
    assert not log.exists()
    assert not (Path(row.run_folder) / "Send" / "answer.md").exists()


async def test_a_native_model_told_then_calling_the_tool_finishes_the_stage(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Told once, the model calls mail.send (it runs once), then its answer finishes."""
    log = mail_addon(space, declared=True)
    monkeypatch.setenv("ADDON_LOG", str(log))
    model_agent(space, "sender", model_server, tools=["mail.send"], file_tools="false",
                required_tools="[mail.send]")
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(Answer.reply("done"),
                            Answer.tool_calls(("c1", "mail__send", '{"to": "all"}')),
                            Answer.reply("sent"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    assert log.read_text().splitlines() == ['mail.send {"to": "all"}']
    assert len(model_server.model.received) == 3
    assert sent(model_server, 1) == [{"role": "assistant", "content": "done"}, TOLD]
    assert sent(model_server, 2)[3]["role"] == "tool"
    assert sent(model_server, 2)[3]["tool_call_id"] == "c1"
    assert "tools" not in model_server.model.received[2].body  # mail.send ran: not offered
    assert kinds(record, item_id) == ["stage_started", "stage_finished"]
    run = Path(record.item(item_id).run_folder)
    assert (run / "Send" / "answer.md").read_text() == "sent"


async def test_being_told_is_not_forgotten_after_another_tool_call_or_a_lost_worker(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        model_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Told at turn 1; the worker is lost during turn 3's call (after a read in turn 2); the
    next worker's run of turn 3 still knows the model was told: the stage fails, no second
    telling."""
    log = mail_addon(space, declared=True)
    monkeypatch.setenv("ADDON_LOG", str(log))
    model_agent(space, "sender", model_server, tools=["mail.send"],
                required_tools="[mail.send]")
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(Answer.reply("done"),
                            Answer.tool_calls(("c1", "read_file", '{"path": "x.md"}')),
                            Answer.reply("done, really"))
    note_this_worker(dev_env)
    saved = asyncio.Event()
    first = loop_worker(dev_env, record, models=lambda act: DiesAfterReply(
        record, act=act, turn=3, saved=saved))
    async with first:
        item_id = await start(dev_env, record, space, "p")
        await asyncio.wait_for(saved.wait(), 30)
    async with loop_worker(dev_env, record):
        row = await until(record, item_id, lambda r: r.status == "failed")
    assert row.reason == FAILED
    assert len(model_server.model.received) == 3  # turn 3 answered from the transcript
    assert sent(model_server, 1) == [{"role": "assistant", "content": "done"}, TOLD]
    assert not log.exists()
    history = await dev_env.client.get_workflow_handle(item_id).fetch_history()
    retried = [e for e in history.events
               if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
               and e.activity_task_started_event_attributes.attempt > 1]
    assert len(retried) == 1
    replayer = Replayer(workflows=[ItemWorkflow], data_converter=pydantic_data_converter)
    await replayer.replay_workflow(history)


async def test_a_json_step_naming_a_tool_not_offered_is_invalid_not_run(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Json mode: after mail.send ran, the schema offers only the final answer; a server
    that ignores the schema and names mail__send again gets an invalid step told back (the
    send does not run twice), then its final answer finishes."""
    log = mail_addon(space, declared=True)
    monkeypatch.setenv("ADDON_LOG", str(log))
    model_agent(space, "sender", model_server, tools=["mail.send"], tool_mode="json",
                file_tools="false", required_tools="[mail.send]")
    space.write("processes/p.yaml", SEND.format(approval="none"))
    step = '{"tool": "mail__send", "arguments": {"to": "all"}}'
    model_server.model.push(Answer.reply(step), Answer.reply(step),
                            Answer.reply('{"final": "sent"}'))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    assert log.read_text().splitlines() == ['mail.send {"to": "all"}']
    assert len(model_server.model.received) == 3
    assert sent(model_server, 2)[2:] == [
        {"role": "assistant", "content": step},
        {"role": "user", "content": "the step names tool 'mail__send', which is not offered "
         "at this step (offered: none). Answer again, as asked."}]


async def test_a_json_step_naming_a_tool_not_offered_twice_fails_the_stage(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Json mode: mail.list is not among the agent's tools; named twice in a row, the stage
    fails as for any invalid step, and the gate never sees it."""
    log = mail_addon(space, declared=True)
    monkeypatch.setenv("ADDON_LOG", str(log))
    model_agent(space, "sender", model_server, tools=["mail.send"], tool_mode="json",
                file_tools="false")
    space.write("processes/p.yaml", SEND.format(approval="none"))
    step = '{"tool": "mail.list", "arguments": {}}'
    model_server.model.push(Answer.reply(step), Answer.reply(step))
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "failed")
    assert row.reason == ("agent sender: the step names tool 'mail.list', which is not "
                          "offered at this step (offered: mail__send)")
    assert sent(model_server, 1)[1] == {
        "role": "user", "content": "the step names tool 'mail.list', which is not offered at "
        "this step (offered: mail__send). Answer again, as asked."}
    assert not log.exists()
    assert not [e for e in record.events(item_id) if e.kind.startswith("action")]
