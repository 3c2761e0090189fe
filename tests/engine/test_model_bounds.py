"""A model stage's calls are bounded (issue 26, point 1), on a real dev server against a
scripted model: a dripping reply is cut at the call's deadline and tried again, a huge reply
fails the stage with the plain reason, a reply of 5,000 tool calls runs none of them."""

from __future__ import annotations

from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.engine.transcript import transcript_lines, transcript_path
from bees_cli.record.local import LocalRecord
from tests.agents.model_server import Answer, ScriptedServer
from tests.engine.conftest import Space, until
from tests.engine.test_model_loop import model_server, result, sent, worker
from tests.engine.test_rules import SEND, start

__all__ = ["model_server", "worker"]  # fixtures used here

CALLS = 5_000
"""Tool calls in one hostile reply."""


def bounded_agent(space: Space, server: ScriptedServer, **model: object) -> None:
    """Agent ``sender`` on ``server`` with the given ``runner.model`` settings."""
    lines = ["instructions: write it", "tools: []", "runner:", "  model:",
             f"    base_url: {server.base_url}", "    name: scripted"]
    lines += [f"    {key}: {value}" for key, value in model.items()]
    space.write("agents/sender.yaml", "\n".join(lines) + "\n")


def port_of(server: ScriptedServer) -> str:
    return server.base_url.split(":")[2].split("/")[0]


async def test_a_dripping_reply_is_cut_at_the_deadline_and_the_call_tried_again(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    bounded_agent(space, model_server, timeout_seconds=5, deadline_seconds=2)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(Answer.reply("too late").dripped(40, 0.1), Answer.reply("on time"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    assert len(model_server.model.received) == 2
    assert model_server.model.sent[0] < 40
    history = await dev_env.client.get_workflow_handle(item_id).fetch_history()
    (second,) = [e.activity_task_started_event_attributes for e in history.events
                 if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
                 and e.activity_task_started_event_attributes.attempt == 2]
    assert second.last_failure.message == (
        f"http://127.0.0.1:{port_of(model_server)}/v1/chat/completions did not finish its "
        "reply within its deadline of 2 s")
    run = Path(record.item(item_id).run_folder)
    assert (run / "Send" / "answer.md").read_text() == "on time"


async def test_a_huge_reply_fails_the_stage_with_the_plain_reason_and_is_not_retried(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    bounded_agent(space, model_server, max_reply_bytes=1_000_000)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(Answer.huge(50_000_000))
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "failed")
    assert row.reason == (
        "agent sender: the reply was larger than 1 MB and was cut off there "
        f"(http://127.0.0.1:{port_of(model_server)}/v1/chat/completions)")
    assert len(model_server.model.received) == 1
    assert model_server.model.sent[0] < 10_000_000


async def test_a_reply_of_5000_tool_calls_runs_none_tells_the_model_then_fails_the_stage(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    bounded_agent(space, model_server)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    many = [(f"c{i}", "write_file", f'{{"path": "f{i}.md", "content": "x"}}')
            for i in range(CALLS)]
    model_server.model.push(Answer.tool_calls(*many), Answer.tool_calls(*many))
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "failed")
    told = ("the reply asked for 5000 tool calls, more than the 50 one reply may ask "
            "(runner.max_tool_calls); none of them ran")
    assert row.reason == f"agent sender: {told}"
    assert len(model_server.model.received) == 2
    assert sent(model_server, 1) == [
        {"role": "assistant", "content": ""},
        {"role": "user", "content": f"{told}. Answer again, as asked."}]
    run = Path(record.item(item_id).run_folder)
    assert not list((run / "Send").glob("f*.md"))
    lines = transcript_lines(transcript_path(str(run), "Send"))
    assert [e["kind"] for e in lines] == ["opening", "reply", "reply"]
