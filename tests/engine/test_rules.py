"""Engine rules on a real dev server (issue 4): review limit with accept and retry, retry as a
new attempt and its refusals, add-on actions with the approval gate, approvals, the journal,
busy agents and their slots, cancel."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.engine.client import EngineGateway, connect
from bees_cli.engine.models import ACCEPT_UPDATE, RETRY_UPDATE, PersonInput, task_queue
from bees_cli.engine.worker import make_worker
from bees_cli.errors import Refused
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity, set_identity
from bees_cli.machine.paths import data_dir
from bees_cli.record.aio import AsyncRecord
from bees_cli.record.local import LocalRecord, item_journal
from bees_cli.usecases import Bees
from bees_cli.usecases.approvals import approvals_waiting
from bees_cli.usecases.items import create_item
from bees_cli.usecases.run import note_worker, start_pending
from tests.engine.conftest import Space, until
from tests.support import wait

HERE = Path(__file__).resolve().parent
MAYA = PersonInput(who="maya@example.com", at="2025-01-06T09:00:00Z")

def here() -> Bees:
    """This test's computer (``BEES_HOME``) as the application."""
    return Bees(Computer.load())


async def send_update(address: str, item_id: str, name: str, arg: object,
                      result_type: object = None) -> object:
    """Send update ``name`` to the run of ``item_id`` through a new engine gateway."""
    gateway = EngineGateway(await connect(address, timeout=5))
    return await gateway.update(item_id, name, arg, result_type, timeout=30)


def waiting_approvals() -> list[dict[str, object]]:
    """What waits for approval on this computer, as ``bees approvals --json`` prints it."""
    return [r.to_json() for r in approvals_waiting(LocalRecord(Computer.load().record_path))]


def decide(item_id: str, **options: object) -> dict[str, object]:
    """``bees approve`` / ``bees deny`` in a thread of its own (its own event loop)."""
    return asyncio.run(here().decide(item_id, **options)).to_json()  # type: ignore[arg-type]


def cancel_item(item_id: str) -> dict[str, object]:
    """``bees item cancel`` in a thread of its own (its own event loop)."""
    return asyncio.run(here().cancel(item_id)).to_json()


WORK_REVIEW = """\
stages:
  - name: Work
    kind: work
    agents: [alpha]
  - name: Review
    kind: review
    reviews: Work
    agents: [beta]
  - name: After
    kind: work
    agents: [alpha]
  - name: Done
    kind: done
"""

SEND = """\
stages:
  - name: Send
    kind: work
    agents: [sender]
    approval: {approval}
  - name: Done
    kind: done
"""

ONE = """\
stages:
  - name: Work
    kind: work
    agents: [alpha]
  - name: Done
    kind: done
"""


@pytest_asyncio.fixture
async def worker(dev_env: WorkflowEnvironment, space: Space,
                 record: LocalRecord) -> AsyncIterator[Worker]:
    """This computer's worker on the dev server, noted as `bees run` (approve goes straight)."""
    queue = task_queue(load_identity().machine_id)
    set_identity(person="maya@example.com")
    note_worker(data_dir(), dev_env.client.service_client.config.target_host, queue)
    async with make_worker(dev_env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5) as running:
        yield running


def mail_addon(space: Space, *, declared: bool = False) -> Path:
    """Declare add-on ``mail`` (send: kind send; list: kind read); return its log file.
    ``declared``: the add-on names ``ADDON_LOG`` (``connection.env``), so it gets it from
    ``bees run``'s environment (a model agent's tool call); a command agent's ``runner.env``
    hands it on otherwise."""
    log = space.root.parent / "addon.log"
    command = f'["{sys.executable}", "{HERE / "addon_script.py"}"]'
    connection = "connection: {env: [ADDON_LOG]}" if declared else ""
    space.write("addons/mail.yaml", f"""\
        actions:
          send: {{kind: send, command: {command}}}
          list: {{kind: read, command: {command}}}
        {connection}
        """)
    return log


