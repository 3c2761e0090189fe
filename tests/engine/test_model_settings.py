"""A model agent's settings for small models, on a dev server against a scripted model.

``file_tools: false``, ``attach``, ``required_tools`` and strings bounded by
``max_reply_tokens`` (issue 13, point 5): what each request asks the model for.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.engine.models import task_queue
from bees_cli.engine.transcript import transcript_lines, transcript_path
from bees_cli.machine.identity import load_identity, set_identity
from bees_cli.machine.paths import data_dir
from bees_cli.record.local import LocalRecord
from bees_cli.usecases.liveness import note_worker
from tests.agents.model_server import Answer, ScriptedServer
from tests.engine.conftest import Space, until
from tests.engine.test_model_loop import loop_worker, model_agent, model_server, result
from tests.engine.test_rules import SEND, decide, mail_addon, start

__all__ = ["model_server"]  # the fixture, imported

DRAFT_SEND = """\
stages:
  - name: Draft
    kind: work
    agents: [writer]
  - name: Send
    kind: work
    agents: [sender]
  - name: Done
    kind: done
"""


@pytest_asyncio.fixture
async def worker(dev_env: WorkflowEnvironment, space: Space,
                 record: LocalRecord) -> AsyncIterator[Worker]:
    set_identity(person="maya@example.com")
    note_worker(data_dir(), dev_env.client.service_client.config.target_host,
                task_queue(load_identity().machine_id))
    async with loop_worker(dev_env, record) as running:
        yield running


def schema(server: ScriptedServer, index: int) -> dict[str, Any]:
    """The step schema request ``index`` asked for."""
    fmt = server.model.received[index].body["response_format"]
    return dict(fmt["json_schema"]["schema"])


async def test_a_small_models_agents_answer_in_one_step_and_send_exactly_once(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer, with no file tools, may only answer (its text bounded to fit 100 tokens);
    the sender sees the draft in its task, may only call mail.send first, then only answer."""
    log = mail_addon(space, declared=True)
    monkeypatch.setenv("ADDON_LOG", str(log))
    model_agent(space, "writer", model_server, tool_mode="json", file_tools="false",
                max_reply_tokens=100)
    model_agent(space, "sender", model_server, tools=["mail.send"], tool_mode="json",
                file_tools="false", attach="[Draft]", required_tools="[mail.send]")
    space.write("processes/p.yaml", DRAFT_SEND)
    model_server.model.push(
        Answer.reply('{"final": "the report"}'),
        Answer.reply('{"tool": "mail__send", "arguments": {"to": "all"}}'),
        Answer.reply('{"final": "sent"}'))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    assert log.read_text().splitlines() == ['mail.send {"to": "all"}']
    final = {"type": "object", "properties": {"final": {"type": "string"}},
             "required": ["final"], "additionalProperties": False}
    bounded = {**final, "properties": {"final": {"type": "string", "maxLength": 60}}}
    assert schema(model_server, 0) == {"anyOf": [bounded]}
    assert [b["properties"].get("tool") for b in schema(model_server, 1)["anyOf"]] == [
        {"const": "mail__send"}]
    assert schema(model_server, 2) == {"anyOf": [final]}
    bodies = [r.body for r in model_server.model.received]
    assert all("tools" not in body for body in bodies)
    assert bodies[0]["messages"][0]["content"] == (
        'write it\n\nAnswer with one JSON object: {"final": TEXT}')
    task = bodies[1]["messages"][1]["content"]
    assert task.endswith("Earlier stages' folders: Draft\n--- Draft/answer.md ---\n"
                         "the report\n--- end of Draft/answer.md ---")
    run = Path(record.item(item_id).run_folder)
    assert (run / "Send" / "answer.md").read_text() == "sent"


async def test_a_denied_required_tool_is_offered_again_and_its_corrected_call_held_anew(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A denied call did not run: the required tool stays offered (the final answer still
    left out), the model's corrected call is held for approval again and runs once."""
    log = mail_addon(space, declared=True)
    monkeypatch.setenv("ADDON_LOG", str(log))
    model_agent(space, "sender", model_server, tools=["mail.send"], tool_mode="json",
                file_tools="false", required_tools="[mail.send]")
    space.write("processes/p.yaml", SEND.format(approval="required"))
    model_server.model.push(
        Answer.reply('{"tool": "mail__send", "arguments": {"to": "all"}}'),
        Answer.reply('{"tool": "mail__send", "arguments": {"to": "team"}}'),
        Answer.reply('{"final": "sent"}'))
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "waiting for approval")
    assert row.status_text == 'waiting for approval: mail.send {"to": "all"}'
    await asyncio.to_thread(decide, item_id, approve=False, request_id=None,
                            reason="wrong address")
    row = await until(record, item_id, lambda r: r.status == "waiting for approval"
                      and "team" in r.status_text)
    assert row.status_text == 'waiting for approval: mail.send {"to": "team"}'
    assert len(model_server.model.received) == 2
    offered = [b["properties"].get("tool", {}).get("const")
               for b in schema(model_server, 1)["anyOf"]]
    assert offered == ["mail__send"]  # the tool again, and no final answer yet
    assert model_server.model.received[1].body["messages"][-1] == {
        "role": "user", "content": "Result of mail.send: refused: mail.send was denied by "
        "maya@example.com: wrong address"}
    assert not log.exists()
    done = await asyncio.to_thread(decide, item_id, approve=True, request_id=None,
                                   reason=None)
    assert done["decided"] == [2]
    assert await result(dev_env, item_id) == "done"
    assert log.read_text().splitlines() == ['mail.send {"to": "team"}']
    assert len(model_server.model.received) == 3
    assert schema(model_server, 2) == {"anyOf": [{
        "type": "object", "properties": {"final": {"type": "string"}},
        "required": ["final"], "additionalProperties": False}]}


async def test_a_required_tool_whose_input_was_refused_is_offered_again(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """An input the action's schema refuses is not run: mail.send stays offered."""
    log = mail_addon(space, declared=True)
    monkeypatch.setenv("ADDON_LOG", str(log))
    mail = space.root / "addons" / "mail.yaml"
    mail.write_text(mail.read_text().replace(
        "kind: send,", 'kind: send, input: {type: object, properties: {to: {type: string, '
        'format: email}}, required: [to]},'))
    model_agent(space, "sender", model_server, tools=["mail.send"], tool_mode="json",
                file_tools="false", required_tools="[mail.send]")
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(
        Answer.reply('{"tool": "mail__send", "arguments": {"to": "the team"}}'),
        Answer.reply('{"tool": "mail__send", "arguments": {"to": "team@example.com"}}'),
        Answer.reply('{"final": "sent"}'))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    assert [b["properties"].get("tool", {}).get("const")
            for b in schema(model_server, 1)["anyOf"]] == ["mail__send"]
    assert [list(b["properties"]) for b in schema(model_server, 2)["anyOf"]] == [["final"]]
    assert log.read_text().splitlines() == ['mail.send {"to": "team@example.com"}']
    lines = transcript_lines(transcript_path(record.item(item_id).run_folder, "Send"))
    assert [e["outcome"] for e in lines if e["kind"] == "tool"] == ["not_run", "ran"]
