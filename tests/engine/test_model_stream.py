"""A model stage's call streams where the server does (issue 26, point 2), on a real dev
server against a scripted model: its progress shows in ``bees status --json``, ``bees item
show`` and the app while it streams, the partial text goes to the transcript as it comes,
and a server that does not stream still answers (and is not asked to stream again)."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.engine.model_activities import ModelActivities
from bees_cli.engine.transcript import transcript_lines, transcript_path
from bees_cli.record.local import LocalRecord
from tests.agents.model_server import Answer, ScriptedServer, serve
from tests.conftest import BeesRunner
from tests.engine.conftest import Space, until
from tests.engine.test_model_loop import loop_worker, model_agent, note_this_worker, result
from tests.engine.test_model_waits import app_status
from tests.engine.test_rules import SEND, start

SO_FAR = "turn 1, 2 tokens so far"


@pytest.fixture
def model_server() -> Iterator[ScriptedServer]:
    with serve() as server:
        yield server


@pytest_asyncio.fixture
async def worker(dev_env: WorkflowEnvironment, record: LocalRecord) -> AsyncIterator[Worker]:
    """This computer's worker, showing a streamed call's progress at every chunk."""
    note_this_worker(dev_env)
    async with loop_worker(dev_env, record, models=lambda act: ModelActivities(
            record, act=act, heartbeat_every=0.5, progress_every=0)) as running:
        yield running


async def test_a_streamed_reply_shows_its_progress_and_partial_text_while_it_streams(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        bees: BeesRunner, model_server: ScriptedServer) -> None:
    model_agent(space, "sender", model_server)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    gate = threading.Event()
    model_server.model.push(Answer.streamed(
        Answer.delta("Hel"), Answer.delta("lo"), Answer.delta(" there"),
        Answer.delta(finish_reason="stop"), Answer.usage_chunk(20, 3), pause=(2, gate)))
    item_id = await start(dev_env, record, space, "p")
    try:
        # the server holds the stream open after two chunks until the status is read
        row = await until(record, item_id, lambda r: r.reason == SO_FAR)
        assert row.status_text == f"running: {SO_FAR}"
        (mine,) = [i for i in json.loads(bees("status", "--json").stdout)["items"]
                   if i["item_id"] == item_id]
        assert (mine["stage"], mine["status"], mine["reason"]) == ("Send", "running", SO_FAR)
        shown = bees("item", "show", item_id).stdout.splitlines()
        assert f"status      running: {SO_FAR}" in shown
        as_json = json.loads(bees("item", "show", item_id, "--json").stdout)["item"]
        assert (as_json["status"], as_json["reason"]) == ("running", SO_FAR)
        assert app_status(space, item_id) == ("running", SO_FAR)
        run = Path(row.run_folder)
        partial = [(e["kind"], e["turn"], e["text"], e["tokens"])
                   for e in transcript_lines(transcript_path(str(run), "Send"))]
        assert partial == [("partial", 1, "Hel", 1), ("partial", 1, "lo", 2)]
    finally:
        gate.set()
    assert await result(dev_env, item_id) == "done"
    assert (run / "Send" / "answer.md").read_text() == "Hello there"
    lines = transcript_lines(transcript_path(str(run), "Send"))
    assert [e["kind"] for e in lines] == ["partial", "partial", "partial", "opening", "reply"]
    assert lines[2]["text"] == " there"
    assert (lines[-1]["prompt_tokens"], lines[-1]["completion_tokens"]) == (20, 3)
    assert lines[-1]["response"]["choices"][0]["message"]["content"] == "Hello there"
    assert model_server.model.received[0].body["stream"] is True


async def test_a_server_that_does_not_stream_still_answers_and_is_not_asked_again(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    model_agent(space, "sender", model_server)
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(
        Answer.tool_calls(("c1", "write_file", '{"path": "notes.md", "content": "hi"}')),
        Answer.reply("all written"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    run = Path(record.item(item_id).run_folder)
    assert (run / "Send" / "notes.md").read_text() == "hi"
    assert (run / "Send" / "answer.md").read_text() == "all written"
    assert [r.body["stream"] for r in model_server.model.received] == [True, False]
    assert record.item(item_id).reason is None

