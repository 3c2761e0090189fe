"""Grounded arguments (issue 26, point 6) on a real dev server with a scripted model: the tool's
schema sent to the server lists the ids that exist in the folder; an id not there is refused
and told to the model before anything runs; a listed id runs once."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.record.local import LocalRecord
from tests.agents.model_server import Answer, ScriptedServer
from tests.engine.conftest import Space
from tests.engine.test_model_loop import (
    model_agent,
    model_server,  # noqa: F401 - the fixture
    result,
    sent,
    worker,  # noqa: F401 - the fixture
)
from tests.engine.test_rules import start

HERE = Path(__file__).resolve().parent
PROCESS = """\
stages:
  - name: File
    kind: work
    agents: [filer]
    reads: [bug-reports]
  - name: Done
    kind: done
"""
REFUSED = ("failed: tracker.file: bug 'BUG-9' is not among bug-reports/*.md: BUG-1, BUG-2")


def tracker(space: Space) -> Path:
    """Declare add-on ``tracker`` (file: kind write, ``bug`` grounded in ``bug-reports``), and
    folder ``bug-reports`` linked with two reports; return the add-on's log file."""
    log = space.root.parent / "addon.log"
    space.write("addons/tracker.yaml", f"""\
        actions:
          file:
            kind: write
            command: ["{sys.executable}", "{HERE / "addon_script.py"}"]
            input:
              type: object
              required: [bug]
              properties:
                bug: {{type: string, enum_from: {{folder: bug-reports, glob: "*.md", field: id}}}}
        connection: {{env: [ADDON_LOG]}}
        """)
    space.write("folders/bug-reports.yaml", "path: bug-reports\n")
    reports = space.root / "bug-reports"
    reports.mkdir()
    for number in (2, 1):
        (reports / f"r{number}.md").write_text(f"---\nid: BUG-{number}\n---\nBroken.\n")
    return log


@pytest.mark.parametrize("mode", ["native", "json"])
async def test_the_model_is_offered_the_ids_there_and_one_not_there_is_refused(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker, model_server: ScriptedServer,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    log = tracker(space)
    monkeypatch.setenv("ADDON_LOG", str(log))
    model_agent(space, "filer", model_server, tools=["tracker.file"], tool_mode=mode)
    space.write("processes/p.yaml", PROCESS)
    if mode == "native":
        model_server.model.push(Answer.tool_calls(("c1", "tracker__file", '{"bug": "BUG-9"}')),
                                Answer.tool_calls(("c2", "tracker__file", '{"bug": "BUG-2"}')),
                                Answer.reply("filed"))
    else:
        model_server.model.push(
            Answer.reply('{"tool": "tracker__file", "arguments": {"bug": "BUG-9"}}'),
            Answer.reply('{"tool": "tracker__file", "arguments": {"bug": "BUG-2"}}'),
            Answer.reply('{"final": "filed"}'))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    first = model_server.model.received[0].body
    if mode == "native":
        (offered,) = [t["function"]["parameters"] for t in first["tools"]
                      if t["function"]["name"] == "tracker__file"]
        told = sent(model_server, 1)[1]["content"]
    else:
        step = first["response_format"]["json_schema"]["schema"]
        (offered,) = [b["properties"]["arguments"] for b in step["anyOf"]
                      if b["properties"].get("tool") == {"const": "tracker__file"}]
        told = sent(model_server, 1)[1]["content"].removeprefix("Result of tracker.file: ")
    assert offered == {"type": "object", "required": ["bug"], "properties": {
        "bug": {"type": "string", "enum": ["BUG-1", "BUG-2"]}}}
    assert "enum_from" not in json.dumps(first)
    assert told == REFUSED
    assert log.read_text().splitlines() == ['tracker.file {"bug": "BUG-2"}']
