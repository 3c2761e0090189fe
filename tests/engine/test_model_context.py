"""A model agent's context and sampling settings on a dev server against a scripted model
(issue 26, point 7): old tool results shortened to fit ``context_tokens``; ``temperature``
and ``seed`` in every request."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

import pytest_asyncio
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.engine.models import task_queue
from bees_cli.machine.identity import load_identity, set_identity
from bees_cli.machine.paths import data_dir
from bees_cli.record.local import LocalRecord
from bees_cli.usecases.liveness import note_worker
from tests.agents.model_server import Answer, ScriptedServer
from tests.engine.conftest import Space
from tests.engine.test_model_loop import loop_worker, model_agent, model_server, result, sent
from tests.engine.test_rules import SEND, start

__all__ = ["model_server"]  # the fixture, imported

RESULT_CHARS = 6_000


@pytest_asyncio.fixture
async def worker(dev_env: WorkflowEnvironment, space: Space,
                 record: LocalRecord) -> AsyncIterator[Worker]:
    set_identity(person="maya@example.com")
    note_worker(data_dir(), dev_env.client.service_client.config.target_host,
                task_queue(load_identity().machine_id))
    async with loop_worker(dev_env, record) as running:
        yield running


def docs_addon(space: Space) -> None:
    """Declare add-on ``docs`` whose read action ``fetch`` prints RESULT_CHARS ``d``s."""
    script = space.root.parent / "fetch.py"
    script.write_text(f"print('d' * {RESULT_CHARS}, end='')\n")
    space.write("addons/docs.yaml", f"""\
        actions:
          fetch: {{kind: read, command: ["{sys.executable}", "{script}"]}}
        """)


async def test_old_tool_results_are_shortened_to_fit_the_context_and_the_last_turn_is_whole(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    """Two results of 6,000 characters (~1,500 tokens each) do not fit a context of 3,000
    tokens less 100 for the reply: the older one goes as a note, the newer one whole."""
    docs_addon(space)
    model_agent(space, "sender", model_server, tools=["docs.fetch"], file_tools="false",
                context_tokens=3000, max_reply_tokens=100)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(
        Answer.tool_calls(("c1", "docs__fetch", "{}")),
        Answer.tool_calls(("c2", "docs__fetch", "{}")),
        Answer.reply("done"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    first = {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "docs__fetch", "arguments": "{}"}}]}
    second = {"role": "assistant", "tool_calls": [{"id": "c2", "type": "function", "function": {
        "name": "docs__fetch", "arguments": "{}"}}]}
    whole = "d" * RESULT_CHARS
    assert sent(model_server, 1) == [first, {"role": "tool", "tool_call_id": "c1",
                                             "content": whole}]
    assert sent(model_server, 2) == [
        first, {"role": "tool", "tool_call_id": "c1",
                "content": "[shortened: 6,000 characters of docs.fetch's result]"},
        second, {"role": "tool", "tool_call_id": "c2", "content": whole}]


async def test_temperature_and_seed_reach_the_server_in_every_request(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    model_agent(space, "sender", model_server, temperature=0.2, seed=7)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(
        Answer.tool_calls(("c1", "write_file", '{"path": "notes.md", "content": "hi"}')),
        Answer.reply("done"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    bodies = [r.body for r in model_server.model.received]
    assert [(b["temperature"], b["seed"]) for b in bodies] == [(0.2, 7), (0.2, 7)]


async def test_without_sampling_settings_the_server_chooses(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    model_agent(space, "sender", model_server)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(Answer.reply("done"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    body = model_server.model.received[0].body
    assert "temperature" not in body and "seed" not in body
