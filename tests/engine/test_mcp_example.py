"""examples/tracker-mcp: an agent using an MCP add-on on an approval stage (issue 25).

``bees validate`` passes on it and lists each tool's kind; run end to end with a scripted
model on a real dev server, its shipped tracker server (stdio) answers the search at once,
the filing (kind ``post``) waits for a person, and runs once after ``bees approve``.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.agents.mcp_sessions import McpSessions
from bees_cli.engine.transcript import transcript_lines, transcript_path
from bees_cli.record.local import LocalRecord, item_journal
from tests.agents.model_server import Answer, ScriptedServer
from tests.conftest import BeesRunner
from tests.engine.conftest import Space, until
from tests.engine.test_mcp_sessions import sessions, sessions_worker  # noqa: F401 - fixture
from tests.engine.test_model_loop import (
    model_server,  # noqa: F401 - the fixture
    result,
    sent,
)
from tests.engine.test_rules import decide, start

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tracker-mcp"


def test_the_example_validates_and_lists_each_tools_kind(bees: BeesRunner) -> None:
    done = bees("validate", "-w", str(EXAMPLE))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "ok: 1 process, 1 agent, 0 schedules, 1 folder, 1 add-on",
        "add-on tracker: file_issue post (declared)",
        "add-on tracker: search_issues read (declared)"]


@pytest_asyncio.fixture
async def example(tmp_path: Path, model_server: ScriptedServer) -> Space:  # noqa: F811
    """The example workspace (nothing filed yet), its agent pointed at the scripted model."""
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("filed.json"))
    agent = root / "agents" / "triager.yaml"
    agent.write_text(agent.read_text().replace("http://127.0.0.1:11434/v1",
                                               model_server.base_url))
    return Space(root, tmp_path / "agents.log")


@pytest_asyncio.fixture
async def worker(dev_env: WorkflowEnvironment, example: Space, record: LocalRecord,
                 sessions: McpSessions) -> AsyncIterator[Worker]:  # noqa: F811
    async with sessions_worker(dev_env, record, sessions) as running:
        yield running


async def test_the_example_searches_at_once_and_files_once_after_approval(
        dev_env: WorkflowEnvironment, example: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:  # noqa: F811
    model_server.model.push(
        Answer.reply('{"tool": "tracker__search_issues", '
                     '"arguments": {"query": "login times out on the VPN"}}'),
        Answer.reply('{"tool": "tracker__file_issue", "arguments": {"title": "Login times '
                     'out on the VPN", "body": "Connect to the VPN, sign in: timed out."}}'),
        Answer.reply('{"final": "filed #3"}'))
    filed = example.root / "tracker" / "filed.json"
    item_id = await start(dev_env, record, example, "triage")
    row = await until(record, item_id, lambda r: r.status in (
        "waiting for approval", "failed", "done"))
    assert (row.status, row.stage) == ("waiting for approval", "Triage"), row.reason
    assert sent(model_server, 1)[1] == {
        "role": "user", "content": "Result of tracker.search_issues: no issue matches "
                                   "'login times out on the VPN'"}
    assert not filed.exists()
    (asked,) = record.approvals(item_id, status="waiting")
    assert asked["action"] == "tracker.file_issue"
    await asyncio.to_thread(decide, item_id, approve=True, request_id=None, reason=None)
    assert await result(dev_env, item_id) == "done"
    assert json.loads(filed.read_text()) == [{
        "number": 3, "title": "Login times out on the VPN",
        "body": "Connect to the VPN, sign in: timed out.", "state": "open"}]
    assert sent(model_server, 2)[3] == {
        "role": "user", "content": "Result of tracker.file_issue: filed #3: Login times out "
                                   "on the VPN"}
    assert [(j["action"], j["kind"]) for j in item_journal(item_id)] == [
        ("tracker.search_issues", "read"), ("tracker.file_issue", "post")]
    tools = [e["tool"] for e in transcript_lines(transcript_path(row.run_folder, "Triage"))
             if e["kind"] == "tool"]
    assert tools == ["tracker.search_issues", "tracker.file_issue"]
