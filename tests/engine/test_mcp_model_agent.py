"""A model agent offered an MCP add-on's tool with the tool's own input schema and
description (issue 25, point 1), calling it through the same gate as ``bees action``."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.record.local import LocalRecord, item_journal
from tests.agents.model_server import Answer, ScriptedServer
from tests.agents.test_mcp_addon import SEND_SCHEMA
from tests.engine.conftest import Space
from tests.engine.test_model_loop import (
    model_agent,
    model_server,  # noqa: F401 - the fixture
    result,
    sent,
    worker,  # noqa: F401 - the fixture
)
from tests.engine.test_rules import SEND, start
from tests.mcp_server import SCRIPT


async def test_a_model_agent_gets_the_tools_schema_and_its_call_runs_once(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker, model_server: ScriptedServer,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    log = space.root.parent / "notes.log"
    monkeypatch.setenv("NOTES_LOG", str(log))
    space.write("addons/notes.yaml", f'mcp:\n  command: ["${{BEES_PYTHON}}", "{SCRIPT}"]\n'
                "  env: [NOTES_LOG]\n  start_seconds: 20\nkinds:\n  send_email: send\n")
    model_agent(space, "sender", model_server, tools=["notes.send_email"])
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(
        Answer.tool_calls(("c1", "notes__send_email",
                           '{"to": "team@example.com", "subject": "Week 2"}')),
        Answer.reply("sent"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    offered = model_server.model.received[0].body["tools"]
    assert offered[-1] == {"type": "function", "function": {
        "name": "notes__send_email", "description": "Send one mail.",
        "parameters": SEND_SCHEMA}}
    assert sent(model_server, 1)[1] == {"role": "tool", "tool_call_id": "c1",
                                        "content": "sent to team@example.com"}
    assert Path(log).read_text().splitlines() == [
        'send_email {"subject": "Week 2", "to": "team@example.com"}']
    assert [(j["action"], j["kind"]) for j in item_journal(item_id)] == [
        ("notes.send_email", "send")]


async def test_a_model_agents_call_to_a_server_that_is_down_comes_back_as_failed(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker, model_server: ScriptedServer,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The server answers in the workspace (eligibility, the list of tools) and is down
    where the call starts it (the stage's folder): the model reads why, the stage goes on."""
    log = space.root.parent / "notes.log"
    monkeypatch.setenv("NOTES_LOG", str(log))
    space.write("addons/notes.yaml", f'mcp:\n  command: ["${{BEES_PYTHON}}", "{SCRIPT}", '
                '"flaky", "${BEES_WORKSPACE}"]\n  env: [NOTES_LOG]\n  start_seconds: 20\n'
                "kinds:\n  send_email: send\n")
    model_agent(space, "sender", model_server, tools=["notes.send_email"])
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(
        Answer.tool_calls(("c1", "notes__send_email",
                           '{"to": "team@example.com", "subject": "Week 2"}')),
        Answer.reply("not sent"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    assert sent(model_server, 1)[1] == {
        "role": "tool", "tool_call_id": "c1",
        "content": "failed: notes.send_email was not run: server exited: notes: cannot open "
                   "the notes file"}
    assert not log.exists()
