"""Handover on one computer without a Bees Cloud (issue 7, point 4): relinquish during Draft
stops the agent and writes the checkpoint; continue checks it against the digest kept here
or given with ``--digest``, checks eligibility, and restarts Draft from the top with the
journal seeded, so an action already sent is answered from it. Refusals with exact text."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.engine.client import EngineGateway
from bees_cli.engine.models import task_queue
from bees_cli.engine.worker import make_worker
from bees_cli.errors import Refused
from bees_cli.handover.checkpoint import CheckpointInvalid, verify_checkpoint
from bees_cli.handover.continue_ import Continued
from bees_cli.handover.relinquish import Relinquished
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity, set_identity
from bees_cli.machine.links import link_folder, unlink_folder
from bees_cli.machine.paths import data_dir
from bees_cli.record.aio import AsyncRecord
from bees_cli.record.local import LocalRecord
from bees_cli.usecases import Bees, run
from bees_cli.usecases.items import create_item
from bees_cli.usecases.run import note_worker, start_pending
from tests.engine.conftest import Space, until
from tests.support import wait

HERE = Path(__file__).resolve().parent


def relinquish_item(item_id: str) -> Relinquished:
    """``bees relinquish`` in a thread of its own (its own event loop)."""
    return asyncio.run(Bees(Computer.load()).relinquish(item_id))


def continue_item(item_id: str, *, say: Callable[[str], None] = lambda _: None,
                  **options: Any) -> Continued:
    """``bees continue`` in a thread of its own (its own event loop)."""
    return asyncio.run(Bees(Computer.load(), say=say).continue_item(item_id, **options))

PROCESS = """\
stages:
  - name: Draft
    kind: work
    agents: [writer]
    reads: [notes]
  - name: Review
    kind: review
    reviews: Draft
    agents: [reviewer]
  - name: Done
    kind: done
"""


def handover_agent(space: Space, name: str, *, hold: Path, actions: list[object]) -> None:
    """Declare agent ``name`` running ``handover_agent.py`` (tools: mail.send)."""
    lines = ["instructions: drafts", "tools: [mail.send]", "runner:",
             f'  command: ["${{BEES_PYTHON}}", "{HERE / "handover_agent.py"}"]', "  env:",
             f'    AGENT_LOG: "{space.log}"',
             f"    ADDON_LOG: '{space.root.parent / 'addon.log'}'",
             f"    ACTIONS: '{json.dumps(actions)}'",
             f'    HOLD: "{hold}"']
    space.write(f"agents/{name}.yaml", "\n".join(lines) + "\n")


def write_space(space: Space, hold: Path, review_hold: Path | None = None) -> None:
    """Draft (writer, sends one mail, holds while ``hold`` exists) → Review (holds while
    ``review_hold`` exists) → Done."""
    command = f'["{sys.executable}", "{HERE / "addon_script.py"}"]'
    space.write("addons/mail.yaml", f"""\
        actions:
          send: {{kind: send, command: {command}}}
        """)
    space.write("folders/notes.yaml", "description: team notes\n")
    notes = space.root.parent / "notes"
    notes.mkdir()
    link_folder("notes", notes, ["notes"])
    handover_agent(space, "writer", hold=hold, actions=[["mail.send", {"to": "boss"}]])
    handover_agent(space, "reviewer", hold=review_hold or hold, actions=[])
    space.write("processes/report.yaml", PROCESS)


@dataclass
class Setup:
    """The relinquished item and what relinquish said."""

    item_id: str
    run_folder: Path
    done: Relinquished


@pytest_asyncio.fixture
async def worker(dev_env: WorkflowEnvironment, space: Space,
                 record: LocalRecord) -> AsyncIterator[Worker]:
    """This computer's worker on the dev server, noted as `bees run`."""
    queue = task_queue(load_identity().machine_id)
    set_identity(person="maya@example.com", computer="maya-laptop")
    note_worker(data_dir(), dev_env.client.service_client.config.target_host, queue)
    async with make_worker(dev_env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5) as running:
        yield running


async def relinquished_in_draft(env: WorkflowEnvironment, space: Space,
                                record: LocalRecord, hold: Path) -> Setup:
    """Create the item, let Draft send its mail and hold, then relinquish it."""
    write_space(space, hold)
    hold.touch()
    item = create_item(space.root, "report", title="Week 2", agents=[], folders=[],
                       record=record, computer=Computer.load())
    assert await start_pending(EngineGateway(env.client), AsyncRecord(record), Computer.load()) == 1
    await wait.until(lambda: "holding Draft" in space.lines(), lambda: f"{space.lines()}")
    done = await asyncio.to_thread(relinquish_item, item.id)
    return Setup(item.id, item.run_folder, done)


def lines(space: Space) -> list[str]:
    return space.log.read_text().splitlines()


