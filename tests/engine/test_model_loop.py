"""The model loop on a real dev server against a scripted model (issue 13, points 2–5 and 7)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker

from bees_cli.agents.action_call import ActionCallInput, ActionRunner
from bees_cli.agents.mcp_sessions import McpSessions
from bees_cli.engine.client import EngineGateway
from bees_cli.engine.model_activities import ModelActivities
from bees_cli.engine.model_models import (
    MODEL_CALL_ACTIVITY,
    TOOL_CALL_ACTIVITY,
    ModelCallInput,
    ModelStep,
)
from bees_cli.engine.models import task_queue
from bees_cli.engine.transcript import transcript_lines, transcript_path
from bees_cli.engine.worker import make_worker
from bees_cli.engine.workflows import ItemWorkflow
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity, set_identity
from bees_cli.machine.paths import data_dir
from bees_cli.record.local import LocalRecord
from bees_cli.usecases.bees import Bees
from bees_cli.usecases.item_details import ItemDetails
from bees_cli.usecases.liveness import note_worker
from tests.agents.model_server import Answer, ScriptedServer, serve
from tests.engine.conftest import Space, until
from tests.engine.test_rules import SEND, decide, mail_addon, start

REVIEW = """\
stages:
  - name: Draft
    kind: work
    agents: [alpha]
  - name: Review
    kind: review
    reviews: Draft
    agents: [critic]
  - name: Done
    kind: done