def action_agent(space: Space, name: str, *, tools: list[str], actions: list[object],
                 **env: str) -> None:
    """Declare agent ``name`` running ``action_agent.py`` with these tools and actions."""
    lines = ["instructions: sends", f"tools: [{', '.join(tools)}]", "runner:",
             f'  command: ["${{BEES_PYTHON}}", "{HERE / "action_agent.py"}"]', "  env:",
             f'    AGENT_LOG: "{space.log}"',
             f"    ADDON_LOG: '{space.root.parent / 'addon.log'}'",
             f"    ACTIONS: '{json.dumps(actions)}'"]
    lines += [f'    {key}: "{value}"' for key, value in env.items()]
    space.write(f"agents/{name}.yaml", "\n".join(lines) + "\n")


def log_lines(space: Space) -> list[str]:
    return space.log.read_text().splitlines() if space.log.exists() else []


def kinds(record: LocalRecord, item_id: str) -> list[str]:
    return [e.kind for e in record.events(item_id)]


async def start(env: WorkflowEnvironment, record: LocalRecord, space: Space, process: str,
                **options: object) -> str:
    item = create_item(space.root, process, title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    assert await start_pending(EngineGateway(env.client), AsyncRecord(record), Computer.load()) == 1
    return item.id


# -- review limit, accept, retry ---------------------------------------------------------------


async def test_review_limit_then_accept_moves_past_the_review(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker) -> None:
    space.agent("alpha")
    space.agent("beta", env={"VERDICTS": "changes_requested," * 3})
    space.write("processes/p.yaml", WORK_REVIEW)
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "waiting for a person")
    assert (row.stage, row.reason) == ("Review", "Review asked for changes 3 times")
    limit = [e.data for e in record.events(item_id) if e.kind == "review_limit"]
    assert limit == [{"rounds": [["fix round 1"], ["fix round 2"], ["fix round 3"]]}]
    # only a stopped item can be accepted; a retry is refused while it runs (below)
    stage = await send_update(worker.client.service_client.config.target_host, item_id,
                              ACCEPT_UPDATE, MAYA, str)
    assert stage == "Review"
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    assert [ln.split()[:3] for ln in space.lines()] == [
        ["Work", "alpha", "1"], ["Review", "beta", "1"], ["Work", "alpha", "2"],
        ["Review", "beta", "2"], ["Work", "alpha", "3"], ["Review", "beta", "3"],
        ["After", "alpha", "1"]]
    accepted = [e.data for e in record.events(item_id) if e.kind == "accepted"]
    assert accepted == [{"who": "maya@example.com", "asked_at": "2025-01-06T09:00:00Z"}]


async def test_review_limit_then_retry_runs_one_more_round_and_counts_again(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker) -> None:
    space.agent("alpha")
    space.agent("beta", env={"VERDICTS": "changes_requested," * 3 + "approve"})
    space.write("processes/p.yaml", WORK_REVIEW)
    item_id = await start(dev_env, record, space, "p")
    await until(record, item_id, lambda r: r.status == "waiting for a person")
    address = worker.client.service_client.config.target_host
    with pytest.raises(Refused, match="only an item stopped at the review limit"):
        # accept is for the review limit: after the retry the item runs, so it is refused
        await send_update(address, item_id, RETRY_UPDATE, MAYA, str)
        await send_update(address, item_id, ACCEPT_UPDATE, MAYA, str)
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    assert [ln.split()[0] + ln.split()[2] for ln in space.lines()] == [
        "Work1", "Review1", "Work2", "Review2", "Work3", "Review3", "Work4", "Review4",
        "After1"]
    assert space.lines()[6] == 'Work alpha 4 1 ["fix round 3"]'


async def test_retry_starts_the_failed_stage_again_as_a_new_attempt(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker) -> None:
    space.agent("alpha", env={"FAIL": "1"})
    space.write("processes/p.yaml", ONE)
    item_id = await start(dev_env, record, space, "p")
    address = worker.client.service_client.config.target_host
    await until(record, item_id, lambda r: r.status == "failed")
    await send_update(address, item_id, RETRY_UPDATE, MAYA, str)
    await until(record, item_id, lambda r: r.status == "failed" and len(space.lines()) == 2)
    assert space.lines() == ["Work alpha 1 1 []", "Work alpha 1 2 []"]
    started = [(e.round, e.data["attempt"]) for e in record.events(item_id)
               if e.kind == "stage_started"]
    assert started == [(1, 1), (1, 2)]
    failed = [(e.data["attempt"], e.data["reason"]) for e in record.events(item_id)
              if e.kind == "stage_failed" and "attempt" in e.data]
    # new facts store their reason as a code; it reads back as the same words
    code = {"code": "agent_exit", "exit_code": 3, "said": "something broke"}
    assert failed == [(1, code), (2, code)]
    assert [e.typed().render() for e in record.events(item_id)
            if e.kind == "stage_failed" and "attempt" in e.data] == [
        "Work round 1: failed (attempt 1): exit 3: something broke",
        "Work round 1: failed (attempt 2): exit 3: something broke"]
    await dev_env.client.get_workflow_handle(item_id).terminate()