async def test_relinquish_in_draft_then_continue_restarts_draft_and_sends_nothing_twice(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hold = tmp_path / "hold"
    setup = await relinquished_in_draft(dev_env, space, record, hold)
    item_id, folder, done = setup.item_id, setup.run_folder, setup.done
    first = dev_env.client.get_workflow_handle(item_id)
    assert await first.result() == "relinquished: restarts at Draft"
    assert (done.stage, done.restart_stages, done.released) == ("Draft", {"main": "Draft"},
                                                                False)
    # the agent was stopped mid-Draft: it never reached its end
    assert lines(space) == ["run Draft writer 1", "mail.send 0 done 1 | ", "holding Draft"]
    row = record.item(item_id)
    assert (row.stage, row.status, row.status_text) == ("Draft", "free",
                                                        "free, restarts at Draft")
    checkpoint = json.loads((folder / "checkpoint.json").read_text())
    assert hashlib.sha256((folder / "checkpoint.json").read_bytes()).hexdigest() == \
        done.checkpoint_sha256
    assert (checkpoint["format"], checkpoint["item"], checkpoint["restart_stages"],
            checkpoint["computer"]) == (2, item_id, {"main": "Draft"}, "maya-laptop")
    assert [e["action"] for e in checkpoint["journal"]] == ["mail.send"]
    paths = [f["path"] for f in checkpoint["files"]]
    assert "snapshot.json" in paths and "Draft/notes.txt" in paths
    assert verify_checkpoint(folder, expected_sha256=done.checkpoint_sha256).ok

    with pytest.raises(Refused) as again:
        await asyncio.to_thread(relinquish_item, item_id)
    assert again.value.message == (
        f"item {item_id} is free, restarts at Draft: nothing to relinquish")

    hold.unlink()
    real_start = run.start_pending

    async def bees_run_first(engine: EngineGateway, rec: AsyncRecord, here: Computer,
                             **options: Any) -> int:
        # bees run's own pass over pending items starts the run first: this one starts none
        assert await real_start(engine, rec, here, **options) == 1
        return await real_start(engine, rec, here, **options)

    monkeypatch.setattr(run, "start_pending", bees_run_first)
    said: list[str] = []
    cont = await asyncio.to_thread(continue_item, item_id, workspace_path=space.root,
                                   say=said.append)
    assert (cont.stage, cont.journal, cont.run, cont.started) == ("Draft", 1, 2, True)
    assert said[-1] == "started; bees run picks it up"
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    ran_at = checkpoint["journal"][0]["at"]
    # the continued run starts at attempt 2: the relinquished attempt's logs stay
    assert (folder / "logs" / "Draft-r1-a1.stdout").exists()
    assert (folder / "logs" / "Draft-r1-a2.stdout").exists()
    assert lines(space)[3:] == [
        "run Draft writer 2",
        f"mail.send 0 done 1 | mail.send: answered from the journal (it ran at {ran_at}); "
        "not run again",
        "end Draft", "run Review reviewer 1", "end Review"]
    addon = (space.root.parent / "addon.log").read_text().splitlines()
    assert addon == ['mail.send {"to": "boss"}']
    kinds = [e.kind for e in record.events(item_id)]
    assert kinds.count("relinquished") == 1 and kinds.count("continued") == 1
    assert record.item(item_id).status == "done"


async def test_continue_refuses_a_wrong_digest_a_changed_file_and_a_missing_folder_link(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        tmp_path: Path) -> None:
    hold = tmp_path / "hold"
    setup = await relinquished_in_draft(dev_env, space, record, hold)
    item_id, folder, sha = setup.item_id, setup.run_folder, setup.done.checkpoint_sha256
    hold.unlink()

    wrong = "0" * 64
    with pytest.raises(CheckpointInvalid) as bad_digest:
        await asyncio.to_thread(continue_item, item_id, digest=wrong)
    assert [p.format() for p in bad_digest.value.problems] == [
        f"checkpoint.json: sha256 {sha} does not match the expected {wrong}"]
    assert bad_digest.value.exit_code == 3

    notes = folder / "Draft" / "notes.txt"
    kept = notes.read_bytes()
    notes.write_bytes(kept.replace(b"writer", b"WRITER"))
    with pytest.raises(CheckpointInvalid) as changed:
        await asyncio.to_thread(continue_item, item_id)
    listed = hashlib.sha256(kept).hexdigest()
    real = hashlib.sha256(notes.read_bytes()).hexdigest()
    assert [p.format() for p in changed.value.problems] == [
        f"Draft/notes.txt: content changed (sha256 {real} expected {listed})"]
    notes.write_bytes(kept)

    # a file not in the checkpoint is refused by any continue but the takeover of an item
    # offered back by a retire (bees_cli/handover/takeover.py)
    stray = folder / "logs" / "Draft-r1-a9.stdout"
    stray.write_bytes(b"not vouched for\n")
    with pytest.raises(CheckpointInvalid) as extra:
        await asyncio.to_thread(continue_item, item_id)
    assert [p.format() for p in extra.value.problems] == [
        "logs/Draft-r1-a9.stdout: extra file not in the checkpoint"]
    stray.unlink()

    unlink_folder("notes")
    with pytest.raises(Refused) as not_eligible:
        await asyncio.to_thread(continue_item, item_id, workspace_path=space.root)
    assert not_eligible.value.message == (
        f"cannot continue item {item_id} here: folder notes: not linked on this computer "
        "(bees link notes PATH)")
    assert not_eligible.value.exit_code == 3

    # every refusal left the item free, nothing started
    row = record.item(item_id)
    assert row.status_text == "free, restarts at Draft"
    assert [e.kind for e in record.events(item_id)].count("continued") == 0
    assert lines(space) == ["run Draft writer 1", "mail.send 0 done 1 | ", "holding Draft"]
    await until(record, item_id, lambda r: r.status == "free")


async def test_relinquish_during_review_restarts_at_the_stage_under_review(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        tmp_path: Path) -> None:
    review_hold = tmp_path / "review-hold"
    write_space(space, tmp_path / "no-hold", review_hold)
    review_hold.touch()
    item = create_item(space.root, "report", title="Week 3", agents=[], folders=[],
                       record=record, computer=Computer.load())
    assert await start_pending(EngineGateway(dev_env.client),
                               AsyncRecord(record), Computer.load()) == 1
    await wait.until(lambda: "holding Review" in space.lines(), lambda: f"{space.lines()}")
    done = await asyncio.to_thread(relinquish_item, item.id)
    assert (done.stage, done.restart_stages) == ("Review", {"main": "Draft"})
    assert record.item(item.id).status_text == "free, restarts at Draft"
    checkpoint = json.loads((item.run_folder / "checkpoint.json").read_text())
    assert checkpoint["restart_stages"] == {"main": "Draft"}
    assert await dev_env.client.get_workflow_handle(item.id).result() == (
        "relinquished: restarts at Draft")
    assert lines(space)[-2:] == ["run Review reviewer 1", "holding Review"]


SEND_PROCESS = """\
stages:
  - name: Draft
    kind: work
    agents: [writer]
  - name: Send
    kind: work
    agents: [sender]
    approval: required
  - name: Done
    kind: done
"""


async def test_relinquish_while_send_waits_for_approval_then_continue_keeps_previous(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        tmp_path: Path) -> None:
    from bees_cli.usecases.approvals import approvals_waiting
    from bees_cli.usecases.models import ApprovalRow

    def waiting_approvals() -> list[ApprovalRow]:
        return approvals_waiting(record)

    def decide(item_id: str, **options: Any) -> object:
        return asyncio.run(Bees(Computer.load()).decide(item_id, **options))

    write_space(space, tmp_path / "no-hold")
    space.write("agents/sender.yaml", (space.root / "agents/writer.yaml").read_text()
                .replace("ACTIONS:", "SHOW_PREVIOUS: '1'\n    ACTIONS:"))
    space.write("processes/send.yaml", SEND_PROCESS)
    item = create_item(space.root, "send", title="Week 4", agents=[], folders=[],
                       record=record, computer=Computer.load())
    assert await start_pending(EngineGateway(dev_env.client),
                               AsyncRecord(record), Computer.load()) == 1
    await until(record, item.id, lambda r: r.status == "waiting for approval")
    assert [r.item_id for r in waiting_approvals()] == [item.id]

    done = await asyncio.to_thread(relinquish_item, item.id)
    assert (done.stage, done.restart_stages) == ("Send", {"main": "Send"})
    assert await dev_env.client.get_workflow_handle(item.id).result() == (
        "relinquished: restarts at Send")
    # the open request is closed: nothing lists it, nothing here accepts a decision
    assert waiting_approvals() == []
    assert [r["status"] for r in record.approvals(item.id, status=None)] == ["relinquished"]
    with pytest.raises(Refused) as refused:
        await asyncio.to_thread(decide, item.id, approve=True, request_id=None, reason=None)
    assert refused.value.message == f"{item.id} is free, restarts at Send: nothing waits here"
    assert refused.value.exit_code == 3
    item_json = json.loads((item.run_folder / "item.json").read_text())
    assert (item_json["id"], item_json["title"], item_json["process"]) == (
        item.id, "Week 4", "send")

    cont = await asyncio.to_thread(continue_item, item.id, workspace_path=space.root)
    assert (cont.stage, cont.run) == ("Send", 2)
    await until(record, item.id, lambda r: r.status == "waiting for approval")
    assert [r.item_id for r in waiting_approvals()] == [item.id]
    await asyncio.to_thread(decide, item.id, approve=True, request_id=None, reason=None)
    assert await dev_env.client.get_workflow_handle(item.id).result() == "done"
    draft = item.run_folder / "Draft"
    sends = [line for line in lines(space) if line.startswith(("run Send", "previous"))]
    # as without a handover: the Send agent is told where Draft's output is, both times
    assert sends == ["run Send sender 1", f"previous Draft={draft}",
                     "run Send sender 2", f"previous Draft={draft}"]
    assert record.item(item.id).title == "Week 4"
