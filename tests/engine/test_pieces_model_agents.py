"""Pieces with model agents (issue 14), on a real dev server and a scripted model: a model
writer hands a piece to a model researcher through its built-in ``delegate`` tool, and the
researcher's answer and files come back as the tool's result; a refused delegation is told
back to the model, which decides."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.engine.client import EngineGateway
from bees_cli.engine.models import task_queue
from bees_cli.engine.worker import make_worker
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity, set_identity
from bees_cli.machine.paths import data_dir
from bees_cli.record.local import LocalRecord
from bees_cli.record.pieces import PieceResult, PieceStatus
from bees_cli.record.views import piece_tree
from bees_cli.usecases.bees import Bees
from bees_cli.usecases.delegate import delegate_tool_call
from bees_cli.usecases.liveness import note_worker
from tests.agents.model_server import Answer, ScriptedServer, serve
from tests.engine.conftest import Space
from tests.engine.test_pieces import DRAFT
from tests.engine.test_rules import start


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with serve() as server:
        yield server


@pytest_asyncio.fixture
async def worker(dev_env: WorkflowEnvironment, space: Space,
                 record: LocalRecord) -> AsyncIterator[Worker]:
    """This computer's worker whose model agents' ``delegate`` goes through bees delegate."""
    set_identity(person="maya@example.com")
    queue = task_queue(load_identity().machine_id)
    note_worker(data_dir(), dev_env.client.service_client.config.target_host, queue)
    computer = Computer.load()
    bees = Bees(computer, engine=EngineGateway(dev_env.client))

    async def delegate(arguments: dict[str, Any], env: dict[str, str]) -> str:
        return await delegate_tool_call(bees, arguments, env)

    async with make_worker(dev_env.client, queue, record, computer=computer,
                           heartbeat_every=0.5, delegate=delegate) as running:
        yield running


def model_agent(space: Space, name: str, server: ScriptedServer) -> None:
    space.write(f"agents/{name}.yaml", f"instructions: {name}\nrunner:\n  model:\n"
                f"    base_url: {server.base_url}\n    name: scripted\n")


def _tool_results(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


async def test_a_model_writer_delegates_to_a_model_researcher_and_uses_its_answer(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        server: ScriptedServer) -> None:
    model_agent(space, "writer", server)
    model_agent(space, "alpha", server)
    space.write("processes/p.yaml", DRAFT.format(approval="none"))
    server.model.push(
        Answer.tool_calls(("c1", "delegate", json.dumps(
            {"agent": "alpha", "task": "find the figures", "input": {"week": 2}}))),
        Answer.tool_calls(("a1", "write_file", '{"path": "figures.md", "content": "42"}'),
                          prompt_tokens=30, completion_tokens=7),
        Answer.reply("the figure is 42", prompt_tokens=40, completion_tokens=6),
        Answer.reply("draft: the figure is 42"))
    item_id = await start(dev_env, record, space, "p")
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    writer_first, alpha_first, _, writer_last = (r.body for r in server.model.received)
    # the writer is offered delegate; the researcher reads its task and input
    assert "delegate" in [t["function"]["name"] for t in writer_first["tools"]]
    assert alpha_first["messages"][1]["content"].endswith(
        "A piece of work handed to you by agent writer: find the figures\n"
        'Input (JSON): {"week": 2}\n'
        "Work in your own folder; your final answer (and the files you write there) go back "
        "to the caller.")
    piece = record.pieces(item_id)[0]
    assert _tool_results(writer_last) == [
        f"the figure is 42\n\nFiles in {piece.folder}:\n- answer.md\n- figures.md\n"]
    assert (piece.status, piece.agent, piece.prompt_tokens, piece.completion_tokens) == (
        PieceStatus.FINISHED, "alpha", 70, 13)
    assert piece.result == PieceResult(text="the figure is 42",
                                       files=["answer.md", "figures.md"])
    assert (Path(piece.folder) / "figures.md").read_text() == "42"
    run = Path(record.item(item_id).run_folder)
    assert (run / "Draft" / "answer.md").read_text() == "draft: the figure is 42"
    assert (run / "logs" / "Draft" / "pieces" / f"{piece.piece}.transcript.jsonl").is_file()
    assert piece_tree(record.pieces(item_id)) == [
        "  Draft round 1",
        "    r1-a1-p1  alpha (named by the caller)  finished  in 70 / out 13 tokens"]


async def test_a_refused_delegation_is_told_back_to_the_model(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        server: ScriptedServer) -> None:
    model_agent(space, "writer", server)
    space.write("processes/p.yaml", DRAFT.format(approval="none"))
    server.model.push(
        Answer.tool_calls(("c1", "delegate", '{"agent": "writer", "task": "do it yourself"}')),
        Answer.reply("done alone"))
    item_id = await start(dev_env, record, space, "p")
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    assert _tool_results(server.model.received[1].body) == [
        f"refused: item {item_id}: cycle: agent writer is already in the chain of callers "
        "(writer -> writer)"]
    assert record.pieces(item_id) == []
