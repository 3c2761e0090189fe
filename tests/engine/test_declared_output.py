"""A work stage's declared output with a model agent (issue 26, point 5), on a dev server
against a scripted model: a final answer that did not produce it is told back once, then the
stage fails with the reason."""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.record.local import LocalRecord
from tests.agents.model_server import Answer, ScriptedServer
from tests.engine.conftest import Space, until
from tests.engine.test_model_loop import model_agent, model_server, result, sent
from tests.engine.test_model_settings import worker
from tests.engine.test_rules import start

__all__ = ["model_server", "worker"]  # the fixtures, imported

DECLARED = """\
stages:
  - name: Draft
    kind: work
    agents: [writer]
    output: {file: summary.json, schema: {type: object, required: [id]}}
  - name: Done
    kind: done
"""

TOLD = {"role": "user", "content": "its output summary.json does not exist in the stage's "
        "folder; write it before your final answer"}


async def test_a_final_answer_without_the_declared_output_is_told_once_then_fails(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    model_agent(space, "writer", model_server)
    space.write("processes/p.yaml", DECLARED)
    model_server.model.push(Answer.reply("done"), Answer.reply("done, really"))
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "failed")
    assert row.reason == ("agent writer: its output summary.json does not exist in the "
                          "stage's folder, also after the model was told once")
    assert len(model_server.model.received) == 2
    assert sent(model_server, 1) == [{"role": "assistant", "content": "done"}, TOLD]


async def test_a_model_told_then_writing_its_output_finishes(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:
    model_agent(space, "writer", model_server)
    space.write("processes/p.yaml", DECLARED)
    model_server.model.push(
        Answer.reply("done"),
        Answer.tool_calls(("c1", "write_file",
                           '{"path": "summary.json", "content": "{\\"id\\": \\"B-1\\"}"}')),
        Answer.reply("written"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    run = Path(record.item(item_id).run_folder)
    assert (run / "Draft" / "summary.json").read_text() == '{"id": "B-1"}'
    assert sent(model_server, 1) == [{"role": "assistant", "content": "done"}, TOLD]