async def test_retry_of_an_item_that_is_not_failed_is_refused_with_the_reason(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker) -> None:
    space.agent("alpha", env={"SLEEP_FIRST": "30"})
    space.write("processes/p.yaml", ONE)
    item_id = await start(dev_env, record, space, "p")
    await until(record, item_id, lambda r: r.status == "running")
    # the agent itself has started: the run is past its slot, in the stage
    await wait.until(space.lines, "the agent never started")
    assert space.lines() == ["Work alpha 1 1 []"]
    with pytest.raises(Refused) as refused:
        await send_update(worker.client.service_client.config.target_host, item_id,
                          RETRY_UPDATE, MAYA, str)
    assert refused.value.message == (
        f"item {item_id}: it is running at Work: only a failed or stopped item can be retried")
    assert refused.value.exit_code == 3
    await dev_env.client.get_workflow_handle(item_id).terminate()


# -- add-on actions, the approval gate, approvals -------------------------------------------------


async def test_gated_action_is_held_until_approved_and_read_is_not(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker) -> None:
    addon_log = mail_addon(space)
    mail = {"to": "team@example.com", "subject": "Week 2"}
    action_agent(space, "sender", tools=["mail.send", "mail.list"],
                 actions=[["mail.list", {}], ["mail.send", mail]])
    space.write("processes/p.yaml", SEND.format(approval="required"))
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "waiting for approval")
    assert row.status_text == (
        'waiting for approval: mail.send {"to": "team@example.com", "subject": "Week 2"}')
    assert addon_log.read_text() == "mail.list {}\n"  # the read ran, the send waits
    waiting = waiting_approvals()
    assert [(w["item_id"], w["id"], w["stage"], w["action"], w["kind"], w["what"])
            for w in waiting] == [
        (item_id, 1, "Send", "mail.send", "send",
         'mail.send {"to": "team@example.com", "subject": "Week 2"}')]
    assert json.loads(waiting[0]["input"]) == mail
    done = await asyncio.to_thread(decide, item_id[:10], approve=True, request_id=None,
                                   reason=None)
    assert (done["decided"], done["queued"], done["who"]) == ([1], False, "maya@example.com")
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    assert addon_log.read_text().splitlines() == [
        "mail.list {}", 'mail.send {"subject": "Week 2", "to": "team@example.com"}']
    assert log_lines(space) == ["run Send sender 1 1", "mail.list 0 done 1 | ",
                                "mail.send 0 done 2 | ", "end Send 1"]
    approved = [e.data for e in record.events(item_id) if e.kind == "approved"]
    assert approved[0]["who"] == "maya@example.com" and approved[0]["action"] == "mail.send"
    assert approved[0]["decided_at"] == done["at"]
    assert approved[0]["action_kind"] == "send"
    assert json.loads(approved[0]["input"]) == mail
    # the approval of the send approved the stage: no second request for its finish
    assert [a["kind"] for a in record.approvals(item_id, status=None)] == ["send"]
    journal = item_journal(item_id)
    assert [(j["action"], j["kind"], j["exit_code"], j["stdout"]) for j in journal] == [
        ("mail.list", "read", 0, "done 1\n"), ("mail.send", "send", 0, "done 2\n")]
    assert journal[1]["request_id"] == 1
    assert waiting_approvals() == []


