"""The item workflow on a real dev server: agent choice, review exclusion, review loop, failures,
snapshot isolation. Each test has a fresh computer, so a fresh task queue ``bees-<machine_id>``."""

from __future__ import annotations

import json
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from bees_cli.engine.client import EngineGateway
from bees_cli.engine.models import RETRY_UPDATE, PersonInput, task_queue
from bees_cli.engine.snapshot_store import load_snapshot
from bees_cli.engine.worker import make_worker
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity
from bees_cli.record.aio import AsyncRecord
from bees_cli.record.local import LocalRecord
from bees_cli.usecases.items import create_item
from bees_cli.usecases.run import start_pending
from tests.engine.conftest import Space, until

ONE_STAGE = """\
stages:
  - name: Work
    kind: work
    agents: {agents}
  - name: Done
    kind: done
"""

WORK_REVIEW = """\
stages:
  - name: Work
    kind: work
    agents: [alpha]
  - name: Review
    kind: review
    reviews: Work
    agents: [alpha, beta]
  - name: Done
    kind: done
"""


def picks(record: LocalRecord, item_id: str) -> list[dict[str, object]]:
    """Return ``(stage, round, pick)`` of each pick in the item's history."""
    found = []
    for e in record.events(item_id):
        if e.kind == "pick":  # stored as tier codes, read back as the words people read
            pick = e.typed().pick  # type: ignore[attr-defined]
            found.append({"stage": e.stage, "round": e.round, "agent": pick.agent,
                          "reason": pick.words(), "skipped": [
                              {"agent": s.agent, "why": s.why_words()} for s in pick.skipped]})
    return found


async def run_to_end(env: WorkflowEnvironment, space: Space, record: LocalRecord, process: str,
                     *, agents: list[str] | None = None) -> str:
    """Create an item of ``process``, run it on a worker until its run returns; its id."""
    item = create_item(space.root, process, title="T", agents=agents or [], folders=[],
                       record=record, computer=Computer.load())
    queue = task_queue(load_identity().machine_id)
    async with make_worker(env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5):
        assert await start_pending(EngineGateway(env.client),
                                   AsyncRecord(record), Computer.load()) == 1
        assert await env.client.get_workflow_handle(item.id).result() == "done"
    return item.id


def agents_for_choice(space: Space) -> None:
    space.agent("alpha")
    space.agent("beta")
    space.agent("gamma", enabled=False)
    space.agent("delta", tools=["mail.send"])
    space.write("addons/mail.yaml", """\
        actions:
          send: {kind: send, command: ["true"]}
        connection:
          env: [BEES_TEST_MAIL_TOKEN_UNSET]
        """)


async def test_agent_named_on_item_wins(dev_env: WorkflowEnvironment, space: Space,
                                        record: LocalRecord) -> None:
    agents_for_choice(space)
    space.write("processes/p.yaml", ONE_STAGE.format(agents="[alpha]"))
    item_id = await run_to_end(dev_env, space, record, "p", agents=["gamma", "beta"])
    assert picks(record, item_id) == [{
        "stage": "Work", "round": 1, "agent": "beta", "reason": "named on the item",
        "skipped": [{"agent": "gamma", "why": "disabled"}]}]
    assert space.lines() == ["Work beta 1 1 []"]
    assert (Path(record.item(item_id).run_folder) / "Work" / "out.txt").read_text() == "beta"


async def test_stage_agents_then_default_then_first_by_name(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord) -> None:
    agents_for_choice(space)
    space.write("processes/staged.yaml", ONE_STAGE.format(agents="[gamma, beta]"))
    space.write("processes/nobody.yaml", ONE_STAGE.format(agents="[gamma]"))
    staged = await run_to_end(dev_env, space, record, "staged")
    space.write("bees.yaml", "name: test-space\ndefault_agent: beta\n")
    default = await run_to_end(dev_env, space, record, "nobody")
    space.write("bees.yaml", "name: test-space\ndefault_agent: delta\n")
    by_name = await run_to_end(dev_env, space, record, "nobody")
    assert picks(record, staged)[0]["agent"] == "beta"
    assert picks(record, staged)[0]["reason"] == "stage agents of staged.Work"
    assert picks(record, staged)[0]["skipped"] == [{"agent": "gamma", "why": "disabled"}]
    assert picks(record, default)[0]["reason"] == "workspace default"
    assert picks(record, default)[0]["agent"] == "beta"
    assert picks(record, by_name)[0] == {
        "stage": "Work", "round": 1, "agent": "alpha", "reason": "first enabled agent by name",
        "skipped": [
            {"agent": "gamma", "why": "disabled"},
            {"agent": "delta",
             "why": "add-on mail not connected (env BEES_TEST_MAIL_TOKEN_UNSET)"},
        ]}
    assert space.lines() == ["Work beta 1 1 []", "Work beta 1 1 []", "Work alpha 1 1 []"]


