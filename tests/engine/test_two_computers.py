"""Two computers side by side in one process (issue 10, point 1): item create → action → journal
on each, every file under its own computer's home, none under the process's ``BEES_HOME``."""

from __future__ import annotations

import contextlib
import json
import sys
import textwrap
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from bees_cli.engine.client import EngineGateway
from bees_cli.engine.models import task_queue
from bees_cli.engine.worker import make_worker
from bees_cli.machine.computer import Computer
from bees_cli.record.local import LocalRecord
from bees_cli.usecases import Bees

HERE = Path(__file__).resolve().parent

PROCESS = """\
stages:
  - name: Send
    kind: work
    agents: [sender]
  - name: Done
    kind: done
"""


def write_workspace(root: Path, to: str) -> Path:
    """A workspace whose one work stage sends one mail to ``to`` through ``bees action``."""
    addon = f'["{sys.executable}", "{HERE / "addon_script.py"}"]'
    files = {
        "bees.yaml": "name: two\n",
        "processes/p.yaml": PROCESS,
        "addons/mail.yaml": f"actions:\n  send: {{kind: send, command: {addon}}}\n",
        "agents/sender.yaml": textwrap.dedent(f"""\
            instructions: sends
            tools: [mail.send]
            runner:
              command: ["${{BEES_PYTHON}}", "{HERE / "action_agent.py"}"]
              env:
                AGENT_LOG: "{root / "agent.log"}"
                ADDON_LOG: "{root / "addon.log"}"
                ACTIONS: '{json.dumps([["mail.send", {"to": to}]])}'
            """),
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


async def test_two_computers_in_one_process_each_keep_their_items_and_journals(
        dev_env: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "process-home"
    monkeypatch.setenv("BEES_HOME", str(elsewhere))  # nobody may read it
    computers = {name: Computer.load(tmp_path / name) for name in ("laptop", "desktop")}
    apps = {name: Bees(here, engine=EngineGateway(dev_env.client))
            for name, here in computers.items()}
    spaces = {name: write_workspace(tmp_path / f"ws-{name}", f"{name}@example.com")
              for name in computers}
    async with contextlib.AsyncExitStack() as stack:
        for here in computers.values():
            await stack.enter_async_context(make_worker(
                dev_env.client, task_queue(here.machine_id), LocalRecord(here.record_path),
                computer=here, heartbeat_every=0.5))
        created = {name: await apps[name].create_item(spaces[name], "p", title=f"on {name}")
                   for name in computers}
        for item in created.values():
            assert item.started is True
            assert await dev_env.client.get_workflow_handle(item.id).result() == "done"

    for name, here in computers.items():
        item = created[name]
        home = tmp_path / name
        assert here.record_path == home / "data" / "record.db"
        assert item.run_folder == home / "data" / "runs" / item.id
        record = LocalRecord(home / "data" / "record.db")
        assert [(r.id, r.title, r.status) for r in record.items()] == [
            (item.id, f"on {name}", "done")]
        journal = record.journal(item.id)
        assert [(j["action"], j["kind"], j["exit_code"], j["stdout"]) for j in journal] == [
            ("mail.send", "send", 0, "done 1\n")]
        assert (spaces[name] / "addon.log").read_text().splitlines() == [
            f'mail.send {{"to": "{name}@example.com"}}']
        assert (spaces[name] / "agent.log").read_text().splitlines() == [
            "run Send sender 1 1", "mail.send 0 done 1 | ", "end Send 1"]
        details = await apps[name].item_details(item.id[:10])
        assert [j["action"] for j in details.journal] == ["mail.send"]
        assert details.engine_log == str(home / "data" / "temporal.log")
    assert sorted(p.name for p in (tmp_path / "laptop" / "data" / "runs").iterdir()) == [
        created["laptop"].id]
    assert sorted(p.name for p in (tmp_path / "desktop" / "data" / "runs").iterdir()) == [
        created["desktop"].id]
    assert not elsewhere.exists()
