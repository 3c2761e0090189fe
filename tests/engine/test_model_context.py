"""A model agent's context and sampling settings on a dev server against a scripted model
(issue 26, point 7): old tool results shortened to fit ``context_tokens``; ``temperature``
and ``seed`` in every request."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

import pytest_asyncio
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.engine.model_loop import batches
from bees_cli.engine.model_models import ToolAsk
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


async def test_without_context_tokens_the_servers_context_counts(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    """The agent does not say; the server's ``/props`` says 3,000 tokens (as llama.cpp)."""
    docs_addon(space)
    model_server.model.props = {"default_generation_settings": {"n_ctx": 3000}}
    model_agent(space, "sender", model_server, tools=["docs.fetch"], file_tools="false",
                max_reply_tokens=100)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(
        Answer.tool_calls(("c1", "docs__fetch", "{}")),
        Answer.tool_calls(("c2", "docs__fetch", "{}")),
        Answer.reply("done"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    assert [m.get("content") for m in sent(model_server, 2)[1::2]] == [
        "[shortened: 6,000 characters of docs.fetch's result]", "d" * RESULT_CHARS]


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


def meeting_addon(space: Space) -> None:
    """Declare add-on ``docs``: read action ``meet`` marks its call ``n`` as started, then
    waits (at most 10 s) for the other call's mark: ``together`` when both ran at once,
    ``alone`` when it waited in vain (the calls ran one after the other); send action
    ``note`` appends its ``n`` to ``noted.txt`` beside the workspace."""
    folder = space.root.parent
    script = folder / "meet.py"
    script.write_text(f"""\
import json, pathlib, sys, time
n = json.load(sys.stdin)["n"]
folder = pathlib.Path({str(folder)!r})
(folder / f"started-{{n}}").touch()
other = folder / f"started-{{3 - n}}"
deadline = time.monotonic() + 10
while not other.exists() and time.monotonic() < deadline:
    time.sleep(0.05)
print(("together" if other.exists() else "alone") + f" {{n}}", end="")
""")
    note = folder / "note.py"
    note.write_text(f"""\
import json, pathlib, sys
with open({str(folder / 'noted.txt')!r}, "a") as handle:
    handle.write(str(json.load(sys.stdin)["n"]) + "\\n")
print("noted", end="")
""")
    space.write("addons/docs.yaml", f"""\
        actions:
          meet: {{kind: read, command: ["{sys.executable}", "{script}"]}}
          note: {{kind: send, command: ["{sys.executable}", "{note}"]}}
        """)


async def test_read_calls_of_one_reply_run_together_and_gated_ones_in_the_order_asked(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    meeting_addon(space)
    model_agent(space, "sender", model_server, tools=["docs.meet", "docs.note"],
                file_tools="false")
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(
        Answer.tool_calls(("c1", "docs__meet", '{"n": 1}'), ("c2", "docs__meet", '{"n": 2}'),
                          ("c3", "docs__note", '{"n": 3}'), ("c4", "docs__note", '{"n": 4}')),
        Answer.reply("done"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    assert [m.get("content") for m in sent(model_server, 1)[1:]] == [
        "together 1", "together 2", "noted", "noted"]
    assert (space.root.parent / "noted.txt").read_text() == "3\n4\n"


def test_reads_next_to_one_another_make_one_batch_every_other_call_its_own() -> None:
    asked = [ToolAsk(call_id=f"c{i}", tool=tool, read=read) for i, (tool, read) in enumerate(
        [("read_file", True), ("docs.meet", True), ("mail.send", False), ("read_file", True),
         ("write_file", False), ("write_file", False), ("docs.meet", True)])]
    assert [[c.call_id for c in batch] for batch in batches(asked)] == [
        ["c0", "c1"], ["c2"], ["c3"], ["c4"], ["c5"], ["c6"]]
    assert batches([]) == []
