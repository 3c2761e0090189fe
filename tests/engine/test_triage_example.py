"""examples/bug-triage-model: read a folder, act on one item in it (issue 26, done-when).

``bees validate`` passes on it; run end to end with a scripted model on a real dev server:
a pick the review's check refuses goes back to the triager with no model call, an id not in
the folder is refused before anything runs, the filer can only file the id the triager
picked, and the filing (kind ``post``) runs once after ``bees approve``. Asserts flow and
the acted-on id, never prose.
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

from bees_cli.engine.transcript import transcript_lines, transcript_path
from bees_cli.record.local import LocalRecord, item_journal
from tests.agents.model_server import Answer, ScriptedServer
from tests.conftest import BeesRunner
from tests.engine.conftest import Space, until
from tests.engine.test_model_loop import (
    loop_worker,
    model_server,  # noqa: F401 - the fixture
    note_this_worker,
    result,
)
from tests.engine.test_rules import decide, start

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bug-triage-model"


def test_the_example_validates(bees: BeesRunner) -> None:
    done = bees("validate", "-w", str(EXAMPLE))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "ok: 1 process, 3 agents, 0 schedules, 2 folders, 2 add-ons"]


@pytest_asyncio.fixture
async def example(tmp_path: Path, model_server: ScriptedServer) -> Space:  # noqa: F811
    """The example workspace (nothing filed yet), its agents pointed at the scripted model."""
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("filed.json"))
    for agent in (root / "agents").glob("*.yaml"):
        agent.write_text(agent.read_text().replace("http://127.0.0.1:11434/v1",
                                                   model_server.base_url))
    return Space(root, tmp_path / "agents.log")


@pytest_asyncio.fixture
async def worker(dev_env: WorkflowEnvironment, example: Space,
                 record: LocalRecord) -> AsyncIterator[Worker]:
    note_this_worker(dev_env)
    async with loop_worker(dev_env, record) as running:
        yield running


def pick(bug: str) -> Answer:
    return Answer.reply(json.dumps({"tool": "triage__pick",
                                    "arguments": {"bug": bug, "why": "it is the worst"}}))


def file(bug: str) -> Answer:
    return Answer.reply(json.dumps({"tool": "tracker__file",
                                    "arguments": {"bug": bug, "title": "Save deletes files"}}))


def final() -> Answer:
    return Answer.reply('{"final": "done"}')


async def test_a_check_sends_a_wrong_pick_back_and_only_the_picked_report_is_filed(
        dev_env: WorkflowEnvironment, example: Space, record: LocalRecord, worker: Worker,
        model_server: ScriptedServer) -> None:  # noqa: F811
    # a report filed as critical whose front matter says major: the grounded enum offers it,
    # the review's check refuses it
    (example.root / "bug-reports" / "critical-mislabeled.md").write_text(
        "---\nid: BUG-6\nseverity: major\n---\n# Mislabeled\n")
    model_server.model.push(
        pick("BUG-6"), final(),                     # Triage, round 1: a major report
        pick("BUG-9"), pick("BUG-3"), final(),      # round 2: BUG-9 is not in the folder
        Answer.reply('{"verdict": "approve", "comments": []}'),             # Review
        file("BUG-1"), file("BUG-3"),               # File: only the picked id is allowed
        final())
    filed = example.root / "tracker" / "filed.json"
    item_id = await start(dev_env, record, example, "bug-triage")
    row = await until(record, item_id, lambda r: r.status in (
        "waiting for approval", "failed", "waiting for a person", "done"))
    assert (row.status, row.stage) == ("waiting for approval", "File"), row.reason
    assert not filed.exists()
    # the check sent round 1 back without asking the model: 2 + 3 triage calls, 1 review
    # call, 2 filer calls so far
    assert len(model_server.model.received) == 8
    checks = [(e.data["ok"], e.round) for e in record.events(item_id)
              if e.kind == "review_check"]
    assert checks == [(False, 1), (True, 2)]
    (asked,) = record.approvals(item_id, status="waiting")
    assert asked["action"] == "tracker.file"
    await asyncio.to_thread(decide, item_id, approve=True, request_id=None, reason=None)
    assert await result(dev_env, item_id) == "done"
    assert len(model_server.model.received) == 9
    assert [issue["bug"] for issue in json.loads(filed.read_text())] == ["BUG-3"]
    assert json.loads((Path(row.run_folder) / "Triage" / "pick.json").read_text())["bug"] \
        == "BUG-3"
    assert [(j["action"], j["kind"]) for j in item_journal(item_id)] == [
        ("triage.pick", "write"), ("triage.pick", "write"), ("tracker.file", "post")]
    triage = [(e["round"], e["arguments"]["bug"], e["outcome"]) for e in transcript_lines(
        transcript_path(row.run_folder, "Triage")) if e["kind"] == "tool"]
    assert triage == [(1, "BUG-6", "ran"), (2, "BUG-9", "not_run"), (2, "BUG-3", "ran")]
    filing = [(e["arguments"]["bug"], e["outcome"]) for e in transcript_lines(
        transcript_path(row.run_folder, "File")) if e["kind"] == "tool"]
    assert filing == [("BUG-1", "not_run"), ("BUG-3", "ran")]
    refused = [e["content"] for name in ("Triage", "File") for e in transcript_lines(
        transcript_path(row.run_folder, name)) if e["kind"] == "tool"
        and e["outcome"] == "not_run"]
    assert refused == [
        "failed: triage.pick: bug 'BUG-9' is not among bug-reports/critical-*.md: BUG-3, BUG-6",
        "failed: tracker.file: bug 'BUG-1' is not among Triage/pick.json: BUG-3"]