async def test_denied_action_is_refused_and_the_stage_still_needs_approval_to_finish(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker) -> None:
    addon_log = mail_addon(space)
    action_agent(space, "sender", tools=["mail.send"], actions=[["mail.send", {"to": "all"}]])
    space.write("processes/p.yaml", SEND.format(approval="required"))
    item_id = await start(dev_env, record, space, "p")
    await until(record, item_id, lambda r: r.status == "waiting for approval")
    with pytest.raises(Refused, match="request 7 of item .* does not wait for approval "
                       r"\(waiting: 1\)"):
        await asyncio.to_thread(decide, item_id, approve=False, request_id=7, reason="no")
    await asyncio.to_thread(decide, item_id, approve=False, request_id=1, reason="wrong list")
    row = await until(record, item_id, lambda r: r.status == "waiting for approval"
                      and r.reason is not None and r.reason.startswith("finish"))
    assert not addon_log.exists()
    assert log_lines(space)[1] == (
        "mail.send 3  | error: mail.send was denied by maya@example.com: wrong list")
    # the stage ran no gated action that was approved: its finish waits for a person
    run_folder = record.item(item_id).run_folder
    assert row.status_text == f"waiting for approval: finish Send: output {run_folder}/Send"
    assert [w["kind"] for w in waiting_approvals()] == ["finish"]
    await asyncio.to_thread(decide, item_id, approve=True, request_id=None, reason=None)
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    decided = [(e.kind, e.data["request"], e.data["reason"]) for e in record.events(item_id)
               if e.kind in ("approved", "denied")]
    assert decided == [("denied", 1, "wrong list"), ("approved", 2, None)]


async def test_action_outside_the_agents_tools_is_refused_and_ungated_stage_runs_it(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker) -> None:
    addon_log = mail_addon(space)
    action_agent(space, "sender", tools=["mail.list"],
                 actions=[["mail.send", {"to": "all"}], ["mail.list", {"n": 1}]])
    space.write("processes/p.yaml", SEND.format(approval="none"))
    item_id = await start(dev_env, record, space, "p")
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    assert log_lines(space) == [
        "run Send sender 1 1",
        f"mail.send 3  | error: item {item_id}: agent sender may not use mail.send: it is not "
        "in its tools (tools: mail.list)",
        "mail.list 0 done 1 | ", "end Send 1"]
    assert addon_log.read_text() == 'mail.list {"n": 1}\n'


async def test_a_retried_stage_answers_a_repeated_action_from_the_journal(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker) -> None:
    addon_log = mail_addon(space)
    action_agent(space, "sender", tools=["mail.send"], FAIL_FIRST="1",
                 actions=[["mail.send", {"to": "all"}], ["mail.send", {"to": "boss"}]])
    space.write("processes/p.yaml", SEND.format(approval="none"))
    item_id = await start(dev_env, record, space, "p")
    await until(record, item_id, lambda r: r.status == "failed")
    # the agent ran both sends, then failed; a person retries: the stage starts from the top
    await send_update(worker.client.service_client.config.target_host, item_id, RETRY_UPDATE,
                      MAYA, str)
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    assert addon_log.read_text().splitlines() == [
        'mail.send {"to": "all"}', 'mail.send {"to": "boss"}']
    assert log_lines(space) == [
        "run Send sender 1 1", "mail.send 0 done 1 | ", "mail.send 0 done 2 | ",
        "run Send sender 1 2",
        "mail.send 0 done 1 | mail.send: answered from the journal (it ran at "
        f"{item_journal(item_id)[0]['at']}); not run again",
        "mail.send 0 done 2 | mail.send: answered from the journal (it ran at "
        f"{item_journal(item_id)[1]['at']}); not run again",
        "end Send 2"]
    answered = [(e.data["action"], e.data["attempt"]) for e in record.events(item_id)
                if e.kind == "action_answered"]
    assert answered == [("mail.send", 2), ("mail.send", 2)]
    assert len(item_journal(item_id)) == 2
    shown = await here().item_details(item_id)
    assert len(shown.journal) == 2


# -- busy agents, cancel -------------------------------------------------------------------------


