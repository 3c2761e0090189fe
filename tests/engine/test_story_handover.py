"""The story travels with the run (issue 12, point 3), on a real dev server with two computers in
one process: Review asks for changes twice on the laptop, the item is relinquished in Draft
round 3 and continued on the desktop, where one more request for changes stops it for a person
(the third, as the post says). ``bees item show`` on the desktop tells the whole story."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from bees_cli.engine.client import EngineGateway
from bees_cli.engine.models import ItemInput, task_queue
from bees_cli.engine.worker import make_worker
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import set_identity
from bees_cli.record.local import LocalRecord
from bees_cli.usecases import Bees
from bees_cli.usecases.run import note_worker
from bees_cli.utc import display_utc, parse_utc
from tests.engine.conftest import DRAFT_REVIEW_DONE, until
from tests.support import wait

HERE = Path(__file__).resolve().parent

PROCESS = DRAFT_REVIEW_DONE


def write_workspace(root: Path, log: Path, hold: Path, hold_round: int = 3) -> Path:
    """Draft (holds in ``hold_round`` while ``hold`` exists) → Review (asks for changes) →
    Done."""
    def agent(name: str) -> str:
        return "\n".join([
            f"instructions: {name}", "runner:",
            f'  command: ["${{BEES_PYTHON}}", "{HERE / "story_agent.py"}"]', "  env:",
            f'    AGENT_LOG: "{log}"', f'    HOLD: "{hold}"',
            f'    HOLD_ROUND: "{hold_round}"']) + "\n"

    files = {"bees.yaml": "name: story\n", "processes/report.yaml": PROCESS,
             "agents/writer.yaml": agent("writer"), "agents/reviewer.yaml": agent("reviewer")}
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def computer(home: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> Computer:
    home.mkdir()
    with monkeypatch.context() as patch:
        patch.setenv("BEES_HOME", str(home))
        set_identity(person="maya@example.com", computer=name)
    return Computer.load(home)


@contextlib.asynccontextmanager
async def running(env: WorkflowEnvironment,
                  records: dict[Computer, LocalRecord]) -> AsyncIterator[None]:
    """Each computer's worker on the dev server, noted as its `bees run`."""
    address = env.client.service_client.config.target_host
    async with contextlib.AsyncExitStack() as stack:
        for here, record in records.items():
            queue = task_queue(here.machine_id)
            note_worker(here.data_dir, address, queue)
            await stack.enter_async_context(make_worker(
                env.client, queue, record, computer=here, heartbeat_every=0.5))
        yield