"""


@pytest.fixture
def model_server() -> Iterator[ScriptedServer]:
    with serve() as server:
        yield server


def note_this_worker(env: WorkflowEnvironment) -> None:
    """Sign this computer in as maya and note its worker, as ``bees run`` does at start."""
    set_identity(person="maya@example.com")
    note_worker(data_dir(), env.client.service_client.config.target_host,
                task_queue(load_identity().machine_id))


def loop_worker(env: WorkflowEnvironment, record: LocalRecord, *,
                models: Callable[[ActionRunner], ModelActivities] | None = None,
                mcp_sessions: McpSessions | None = None) -> Worker:
    """This computer's worker as ``bees run`` makes it: model agents' add-on tools go through
    ``bees action``'s gate (``Bees.call_action``); ``models`` makes its model activities from
    that gate (default: the worker's own), ``mcp_sessions`` are the run's held MCP servers."""
    queue = task_queue(load_identity().machine_id)
    computer = Computer.load()
    bees = Bees(computer, engine=EngineGateway(env.client))
    bees.mcp_sessions = mcp_sessions

    async def act(call: ActionCallInput) -> Any:
        return await bees.call_action(call)

    options: dict[str, Any] = {"act": act} if models is None else {"models": models(act)}
    if mcp_sessions is not None:
        options["mcp_sessions"] = mcp_sessions
    return make_worker(env.client, queue, record, computer=computer, heartbeat_every=0.5,
                       **options)


class DiesAfterReply(ModelActivities):
    """Model activities whose worker dies after saving turn ``turn``'s reply, before the
    activity completes (a kill -9 between the two steps); ``saved`` is set then."""

    def __init__(self, record: LocalRecord, *, act: ActionRunner, turn: int,
                 saved: asyncio.Event) -> None:
        super().__init__(record, act=act)
        self.turn, self.saved = turn, saved

    @activity.defn(name=MODEL_CALL_ACTIVITY)
    async def model_call(self, call: ModelCallInput) -> ModelStep:
        step = await ModelActivities.model_call(self, call)
        if call.turn == self.turn:
            self.saved.set()
            await asyncio.Event().wait()  # the worker stops here
        return step


@pytest_asyncio.fixture
async def worker(dev_env: WorkflowEnvironment, space: Space,
                 record: LocalRecord) -> AsyncIterator[Worker]:
    note_this_worker(dev_env)
    async with loop_worker(dev_env, record) as running:
        yield running


def model_agent(space: Space, name: str, server: ScriptedServer, *, tools: list[str] = (),
                prices: str | None = None, **runner: object) -> None:
    lines = ["instructions: write it", f"tools: [{', '.join(tools)}]", "runner:",
             "  model:", f"    base_url: {server.base_url}", "    name: scripted"]
    if prices:
        lines.append(f"    prices: {prices}")
    lines += [f"  {key}: {value}" for key, value in runner.items()]
    space.write(f"agents/{name}.yaml", "\n".join(lines) + "\n")


def sent(server: ScriptedServer, index: int) -> list[dict[str, Any]]:
    """The messages of request ``index``, without the two opening ones."""
    return list(server.model.received[index].body["messages"][2:])


async def result(env: WorkflowEnvironment, item_id: str) -> str:
    return str(await env.client.get_workflow_handle(item_id).result())


def reply(index: int, call: tuple[str, str, str] | None = None) -> Answer:
    return Answer.tool_calls(call) if call else Answer.reply(f"final {index}")


async def test_a_tool_call_runs_and_its_result_goes_back_to_the_model(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    model_agent(space, "sender", model_server)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(
        Answer.tool_calls(("c1", "write_file", '{"path": "notes.md", "content": "hello"}')),
        Answer.reply("all written"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    run = Path(record.item(item_id).run_folder)
    assert (run / "Send" / "notes.md").read_text() == "hello"
    assert (run / "Send" / "answer.md").read_text() == "all written"
    assert len(model_server.model.received) == 2
    first = model_server.model.received[0].body
    assert [t["function"]["name"] for t in first["tools"]] == ["read_file", "write_file"]
    assert sent(model_server, 1)[1] == {"role": "tool", "tool_call_id": "c1",
                                        "content": "wrote 5 bytes to notes.md"}
    lines = transcript_lines(transcript_path(str(run), "Send"))
    assert [(e["kind"], e["turn"]) for e in lines] == [
        ("opening", 1), ("reply", 1), ("tool", 1), ("reply", 2)]
    assert (lines[1]["prompt_tokens"], lines[1]["completion_tokens"]) == (10, 5)
    shown = await Bees(Computer.load()).item_details(item_id)
    assert isinstance(shown, ItemDetails)
    assert [m.model_dump(exclude={"seconds"}) for m in shown.models] == [
        {"stage": "Send", "model": "scripted", "turns": 2, "tokens_in": 20, "tokens_out": 10,
         "cost": None}]
    assert str(run / "logs" / "Send.transcript.jsonl") in shown.logs
    (finished,) = [e for e in record.events(item_id) if e.kind == "stage_finished"]
    assert [finished.data[k] for k in ("agent", "turns", "tokens", "tokens_in",
                                        "tokens_out")] == ["sender", 2, 30, 20, 10]


async def test_a_gated_tool_waits_for_approval_then_runs_once(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    log = mail_addon(space, declared=True)
    monkeypatch.setenv("ADDON_LOG", str(log))
    model_agent(space, "sender", model_server, tools=["mail.send"])
    space.write("processes/p.yaml", SEND.format(approval="required"))
    model_server.model.push(Answer.tool_calls(("c1", "mail__send", '{"to": "all"}')),
                            Answer.reply("sent"))
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "waiting for approval")
    assert row.status_text == 'waiting for approval: mail.send {"to": "all"}'
    assert len(model_server.model.received) == 1
    done = await asyncio.to_thread(decide, item_id, approve=True, request_id=None, reason=None)
    assert done["decided"] == [1]
    assert await result(dev_env, item_id) == "done"
    assert log.read_text().splitlines() == ['mail.send {"to": "all"}']
    assert sent(model_server, 1)[1] == {"role": "tool", "tool_call_id": "c1",
                                        "content": "done 1\n"}
    assert [f["function"]["name"] for f in model_server.model.received[0].body["tools"]] == [
        "read_file", "write_file", "mail__send"]


async def test_a_held_tool_call_waits_on_the_run_not_on_a_loop_reading_the_record(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24, point 1: the person's decision reaches a model agent's held tool call
    through the engine (the run's ``bees.await_decision`` update returns it), never by
    reading the request back from the local record in a loop."""
    reads: list[tuple[str, int]] = []
    real = LocalRecord.approval

    def counted(self: LocalRecord, item_id: str, request_id: int) -> Any:
        reads.append((item_id, request_id))
        return real(self, item_id, request_id)

    monkeypatch.setattr(LocalRecord, "approval", counted)
    log = mail_addon(space, declared=True)
    monkeypatch.setenv("ADDON_LOG", str(log))
    model_agent(space, "sender", model_server, tools=["mail.send"])
    space.write("processes/p.yaml", SEND.format(approval="required"))
    model_server.model.push(Answer.tool_calls(("c1", "mail__send", '{"to": "all"}')),
                            Answer.reply("sent"))
    item_id = await start(dev_env, record, space, "p")
    await until(record, item_id, lambda r: r.status == "waiting for approval")
    await asyncio.to_thread(decide, item_id, approve=True, request_id=None, reason=None)
    assert await result(dev_env, item_id) == "done"
    assert log.read_text().splitlines() == ['mail.send {"to": "all"}']
    assert reads == []
    history = await dev_env.client.get_workflow_handle(item_id).fetch_history()
    updates = [e.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
               for e in history.events
               if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED]
    # the person may decide before the wait reaches the run: then it returns at once
    assert (updates[0], sorted(updates[1:])) == (
        "bees.action", ["bees.await_decision", "bees.decide"])


async def test_a_denial_is_given_back_to_the_model_as_the_tools_result(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    log = mail_addon(space, declared=True)
    monkeypatch.setenv("ADDON_LOG", str(log))
    model_agent(space, "sender", model_server, tools=["mail.send"])
    space.write("processes/p.yaml", SEND.format(approval="required"))
    model_server.model.push(Answer.tool_calls(("c1", "mail__send", '{"to": "all"}')),
                            Answer.reply("not sent"))
    item_id = await start(dev_env, record, space, "p")
    await until(record, item_id, lambda r: r.status == "waiting for approval")
    await asyncio.to_thread(decide, item_id, approve=False, request_id=None,
                            reason="not this week")
    # the stage still needs a person's approval to finish: its finish is held next
    row = await until(record, item_id, lambda r: r.status == "waiting for approval"
                      and "output" in r.status_text)
    assert row.stage == "Send"
    assert not log.exists()
    assert sent(model_server, 1)[1] == {
        "role": "tool", "tool_call_id": "c1",
        "content": "refused: mail.send was denied by maya@example.com: not this week"}


async def test_an_addon_tool_runs_in_the_stages_folder_as_a_command_agents_action_does(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    where = "import os, pathlib; pathlib.Path('here.txt').write_text('x'); print(os.getcwd())"
    space.write("addons/probe.yaml", "actions:\n  where:\n    kind: write\n"
                f"    command: {json.dumps([sys.executable, '-c', where])}\n")
    model_agent(space, "sender", model_server, tools=["probe.where"])
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(Answer.tool_calls(("c1", "probe__where", "{}")), Answer.reply("ok"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    folder = (Path(record.item(item_id).run_folder) / "Send").resolve()
    assert sent(model_server, 1)[1] == {"role": "tool", "tool_call_id": "c1",
                                        "content": f"{folder}\n"}
    assert (folder / "here.txt").read_text() == "x"
    assert not (Path.cwd() / "here.txt").exists()


async def test_a_tool_outside_the_agents_tools_is_refused_back_to_the_model(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    mail_addon(space)
    model_agent(space, "sender", model_server, tools=["mail.list"])
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(Answer.tool_calls(("c1", "mail__send", "{}")), Answer.reply("ok"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    content = sent(model_server, 1)[1]["content"]
    assert content == (f"refused: item {item_id}: agent sender may not use mail.send: it is "
                       "not in its tools (tools: mail.list)")


async def test_an_input_its_schema_refuses_is_told_back_to_the_model_and_not_run(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    log = mail_addon(space, declared=True)
    monkeypatch.setenv("ADDON_LOG", str(log))
    mail = space.root / "addons" / "mail.yaml"
    mail.write_text(mail.read_text().replace(
        "kind: send,", 'kind: send, input: {type: object, properties: {to: {type: string, '
        'format: email}}, required: [to]},'))
    model_agent(space, "sender", model_server, tools=["mail.send"])
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(Answer.tool_calls(("c1", "mail__send", '{"to": "the team"}')),
                            Answer.tool_calls(("c2", "mail__send", '{"to": "team@example.com"}')),
                            Answer.reply("sent"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    assert sent(model_server, 1)[1] == {
        "role": "tool", "tool_call_id": "c1",
        "content": "failed: mail.send: input \"to\" is not an email address: 'the team'"}
    assert log.read_text().splitlines() == ['mail.send {"to": "team@example.com"}']


@pytest.mark.parametrize(("answers", "reason"), [
    ([Answer.error(401, "bad key")],
     "http://127.0.0.1:PORT/v1/chat/completions refused a request without an API key "
     "(HTTP 401): bad key"),
    ([Answer.error(400, "the request exceeds the available context size",
                   code="exceed_context_size")],
     "the conversation no longer fits the context window of scripted at "
     "http://127.0.0.1:PORT/v1/chat/completions (HTTP 400): exceed_context_size: the "
     "request exceeds the available context size"),
])
async def test_a_refused_key_or_an_exceeded_context_fails_the_stage_at_once(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer, answers: list[Answer], reason: str) -> None:
    model_agent(space, "sender", model_server)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(*answers)
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "failed")
    port = model_server.base_url.split(":")[2].split("/")[0]
    assert row.reason == "agent sender: " + reason.replace("PORT", port)
    assert len(model_server.model.received) == 1


async def test_429_waits_retry_after_and_500_backs_off_then_the_call_succeeds(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    model_agent(space, "sender", model_server)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(Answer.error(429, "slow down", headers={"Retry-After": "2"}),
                            Answer.error(500, "boom"), Answer.reply("done"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    received = model_server.model.received
    assert len(received) == 3
    history = await dev_env.client.get_workflow_handle(item_id).fetch_history()
    calls = [e for e in history.events
             if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
             and e.activity_task_started_event_attributes.attempt == 3]
    assert len(calls) == 1
    assert calls[0].activity_task_started_event_attributes.last_failure.message.startswith(
        "http://127.0.0.1:")


async def test_malformed_arguments_are_told_back_once(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    model_agent(space, "sender", model_server)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(
        Answer.tool_calls(("c1", "write_file", '{"path": ')), Answer.reply("fine"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    assert sent(model_server, 1)[1] == {
        "role": "tool", "tool_call_id": "c1",
        "content": "the arguments of tool call 'write_file' are not valid JSON: Expecting "
                   "value at line 1 column 9"}


async def test_an_unknown_tool_twice_in_a_row_fails_the_stage(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    model_agent(space, "sender", model_server)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(Answer.tool_calls(("c1", "fly", "{}")),
                            Answer.tool_calls(("c2", "fly", "{}")))
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "failed")
    assert row.reason == ("agent sender: there is no tool 'fly' (tools: read_file, "
                          "write_file)")
    assert sent(model_server, 1)[1] == {
        "role": "tool", "tool_call_id": "c1",
        "content": "there is no tool 'fly' (tools: read_file, write_file)"}


async def test_a_bad_verdict_is_asked_again_once_then_a_good_one_moves_on(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    model_agent(space, "alpha", model_server)
    model_agent(space, "critic", model_server)
    space.write("processes/p.yaml", REVIEW)
    model_server.model.push(
        Answer.reply("the draft"), Answer.reply('{"verdict": "maybe"}'),
        Answer.reply('{"verdict": "approve", "comments": []}'))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    review = model_server.model.received[1].body
    assert review["response_format"]["type"] == "json_schema"
    assert review["response_format"]["json_schema"]["schema"]["required"] == [
        "verdict", "comments"]
    assert sent(model_server, 2)[1]["role"] == "user"
    assert sent(model_server, 2)[1]["content"].startswith(
        "the model's answer is not a valid Verdict: verdict: ")
    run = Path(record.item(item_id).run_folder)
    assert json.loads((run / "Review" / "verdict.json").read_text()) == {
        "verdict": "approve", "comments": []}


async def test_the_turn_limit_and_the_token_budget_fail_the_stage_with_the_reason(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    model_agent(space, "sender", model_server, max_turns=2)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    read = ("c", "read_file", '{"path": "x"}')
    model_server.model.push(Answer.tool_calls(read), Answer.tool_calls(read))
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "failed")
    assert row.reason == "agent sender: the turn limit of 2 model calls was reached"
    assert len(model_server.model.received) == 2
    (failed,) = [e.data for e in record.events(item_id) if e.kind == "stage_failed"]
    assert {k: failed[k] for k in ("tokens", "tokens_in", "tokens_out")} == {
        "tokens": 30, "tokens_in": 20, "tokens_out": 10}
    model_agent(space, "sender", model_server, token_budget=20)
    model_server.model.push(Answer.tool_calls(read), Answer.tool_calls(read))
    second = await start(dev_env, record, space, "p")
    row = await until(record, second, lambda r: r.status == "failed")
    assert row.reason == ("agent sender: the token budget of 20 tokens was crossed "
                          "(30 used in 2 turns)")


async def test_a_worker_lost_between_two_tool_calls_resumes_after_the_last_finished_call(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        model_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    log = mail_addon(space, declared=True)
    monkeypatch.setenv("ADDON_LOG", str(log))
    model_agent(space, "sender", model_server, tools=["mail.send"])
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(Answer.tool_calls(("c1", "mail__send", '{"to": "a"}')),
                            Answer.tool_calls(("c2", "mail__send", '{"to": "b"}')),
                            Answer.reply("both sent"))
    note_this_worker(dev_env)
    saved = asyncio.Event()
    first = loop_worker(dev_env, record, models=lambda act: DiesAfterReply(
        record, act=act, turn=2, saved=saved))
    async with first:
        item_id = await start(dev_env, record, space, "p")
        await asyncio.wait_for(saved.wait(), 30)
    assert log.read_text().splitlines() == ['mail.send {"to": "a"}']
    async with loop_worker(dev_env, record):
        assert await result(dev_env, item_id) == "done"
    # the first send ran once; the model was asked once per turn (3 turns, 3 requests)
    assert log.read_text().splitlines() == ['mail.send {"to": "a"}', 'mail.send {"to": "b"}']
    assert len(model_server.model.received) == 3
    run = record.item(item_id).run_folder
    assert [(e["kind"], e["turn"]) for e in transcript_lines(transcript_path(run, "Send"))] == [
        ("opening", 1), ("reply", 1), ("tool", 1), ("reply", 2), ("tool", 2), ("reply", 3)]
    history = await dev_env.client.get_workflow_handle(item_id).fetch_history()
    names = [e.activity_task_scheduled_event_attributes.activity_type.name
             for e in history.events
             if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED]
    assert [n for n in names if n in (MODEL_CALL_ACTIVITY, TOOL_CALL_ACTIVITY)] == [
        MODEL_CALL_ACTIVITY, TOOL_CALL_ACTIVITY, MODEL_CALL_ACTIVITY, TOOL_CALL_ACTIVITY,
        MODEL_CALL_ACTIVITY]
    retried = [e for e in history.events
               if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
               and e.activity_task_started_event_attributes.attempt > 1]
    assert len(retried) == 1
    replayer = Replayer(workflows=[ItemWorkflow], data_converter=pydantic_data_converter)
    await replayer.replay_workflow(history)


async def test_json_tool_mode_asks_each_step_as_a_json_object(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    model_agent(space, "sender", model_server, tool_mode="json",
                prices="{input_per_million: 1000, output_per_million: 2000}")
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(
        Answer.reply('{"tool": "write_file", "arguments": {"path": "a.md", "content": "hi"}}'),
        Answer.reply('{"final": "wrote a.md"}'))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    first = model_server.model.received[0].body
    assert "tools" not in first
    assert first["response_format"]["json_schema"]["name"] == "step"
    assert sent(model_server, 1)[1] == {"role": "user",
                                        "content": "Result of write_file: wrote 2 bytes to a.md"}
    run = Path(record.item(item_id).run_folder)
    assert (run / "Send" / "answer.md").read_text() == "wrote a.md"
    shown = await Bees(Computer.load()).item_details(item_id)
    assert isinstance(shown, ItemDetails)
    assert shown.models[0].cost == pytest.approx(2 * (10 * 1000 + 5 * 2000) / 1_000_000)


async def test_a_json_reply_cut_at_max_reply_tokens_says_so_and_names_the_setting(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    model_agent(space, "sender", model_server, tool_mode="json", max_reply_tokens=400)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    cut = '{"tool": "write_file",\n "arguments": {\n  "path": "a.md",\n  "content":\n' \
          '    "a long body that'
    model_server.model.push(Answer.reply(cut, completion_tokens=400, finish_reason="length"),
                            Answer.reply(cut, completion_tokens=400, finish_reason="length"))
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "failed")
    said = ("the model's reply was cut at max_reply_tokens (400) before its JSON closed: "
            "raise max_reply_tokens in agents/sender.yaml")
    assert row.reason == f"agent sender: {said}"
    assert sent(model_server, 1)[1] == {"role": "user",
                                        "content": f"{said}. Answer again, as asked."}


async def test_a_reply_that_is_not_json_says_where_without_a_doubled_at(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    model_agent(space, "sender", model_server, tool_mode="json")
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(Answer.reply('{"final": "unclosed'),
                            Answer.reply('{"final": "done"}'))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    assert sent(model_server, 1)[1] == {
        "role": "user", "content": "the model's answer is not JSON: Unterminated string "
                                   "starting at line 1 column 11. Answer again, as asked."}


def probe_addon(space: Space, program: str) -> None:
    """Add-on ``probe.out``, a read action running ``program`` with Python."""
    space.write("addons/probe.yaml", "actions:\n  out:\n    kind: read\n"
                f"    command: {json.dumps([sys.executable, '-c', program])}\n")


async def test_a_large_tool_result_reaches_the_model_cut_with_the_cut_said(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    probe_addon(space, "import sys; sys.stdout.write('x' * 200_000)")
    model_agent(space, "sender", model_server, tools=["probe.out"])
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(Answer.tool_calls(("c1", "probe__out", "{}")), Answer.reply("ok"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    assert sent(model_server, 1)[1] == {
        "role": "tool", "tool_call_id": "c1",
        "content": "x" * 64_000 + "\n[result cut at 64 KB of 200 KB]"}


async def test_a_binary_tool_result_is_refused_to_the_model_with_the_reason(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    probe_addon(space, "import sys; sys.stdout.buffer.write(bytes([0x89, 0x50, 0xff, 0xfe]))")
    model_agent(space, "sender", model_server, tools=["probe.out"])
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(Answer.tool_calls(("c1", "probe__out", "{}")), Answer.reply("ok"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    assert sent(model_server, 1)[1] == {
        "role": "tool", "tool_call_id": "c1",
        "content": "refused: the tool ran, but its result is binary (not UTF-8 text), which "
                   "this model cannot read"}
