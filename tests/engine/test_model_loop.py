"""The model loop on a real dev server against a scripted model (issue 13, points 2–5 and 7)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.engine.client import EngineGateway
from bees_cli.engine.model_activities import transcript_lines, transcript_path
from bees_cli.engine.model_models import MODEL_CALL_ACTIVITY, TOOL_CALL_ACTIVITY
from bees_cli.engine.models import task_queue
from bees_cli.engine.worker import make_worker
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity, set_identity
from bees_cli.machine.paths import data_dir
from bees_cli.record.local import LocalRecord
from bees_cli.usecases.actions import run_action
from bees_cli.usecases.bees import Bees
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


def loop_worker(env: WorkflowEnvironment, record: LocalRecord) -> Worker:
    """This computer's worker whose model agents' add-on tools go through `bees action`."""
    queue = task_queue(load_identity().machine_id)
    computer = Computer.load()
    bees = Bees(computer, engine=EngineGateway(env.client))

    async def act(name: str, text: str, environ: dict[str, str]) -> Any:
        return await run_action(bees, name, text, env=environ)

    return make_worker(env.client, queue, record, computer=computer, heartbeat_every=0.5,
                       act=act)


@pytest_asyncio.fixture
async def worker(dev_env: WorkflowEnvironment, space: Space,
                 record: LocalRecord) -> AsyncIterator[Worker]:
    set_identity(person="maya@example.com")
    note_worker(data_dir(), dev_env.client.service_client.config.target_host,
                task_queue(load_identity().machine_id))
    async with loop_worker(dev_env, record) as running:
        yield running


def model_agent(space: Space, name: str, server: ScriptedServer, *, tools: list[str] = (),
                **runner: object) -> None:
    lines = ["instructions: write it", f"tools: [{', '.join(tools)}]", "runner:",
             "  model:", f"    base_url: {server.base_url}", "    name: scripted"]
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