async def test_review_never_uses_the_agent_whose_work_it_reviews(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord) -> None:
    space.agent("alpha")
    space.agent("beta")
    space.write("processes/p.yaml", WORK_REVIEW)
    item_id = await run_to_end(dev_env, space, record, "p", agents=["alpha"])
    assert [(p["stage"], p["agent"], p["reason"], p["skipped"])
            for p in picks(record, item_id)] == [
        ("Work", "alpha", "named on the item", []),
        ("Review", "beta", "stage agents of p.Review",
         [{"agent": "alpha", "why": "did the work under review"}]),
    ]
    row = record.item(item_id)
    assert (row.stage, row.status, row.agent) == ("Done", "done", None)


async def test_changes_requested_sends_back_with_comments(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord) -> None:
    space.agent("alpha")
    space.agent("beta", env={"VERDICTS": "changes_requested,approve"})
    space.write("processes/p.yaml", WORK_REVIEW)
    item_id = await run_to_end(dev_env, space, record, "p")
    assert space.lines() == [
        "Work alpha 1 1 []",
        "Review beta 1 1 []",
        'Work alpha 2 1 ["fix round 1"]',
        "Review beta 2 1 []",
    ]
    finished = [(e.stage, e.round, e.data["verdict"], e.data["comments"])
                for e in record.events(item_id) if e.kind == "stage_finished"]
    assert finished == [("Work", 1, None, []), ("Review", 1, "changes_requested", ["fix round 1"]),
                        ("Work", 2, None, []), ("Review", 2, "approve", [])]
    assert [e.kind for e in record.events(item_id)].count("done") == 1


async def test_third_request_for_changes_waits_for_a_person(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord) -> None:
    space.agent("alpha")
    space.agent("beta", env={"VERDICTS": "changes_requested,changes_requested,changes_requested"})
    space.write("processes/p.yaml", WORK_REVIEW)
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    queue = task_queue(load_identity().machine_id)
    async with make_worker(dev_env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5):
        await start_pending(EngineGateway(dev_env.client), AsyncRecord(record), Computer.load())
        row = await until(record, item.id, lambda r: r.status == "waiting for a person")
        assert (row.stage, row.reason) == ("Review", "Review asked for changes 3 times")
        assert [ln.split()[0] for ln in space.lines()] == ["Work", "Review"] * 3
        await dev_env.client.get_workflow_handle(item.id).terminate()


async def test_failed_stage_waits_for_a_person_with_the_reason(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord) -> None:
    space.agent("alpha", env={"FAIL": "1"})
    space.write("processes/p.yaml", ONE_STAGE.format(agents="[alpha]"))
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    queue = task_queue(load_identity().machine_id)
    async with make_worker(dev_env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5):
        await start_pending(EngineGateway(dev_env.client), AsyncRecord(record), Computer.load())
        row = await until(record, item.id, lambda r: r.status == "failed")
        assert row.status_text == "failed: exit 3: something broke"
        assert space.lines() == ["Work alpha 1 1 []"]
        # a person's retry runs the stage again (round 1, attempt 2); it fails the same way
        await dev_env.client.get_workflow_handle(item.id).execute_update(
            RETRY_UPDATE, PersonInput(who="maya@example.com", at="2025-01-06T09:00:00Z"))
        await until(record, item.id, lambda r: len(space.lines()) == 2 and r.status == "failed")
        assert space.lines() == ["Work alpha 1 1 []", "Work alpha 1 2 []"]
        await dev_env.client.get_workflow_handle(item.id).terminate()


async def test_a_running_item_keeps_its_snapshot(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord) -> None:
    space.agent("alpha", env={"MARK": "before"})
    space.write("processes/p.yaml", ONE_STAGE.format(agents="[alpha]"))
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    # edit the workspace after create: the agent's env and the process's stage agents
    space.agent("alpha", env={"MARK": "after"})
    space.agent("beta", env={"MARK": "after"})
    space.write("processes/p.yaml", ONE_STAGE.format(agents="[beta]"))
    queue = task_queue(load_identity().machine_id)
    async with make_worker(dev_env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5):
        await start_pending(EngineGateway(dev_env.client), AsyncRecord(record), Computer.load())
        assert await dev_env.client.get_workflow_handle(item.id).result() == "done"
    assert (item.run_folder / "Work" / "out.txt").read_text() == "before"
    assert picks(record, item.id)[0]["agent"] == "alpha"
    stored = json.loads(record.item(item.id).input)
    # the workflow carries the engine's view (no runner) and the digest of the whole
    # snapshot, stored once beside the record
    assert stored["snapshot"]["agents"]["alpha"] == {"tools": [], "max_concurrent_runs": None,
                                                     "loop": None}
    whole = load_snapshot(record, item.id, stored["snapshot_digest"])
    assert whole.digest() == stored["snapshot_digest"]
    assert whole.agents["alpha"].runner.env["MARK"] == "before"  # type: ignore[union-attr]