async def test_busy_agent_serves_items_first_come_first_served_and_frees_slots(
        skip_env: WorkflowEnvironment, space: Space, record: LocalRecord) -> None:
    """On the time-skipping server: a waiting item gets the freed slot at its next 15 s
    re-check, which the server skips to while the test awaits the results."""
    space.agent("alpha", env={"SLEEP_FIRST": "1.5"})
    text = (space.root / "agents/alpha.yaml").read_text()
    space.write("agents/alpha.yaml", "max_concurrent_runs: 1\n" + text)
    space.write("processes/p.yaml", ONE)
    queue = task_queue(load_identity().machine_id)
    async with make_worker(skip_env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5):
        first = await start(skip_env, record, space, "p")
        await until(record, first, lambda r: r.status == "running")
        second = await start(skip_env, record, space, "p")
        row = await until(record, second, lambda r: r.status == "waiting")
        assert row.status_text == (f"waiting: waiting for agent alpha: 1 of 1 busy "
                                   f"(items {first})")
        third = await start(skip_env, record, space, "p")
        row = await until(record, third, lambda r: r.status == "waiting")
        assert row.reason == (f"waiting for agent alpha: 1 of 1 busy (items {first}); "
                              "place 2 in its queue")
        assert await skip_env.client.get_workflow_handle(first).result() == "done"
        for item_id in (second, third):  # each gets the slot at its next re-check
            await skip_env.sleep(timedelta(seconds=15))
            assert await skip_env.client.get_workflow_handle(item_id).result() == "done"
    assert [ln.split()[3] for ln in space.lines()] == ["1", "1", "1"]
    starts = sorted((e.at, item_id) for item_id in (first, second, third)
                    for e in record.events(item_id) if e.kind == "stage_started")
    assert [item_id for _, item_id in starts] == [first, second, third]
    assert record.slots() == []


async def test_failed_and_cancelled_stages_give_their_slots_back(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker) -> None:
    space.agent("alpha", env={"FAIL": "1"})
    text = (space.root / "agents/alpha.yaml").read_text()
    space.write("agents/alpha.yaml", "max_concurrent_runs: 1\n" + text)
    space.write("processes/p.yaml", ONE)
    failed = await start(dev_env, record, space, "p")
    await until(record, failed, lambda r: r.status == "failed")
    assert record.slots() == []
    space.agent("alpha", env={"SLEEP_FIRST": "60"})
    space.write("agents/alpha.yaml", "max_concurrent_runs: 1\n"
                + (space.root / "agents/alpha.yaml").read_text())
    running = await start(dev_env, record, space, "p")
    await until(record, running, lambda r: r.status == "running")
    waiting = await start(dev_env, record, space, "p")
    await until(record, waiting, lambda r: r.status == "waiting")
    assert [(s["item_id"], s["granted"]) for s in record.slots()] == [
        (running, True), (waiting, False)]
    assert (await asyncio.to_thread(cancel_item, waiting))["requested"] is True
    await until(record, waiting, lambda r: r.status == "cancelled")
    assert (await asyncio.to_thread(cancel_item, running))["requested"] is True
    await until(record, running, lambda r: r.status == "cancelled")
    assert record.slots() == []
    with pytest.raises(Refused, match="is cancelled: nothing to change"):
        await asyncio.to_thread(cancel_item, running)
    await dev_env.client.get_workflow_handle(failed).terminate()


async def test_cancel_closes_the_items_approval_requests(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        recwarn: pytest.WarningsRecorder) -> None:
    mail_addon(space)
    action_agent(space, "sender", tools=["mail.send"], actions=[["mail.send", {"to": "all"}]])
    space.write("processes/p.yaml", SEND.format(approval="required"))
    item_id = await start(dev_env, record, space, "p")
    await until(record, item_id, lambda r: r.status == "waiting for approval")
    assert [w["item_id"] for w in waiting_approvals()] == [item_id]
    done = await asyncio.to_thread(cancel_item, item_id)
    assert (done["requested"], done["cancelled"]) == (True, True)
    assert waiting_approvals() == []
    assert [a["status"] for a in record.approvals(item_id, status=None)] == ["cancelled"]
    assert "request 1 closed: the item was cancelled" in "\n".join(
        f"request {e.data['request']} closed: the item was cancelled"
        for e in record.events(item_id) if e.kind == "approval_cancelled")
    with pytest.raises(Refused, match=f"item {item_id} is cancelled: nothing to change"):
        await asyncio.to_thread(cancel_item, item_id)
    with pytest.raises(Refused, match="nothing waits for approval"):
        await asyncio.to_thread(decide, item_id, approve=True, request_id=None, reason=None)
    assert not [w for w in recwarn if "UnfinishedUpdateHandlers" in type(w.message).__name__]
