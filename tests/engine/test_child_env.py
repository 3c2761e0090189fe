"""Secrets stay where they belong (issue 25, point 4): after a real run, a script add-on and
an MCP server saw only what they declared, and no secret is written anywhere."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.record.local import LocalRecord
from tests.agents.model_server import Answer, ScriptedServer
from tests.engine.conftest import Space
from tests.engine.test_model_loop import (
    model_server,  # noqa: F401 - the fixture
    result,
    sent,
    worker,  # noqa: F401 - the fixture
)
from tests.engine.test_rules import SEND, start
from tests.mcp_server import SCRIPT

DUMPER = Path(__file__).with_name("env_dump_addon.py")


def files_holding(folder: Path, secret: str) -> list[str]:
    """Every file under ``folder`` whose bytes hold ``secret``."""
    return sorted(str(path) for path in folder.rglob("*")
                  if path.is_file() and secret.encode() in path.read_bytes())


async def test_children_get_only_what_they_declare_and_no_secret_is_written(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, bees_home: Path,
        worker: Worker, model_server: ScriptedServer,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    api_key, other_key = f"sk-{secrets.token_hex(16)}", f"sk-{secrets.token_hex(16)}"
    token, notes_token = secrets.token_hex(16), secrets.token_hex(16)
    script_env, server_env = space.root.parent / "script.json", space.root.parent / "server.json"
    monkeypatch.setenv("OPENAI_API_KEY", api_key)
    monkeypatch.setenv("OTHER_API_KEY", other_key)
    monkeypatch.setenv("DUMP_TOKEN", token)
    monkeypatch.setenv("DUMP_FILE", str(script_env))
    monkeypatch.setenv("NOTES_TOKEN", notes_token)
    monkeypatch.setenv("ENV_DUMP", str(server_env))
    space.write("addons/dump.yaml", "actions:\n  env:\n    kind: read\n"
                f'    command: ["${{BEES_PYTHON}}", "{DUMPER}"]\n'
                "connection:\n  env: [DUMP_TOKEN, DUMP_FILE]\n")
    space.write("addons/notes.yaml", f'mcp:\n  command: ["${{BEES_PYTHON}}", "{SCRIPT}"]\n'
                "  env: [NOTES_TOKEN, ENV_DUMP]\n  start_seconds: 20\n")
    space.write("agents/sender.yaml", "\n".join([
        "instructions: write it", "tools: [dump.env, notes.search]", "runner:", "  model:",
        f"    base_url: {model_server.base_url}", "    name: scripted",
        "    api_key_env: OPENAI_API_KEY"]) + "\n")
    space.write("agents/other.yaml", "\n".join([
        "enabled: false", "runner:", "  model:", f"    base_url: {model_server.base_url}",
        "    name: scripted", "    api_key_env: OTHER_API_KEY"]) + "\n")
    space.write("processes/p.yaml", SEND.format(approval="none"))
    model_server.model.push(
        Answer.tool_calls(("c1", "dump__env", "{}"), ("c2", "notes__search",
                                                      '{"query": "week"}')),
        Answer.reply("done"))
    item_id = await start(dev_env, record, space, "p")
    assert await result(dev_env, item_id) == "done"
    assert [m.get("content") for m in sent(model_server, 1)[1:]] == [
        "dumped\n", "2 notes match week"]

    script = json.loads(script_env.read_text())
    assert script["DUMP_TOKEN"] == token and script["DUMP_FILE"] == str(script_env)
    assert script["BEES_ACTION"] == "dump.env"
    assert {"OPENAI_API_KEY", "OTHER_API_KEY", "NOTES_TOKEN", "ENV_DUMP"} & set(script) == set()
    server = json.loads(server_env.read_text())
    assert server["NOTES_TOKEN"] == notes_token
    assert {"OPENAI_API_KEY", "OTHER_API_KEY", "DUMP_TOKEN", "DUMP_FILE"} & set(server) == set()
    run_folder = Path(record.item(item_id).run_folder)
    for secret in (api_key, other_key, token, notes_token):
        assert files_holding(bees_home, secret) == []
        assert files_holding(run_folder, secret) == []