async def test_two_change_requests_here_and_one_there_stop_the_item_with_its_whole_story(
        dev_env: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log, hold = tmp_path / "agents.log", tmp_path / "hold"
    laptop = computer(tmp_path / "laptop", "maya-laptop", monkeypatch)
    desktop = computer(tmp_path / "desktop", "maya-desktop", monkeypatch)
    spaces = {laptop: write_workspace(tmp_path / "ws-laptop", log, hold),
              desktop: write_workspace(tmp_path / "ws-desktop", log, hold)}
    engine = EngineGateway(dev_env.client)
    apps = {here: Bees(here, engine=engine) for here in (laptop, desktop)}
    records = {here: LocalRecord(here.record_path) for here in (laptop, desktop)}

    def lines() -> list[str]:
        return log.read_text().splitlines() if log.exists() else []

    async with running(dev_env, records):

        # the laptop: two requests for changes, then Draft round 3 holds and is relinquished
        hold.touch()
        item = await apps[laptop].create_item(spaces[laptop], "report", title="Week 2")
        await wait.until(lambda: "holding Draft 3" in lines(), lambda: f"{lines()}")
        created = records[laptop].item(item.id).created
        done = await apps[laptop].relinquish(item.id)
        assert (done.stage, done.restart_stages) == ("Draft", {"main": "Draft"})
        assert await dev_env.client.get_workflow_handle(item.id).result() == (
            "relinquished: restarts at Draft")
        checkpoint = json.loads((item.run_folder / "checkpoint.json").read_text())
        assert (checkpoint["format"], checkpoint["story"]["created"],
                checkpoint["story"]["created_on"]) == (2, created, "maya-laptop")
        assert checkpoint["story"]["reviews"] == {
            "rounds": {"Draft": 2, "Review": 2},
            "change_requests": {"Review": [["fix round 1"], ["fix round 2"]]},
            "comments": ["fix round 2"]}

        # the desktop continues it from the laptop's run folder: one more request stops it
        hold.unlink()
        going = await apps[desktop].continue_item(
            item.id, from_dir=item.run_folder, digest=done.checkpoint_sha256,
            workspace_path=spaces[desktop])
        assert (going.stage, going.run, going.started) == ("Draft", 2, True)
        row = await until(records[desktop], item.id,
                          lambda r: r.status == "waiting for a person", timeout=60)
        assert (row.stage, row.reason) == ("Review", "Review asked for changes 3 times")

    assert lines() == [
        "Draft writer 1 1 []", "Review reviewer 1 1 []",
        'Draft writer 2 1 ["fix round 1"]', "Review reviewer 2 1 []",
        'Draft writer 3 1 ["fix round 2"]', "holding Draft 3",
        # on the desktop: the same round again from the top, with the comments it had
        'Draft writer 3 2 ["fix round 2"]', "Review reviewer 3 1 []"]
    desktop_record = records[desktop]
    row = desktop_record.item(item.id)
    assert (row.created, row.created_on) == (created, "maya-laptop")
    assert ItemInput.model_validate_json(row.input).reviews is not None
    limit = [e.data for e in desktop_record.events(item.id) if e.kind == "review_limit"]
    assert limit == [{"rounds": [["fix round 1"], ["fix round 2"], ["fix round 3"]]}]
    events = desktop_record.events(item.id)
    laptop_events = records[laptop].events(item.id)
    told = [e for e in laptop_events if e.kind != "relinquished"]  # written after the checkpoint
    # the laptop's facts first, as they were recorded there (paths in the run folder naming
    # it where it is now), then the handover, then the desktop's
    def moved(data: dict[str, object]) -> object:
        return json.loads(json.dumps(data).replace(str(item.run_folder), going.run_folder))

    assert [(e.at, e.kind, e.stage, e.round, e.data) for e in events[:len(told)]] == [
        (e.at, e.kind, e.stage, e.round, moved(e.data)) for e in told]
    assert {e.computer for e in events[:len(told)]} == {"maya-laptop"}
    assert [(e.kind, e.computer) for e in events[len(told):len(told) + 1]] == [
        ("continued", None)]
    assert {e.computer for e in events[len(told):]} == {None}
    assert [(e.kind, e.stage, e.round) for e in events if e.kind in ("pick", "review_limit")] == [
        ("pick", "Draft", 1), ("pick", "Review", 1), ("pick", "Draft", 2), ("pick", "Review", 2),
        ("pick", "Draft", 3), ("pick", "Draft", 3), ("pick", "Review", 3),
        ("review_limit", "Review", 3)]

    # `bees item show` on the desktop (its own process, its own home) tells it all
    shown = subprocess.run([sys.executable, "-m", "bees_cli", "item", "show", item.id],
                           env={**os.environ, "BEES_HOME": str(desktop.home)},
                           capture_output=True, text=True, timeout=60, check=False)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout.splitlines()
    history = [line.split("  ", 2)[2] for line in out[out.index("history") + 1:]]
    assert f"created     {display_utc(parse_utc(created))} on maya-laptop" in out
    assert history[0] == "[maya-laptop] created"
    picks = [h for h in history if "picked" in h]
    assert picks == [
        "[maya-laptop] Draft round 1: picked writer: stage agents of report.Draft",
        "[maya-laptop] Review round 1: picked reviewer: stage agents of report.Review",
        "[maya-laptop] Draft round 2: picked writer: stage agents of report.Draft",
        "[maya-laptop] Review round 2: picked reviewer: stage agents of report.Review",
        "[maya-laptop] Draft round 3: picked writer: stage agents of report.Draft",
        "Draft round 3: picked writer: stage agents of report.Draft",
        "Review round 3: picked reviewer: stage agents of report.Review"]
    # the laptop's paths name the run folder where it is now (it travelled)
    assert [h for h in history if "verdict" in h] == [
        f"[maya-laptop] Review round 1: finished, verdict changes_requested, comments: "
        f"fix round 1; output {going.run_folder}/Review",
        f"[maya-laptop] Review round 2: finished, verdict changes_requested, comments: "
        f"fix round 2; output {going.run_folder}/Review",
        f"Review round 3: finished, verdict changes_requested, comments: fix round 3; "
        f"output {going.run_folder}/Review"]
    assert [h for h in history if "continued" in h] == [
        f"Draft: continued here as run 2 from maya-laptop; restarts at Draft; checkpoint "
        f"{done.checkpoint_sha256[:12]} ({checkpoint_files(checkpoint)} files)"]
    assert history[-1] == ("Review round 3: stopped for a person after 3 requests for changes "
                           "— round 1: fix round 1; round 2: fix round 2; round 3: fix round 3")


def checkpoint_files(checkpoint: dict[str, object]) -> int:
    files = checkpoint["files"]
    assert isinstance(files, list)
    return len(files)


async def test_a_checkpoint_of_format_1_still_continues_without_its_story(
        dev_env: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bees_cli.handover.checkpoint import canonical_json

    log, hold = tmp_path / "agents.log", tmp_path / "hold"
    laptop = computer(tmp_path / "laptop", "maya-laptop", monkeypatch)
    desktop = computer(tmp_path / "desktop", "maya-desktop", monkeypatch)
    spaces = {laptop: write_workspace(tmp_path / "ws-laptop", log, hold, hold_round=1),
              desktop: write_workspace(tmp_path / "ws-desktop", log, hold, hold_round=1)}
    engine = EngineGateway(dev_env.client)
    apps = {here: Bees(here, engine=engine) for here in (laptop, desktop)}
    records = {here: LocalRecord(here.record_path) for here in (laptop, desktop)}
    async with running(dev_env, records):
        hold.touch()
        item = await apps[laptop].create_item(spaces[laptop], "report", title="Week 4")
        await wait.until(lambda: log.exists() and "holding Draft 1" in log.read_text(),
                         "Draft never held")
        await apps[laptop].relinquish(item.id)
        # what an earlier Bees wrote: format 1, no story
        path = item.run_folder / "checkpoint.json"
        doc = json.loads(path.read_text())
        del doc["story"]
        doc["format"] = 1
        path.write_bytes(canonical_json(doc))
        hold.unlink()
        going = await apps[desktop].continue_item(
            item.id, from_dir=item.run_folder, digest=hashlib.sha256(path.read_bytes()).hexdigest(),
            workspace_path=spaces[desktop])
        assert (going.stage, going.run, going.started) == ("Draft", 2, True)
        await until(records[desktop], item.id, lambda r: r.status == "waiting for a person",
                    timeout=60)
    events = records[desktop].events(item.id)
    # as before stories travelled: created here, the count starts here
    assert [(e.kind, e.computer) for e in events[:2]] == [("created", None), ("continued", None)]
    assert records[desktop].item(item.id).created_on is None
    assert [e.round for e in events if e.kind == "review_limit"] == [3]
