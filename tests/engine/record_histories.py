"""Regenerate the saved ``ItemWorkflow`` histories that ``test_replay.py`` replays.

Run from the repository root: ``.venv/bin/python -m tests.engine.record_histories [NAME…]``.
Each scenario runs one real item on a fresh dev server (or the time-skipping server, for the
waits) and worker (an isolated computer in a temporary ``BEES_HOME``) and writes its event
history to ``tests/engine/histories/NAME.json``.
Regenerate only on purpose: a changed history means running items of the old shape would break.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from bees_cli.engine.handover_models import RELINQUISH_UPDATE, HandoverOutput
from bees_cli.engine.models import (
    ACCEPT_UPDATE,
    DECIDE_UPDATE,
    RETRY_UPDATE,
    DecideInput,
    PersonInput,
)
from bees_cli.record.aio import AsyncRecord
from bees_cli.record.local import LocalRecord
from tests.engine.conftest import SCRIPTS, Space, until
from tests.support import wait

HERE = Path(__file__).resolve().parent
HISTORIES = HERE / "histories"
MAYA = PersonInput(who="maya@example.com", at="2025-01-06T09:00:00Z")

WORK_REVIEW = """\
stages:
  - name: Work
    kind: work
    agents: [alpha]
  - name: Review
    kind: review
    reviews: Work
    agents: [beta]
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

SEND = """\
stages:
  - name: Send
    kind: work
    agents: [sender]
    approval: required
  - name: Done
    kind: done
"""


def action_agent(space: Space, name: str, *, tools: list[str], actions: list[object],
                 **env: str) -> None:
    """Declare agent ``name`` running ``action_agent.py`` (as in ``test_rules.py``)."""
    lines = ["instructions: test", f"tools: [{', '.join(tools)}]", "runner:",
             f'  command: ["${{BEES_PYTHON}}", "{HERE / "action_agent.py"}"]', "  env:",
             f'    AGENT_LOG: "{space.log}"',
             f"    ADDON_LOG: '{space.root.parent / 'addon.log'}'",
             f"    ACTIONS: '{json.dumps(actions)}'"]
    lines += [f'    {key}: "{value}"' for key, value in env.items()]
    space.write(f"agents/{name}.yaml", "\n".join(lines) + "\n")


async def plain(client: Client, record: LocalRecord, space: Space) -> str:
    """Work → Review (approve) → Done."""
    space.agent("alpha")
    space.agent("beta")
    space.write("processes/p.yaml", WORK_REVIEW)
    item_id = await _start(client, record, space)
    assert await client.get_workflow_handle(item_id).result() == "done"
    return item_id


async def review_send_back(client: Client, record: LocalRecord, space: Space) -> str:
    """The review asks for changes once: Work → Review → Work (round 2) → Review → Done."""
    space.agent("alpha")
    space.agent("beta", env={"VERDICTS": "changes_requested,approve"})
    space.write("processes/p.yaml", WORK_REVIEW)
    item_id = await _start(client, record, space)
    assert await client.get_workflow_handle(item_id).result() == "done"
    return item_id


async def review_checks_send_back(client: Client, record: LocalRecord, space: Space) -> str:
    """A review's check fails once (the reviewer does not run): Work → checks → Work (round 2)
    → checks pass → Review → Done (issue 26, point 5)."""
    space.agent("alpha", env={"READY_FROM_ROUND": "2"})
    space.agent("beta")
    checks = "    agents: [beta]\n    checks: [{file_exists: Work/ready.txt}]\n"
    space.write("processes/p.yaml", WORK_REVIEW.replace("    agents: [beta]\n", checks))
    item_id = await _start(client, record, space)
    assert await client.get_workflow_handle(item_id).result() == "done"
    return item_id


async def failed_then_retry(client: Client, record: LocalRecord, space: Space) -> str:
    """Work fails on attempt 1; a person's retry runs attempt 2, which finishes → Done."""
    action_agent(space, "alpha", tools=[], actions=[], FAIL_FIRST="1")
    space.write("processes/p.yaml", ONE)
    item_id = await _start(client, record, space)
    await until(record, item_id, lambda r: r.status == "failed")
    handle = client.get_workflow_handle(item_id)
    await handle.execute_update(RETRY_UPDATE, MAYA)
    assert await handle.result() == "done"
    return item_id


async def approval_approved(client: Client, record: LocalRecord, space: Space) -> str:
    """A gated send is held for approval, a person approves it, the stage finishes → Done."""
    command = f'["{sys.executable}", "{HERE / "addon_script.py"}"]'
    space.write("addons/mail.yaml", f"""\
        actions:
          send: {{kind: send, command: {command}}}
          list: {{kind: read, command: {command}}}
        """)
    mail = {"to": "team@example.com", "subject": "Week 2"}
    action_agent(space, "sender", tools=["mail.send", "mail.list"],
                 actions=[["mail.list", {}], ["mail.send", mail]])
    space.write("processes/p.yaml", SEND)
    item_id = await _start(client, record, space)
    await until(record, item_id, lambda r: r.status == "waiting for approval")
    handle = client.get_workflow_handle(item_id)
    decision = DecideInput(approve=True, request_id=None, who=MAYA.who, at=MAYA.at)
    assert await handle.execute_update(DECIDE_UPDATE, decision, result_type=list[int]) == [1]
    assert await handle.result() == "done"
    return item_id


async def interrupted_ran(client: Client, record: LocalRecord, space: Space) -> str:
    """A send's ``bees action`` is killed after the add-on delivered (no result written), the
    stage fails; retried, the send is held as "may already have run"; a person answers
    ``ran``; the stage finishes → Done."""
    command = f'["{sys.executable}", "{HERE / "cut_addon.py"}"]'
    space.write("addons/mail.yaml", f"""\
        actions:
          send: {{kind: send, command: {command}}}
        """)
    cut = space.root.parent / "cut"
    cut.write_text("")
    action_agent(space, "sender", tools=["mail.send"], actions=[["mail.send", {"to": "all"}]],
                 FAIL_FIRST="1", CUT_FILE=str(cut))
    space.write("processes/p.yaml", NO_APPROVAL)
    item_id = await _start(client, record, space)
    await until(record, item_id, lambda r: r.status == "failed")
    handle = client.get_workflow_handle(item_id)
    await handle.execute_update(RETRY_UPDATE, MAYA)
    await until(record, item_id, lambda r: r.status == "waiting for approval")
    decision = DecideInput(approve=True, request_id=None, who=MAYA.who, at=MAYA.at,
                           answer="ran")
    assert await handle.execute_update(DECIDE_UPDATE, decision, result_type=list[int]) == [1]
    assert await handle.result() == "done"
    return item_id


async def denial_answers_retry(client: Client, record: LocalRecord, space: Space) -> str:
    """A gated send is held and denied; the agent fails its attempt; a person's retry runs
    attempt 2, whose same send is answered with the denial (no second request); the finish
    is approved → Done (the ``denial-answers-a-retried-ask`` patch)."""
    command = f'["{sys.executable}", "{HERE / "addon_script.py"}"]'
    space.write("addons/mail.yaml", f"""\
        actions:
          send: {{kind: send, command: {command}}}
        """)
    action_agent(space, "sender", tools=["mail.send"],
                 actions=[["mail.send", {"to": "board@example.com"}]], FAIL_FIRST="1")
    space.write("processes/p.yaml", SEND)
    item_id = await _start(client, record, space)
    await until(record, item_id, lambda r: r.status == "waiting for approval")
    handle = client.get_workflow_handle(item_id)
    denial = DecideInput(approve=False, request_id=None, who=MAYA.who, at=MAYA.at,
                         reason="wrong address")
    assert await handle.execute_update(DECIDE_UPDATE, denial, result_type=list[int]) == [1]
    await until(record, item_id, lambda r: r.status == "failed")
    await handle.execute_update(RETRY_UPDATE, MAYA)
    await until(record, item_id, lambda r: r.status == "waiting for approval")
    approval = DecideInput(approve=True, request_id=None, who=MAYA.who, at=MAYA.at)
    assert await handle.execute_update(DECIDE_UPDATE, approval, result_type=list[int]) == [2]
    assert await handle.result() == "done"
    return item_id


async def denial_ends_at_retry(client: Client, record: LocalRecord, space: Space) -> str:
    """A gated send is held and denied; the agent asks it again in the same attempt (denied
    again, no second request) and fails; a person's retry runs attempt 2, whose same send is
    held afresh (request 2) and approved → Done (the ``denial-ends-at-a-person-s-retry``
    patch)."""
    command = f'["{sys.executable}", "{HERE / "addon_script.py"}"]'
    space.write("addons/mail.yaml", f"""\
        actions:
          send: {{kind: send, command: {command}}}
        """)
    send = ["mail.send", {"to": "board@example.com"}]
    action_agent(space, "sender", tools=["mail.send"], actions=[send, send], FAIL_FIRST="1")
    space.write("processes/p.yaml", SEND)
    item_id = await _start(client, record, space)
    await until(record, item_id, lambda r: r.status == "waiting for approval")
    handle = client.get_workflow_handle(item_id)
    denial = DecideInput(approve=False, request_id=None, who=MAYA.who, at=MAYA.at,
                         reason="wrong address")
    assert await handle.execute_update(DECIDE_UPDATE, denial, result_type=list[int]) == [1]
    await until(record, item_id, lambda r: r.status == "failed")
    await handle.execute_update(RETRY_UPDATE, MAYA)
    await until(record, item_id, lambda r: r.status == "waiting for approval")
    approval = DecideInput(approve=True, request_id=None, who=MAYA.who, at=MAYA.at)
    assert await handle.execute_update(DECIDE_UPDATE, approval, result_type=list[int]) == [2]
    assert await handle.result() == "done"
    return item_id


READS = """\
stages:
  - name: Work
    kind: work
    agents: [alpha]
    reads: [notes]
  - name: Done
    kind: done
"""

NO_APPROVAL = """\
stages:
  - name: Send
    kind: work
    agents: [sender]
  - name: Done
    kind: done
"""


async def eligibility_wait(env: WorkflowEnvironment, record: LocalRecord, space: Space) -> str:
    """Folder ``notes`` is not linked: the item waits (re-checks); linked, it runs → Done."""
    from bees_cli.machine.links import link_folder

    space.agent("alpha")
    space.write("folders/notes.yaml", "description: notes\n")
    space.write("processes/p.yaml", READS)
    item_id = await _start(env.client, record, space)
    await until(record, item_id, lambda r: r.status == "waiting")
    await env.sleep(timedelta(minutes=2))
    notes = space.root.parent / "notes"
    notes.mkdir()
    link_folder("notes", notes, ["notes"])
    await env.sleep(timedelta(seconds=16))
    assert await env.client.get_workflow_handle(item_id).result() == "done"
    return item_id


async def busy_timeout(env: WorkflowEnvironment, record: LocalRecord, space: Space) -> str:
    """alpha's one slot is taken: the stage waits 10 minutes and fails; the slot frees, a
    person retries, the stage runs → Done."""
    space.agent("alpha")
    space.write("agents/alpha.yaml", "max_concurrent_runs: 1\n"
                + (space.root / "agents/alpha.yaml").read_text())
    space.write("processes/p.yaml", ONE)
    assert record.acquire_slot(agent="alpha", item_id="01OTHER", stage="Work", cap=1)[0]
    item_id = await _start(env.client, record, space)
    await until(record, item_id, lambda r: r.status == "waiting")
    await env.sleep(timedelta(minutes=10, seconds=10))
    await until(record, item_id, lambda r: r.status == "failed")
    record.release_slot("01OTHER")
    handle = env.client.get_workflow_handle(item_id)
    await handle.execute_update(RETRY_UPDATE, MAYA)
    assert await handle.result() == "done"
    return item_id


async def review_limit(env: WorkflowEnvironment, record: LocalRecord, space: Space) -> str:
    """The review asks for changes three times: stopped; a person retries (three more
    rounds, stopped again), then accepts → Done."""
    space.agent("alpha")
    space.agent("beta", env={"VERDICTS": ",".join(["changes_requested"] * 6)})
    space.write("processes/p.yaml", WORK_REVIEW)
    item_id = await _start(env.client, record, space)
    handle = env.client.get_workflow_handle(item_id)
    await until(record, item_id, lambda r: r.status == "waiting for a person")
    await handle.execute_update(RETRY_UPDATE, MAYA)
    await until(record, item_id, lambda r: r.status == "waiting for a person"
                and len(space.lines()) == 12)
    await handle.execute_update(ACCEPT_UPDATE, MAYA)
    assert await handle.result() == "done"
    return item_id


async def continued_with_reviews(env: WorkflowEnvironment, record: LocalRecord,
                                 space: Space) -> str:
    """A continued run (run 2, as ``bees continue`` starts it) carrying two requests for
    changes from the earlier run: Work round 3, the third request stops it; accepted → Done."""
    from bees_cli.engine.models import ItemInput, ReviewRounds

    space.agent("alpha")
    space.agent("beta", env={"VERDICTS": ",".join(["changes_requested"] * 3)})
    space.write("processes/p.yaml", WORK_REVIEW)
    item_id = await _start(env.client, record, space, start=False)
    row = record.item(item_id)
    carried = ItemInput.model_validate_json(row.input).model_copy(update={
        "run": 2, "start_stage": "Work", "reviews": ReviewRounds(
            rounds={"Work": 2, "Review": 2}, comments=["fix round 2"],
            change_requests={"Review": [["fix round 1"], ["fix round 2"]]})})
    record.restart_item(item_id, input=carried.model_dump_json(), run_folder=row.run_folder,
                        stage="Work")
    await _start_pending(env.client, record)
    handle = env.client.get_workflow_handle(item_id)
    await until(record, item_id, lambda r: r.status == "waiting for a person")
    assert [line.split()[:3] for line in space.lines()] == [
        ["Work", "alpha", "3"], ["Review", "beta", "3"]]
    await handle.execute_update(ACCEPT_UPDATE, MAYA)
    assert await handle.result() == "done"
    return item_id


async def cancel(env: WorkflowEnvironment, record: LocalRecord, space: Space) -> str:
    """The item waits for its folder; the run is cancelled: ``cancelled``."""
    space.agent("alpha")
    space.write("folders/notes.yaml", "description: notes\n")
    space.write("processes/p.yaml", READS)
    item_id = await _start(env.client, record, space)
    await until(record, item_id, lambda r: r.status == "waiting")
    handle = env.client.get_workflow_handle(item_id)
    await handle.cancel()
    await until(record, item_id, lambda r: r.status == "cancelled")
    return item_id


async def relinquish(env: WorkflowEnvironment, record: LocalRecord, space: Space) -> str:
    """Work fails; the item is relinquished (checkpoint, free): ``relinquished``."""
    action_agent(space, "alpha", tools=[], actions=[], FAIL_FIRST="1")
    space.write("processes/p.yaml", ONE)
    item_id = await _start(env.client, record, space)
    await until(record, item_id, lambda r: r.status == "failed")
    handle = env.client.get_workflow_handle(item_id)
    handed = await handle.execute_update(RELINQUISH_UPDATE, MAYA, result_type=HandoverOutput)
    assert handed.ok, handed.reason
    assert await handle.result() == "relinquished: restarts at Work"
    return item_id


async def journal_answer(env: WorkflowEnvironment, record: LocalRecord, space: Space) -> str:
    """A send runs, the stage fails; retried, the same send is answered from the journal."""
    command = f'["{sys.executable}", "{HERE / "addon_script.py"}"]'
    space.write("addons/mail.yaml", f"""\
        actions:
          send: {{kind: send, command: {command}}}
        """)
    action_agent(space, "sender", tools=["mail.send"], actions=[["mail.send", {"to": "all"}]],
                 FAIL_FIRST="1")
    space.write("processes/p.yaml", NO_APPROVAL)
    item_id = await _start(env.client, record, space)
    await until(record, item_id, lambda r: r.status == "failed")
    handle = env.client.get_workflow_handle(item_id)
    await handle.execute_update(RETRY_UPDATE, MAYA)
    assert await handle.result() == "done"
    return item_id


async def relinquish_refused(client: Client, record: LocalRecord, space: Space) -> str:
    """Work fails; a relinquish is refused by the checkpoint (a symlink in the run folder),
    on the ``relinquish-keeps-state`` patch; a retry runs attempt 2 → Done."""
    action_agent(space, "alpha", tools=[], actions=[], FAIL_FIRST="1")
    space.write("processes/p.yaml", ONE)
    item_id = await _start(client, record, space)
    await until(record, item_id, lambda r: r.status == "failed")
    link = Path(record.item(item_id).run_folder) / "link"
    link.symlink_to("/")
    handle = client.get_workflow_handle(item_id)
    handed = await handle.execute_update(RELINQUISH_UPDATE, MAYA, result_type=HandoverOutput)
    assert not handed.ok
    link.unlink()
    await until(record, item_id, lambda r: r.status == "failed" and r.reason == handed.reason)
    await handle.execute_update(RETRY_UPDATE, MAYA)
    assert await handle.result() == "done"
    return item_id


async def model_stages(client: Client, record: LocalRecord, space: Space) -> str:
    """Model agents against a scripted model (issue 13, ``model-loop`` patch): Work calls
    ``write_file`` then answers; Review answers a verdict → Done."""
    from tests.agents.model_server import Answer, serve

    with serve() as server:
        for name in ("alpha", "beta"):
            space.write(f"agents/{name}.yaml", "runner:\n  model:\n"
                        f"    base_url: {server.base_url}\n    name: scripted\n")
        space.write("processes/p.yaml", WORK_REVIEW)
        server.model.push(
            Answer.tool_calls(("c1", "write_file", '{"path": "a.md", "content": "hi"}')),
            Answer.reply("wrote a.md"), Answer.reply('{"verdict": "approve", "comments": []}'))
        item_id = await _start(client, record, space)
        assert await client.get_workflow_handle(item_id).result() == "done"
    return item_id


async def model_tool_waits_on_run(client: Client, record: LocalRecord, space: Space) -> str:
    """A model agent's gated tool call is held; its activity waits on the run (the
    ``bees.await_decision`` update, issue 24, point 1); a person approves → it runs → Done."""
    from tests.agents.model_server import Answer, serve
    from tests.engine.test_rules import mail_addon

    os.environ["ADDON_LOG"] = str(mail_addon(space, declared=True))
    with serve() as server:
        space.write("agents/sender.yaml", "instructions: send it\ntools: [mail.send]\n"
                    f"runner:\n  model:\n    base_url: {server.base_url}\n"
                    "    name: scripted\n")
        space.write("processes/p.yaml", SEND)
        server.model.push(Answer.tool_calls(("c1", "mail__send", '{"to": "all"}')),
                          Answer.reply("sent"))
        item_id = await _start(client, record, space)
        await until(record, item_id, lambda r: r.status == "waiting for approval")
        handle = client.get_workflow_handle(item_id)
        decision = DecideInput(approve=True, request_id=None, who=MAYA.who, at=MAYA.at)
        assert await handle.execute_update(DECIDE_UPDATE, decision,
                                           result_type=list[int]) == [1]
        assert await handle.result() == "done"
    return item_id


async def required_tool_told_then_called(client: Client, record: LocalRecord,
                                         space: Space) -> str:
    """A native-mode model agent answers before its required ``mail.send`` ran: told back
    once (the ``required-tools-told`` patch, issue 26, point 3), it calls the tool, which
    runs, then answers → Done."""
    from tests.agents.model_server import Answer, serve
    from tests.engine.test_rules import mail_addon

    os.environ["ADDON_LOG"] = str(mail_addon(space, declared=True))
    with serve() as server:
        space.write("agents/sender.yaml", "instructions: send it\ntools: [mail.send]\n"
                    f"runner:\n  model:\n    base_url: {server.base_url}\n"
                    "    name: scripted\n  file_tools: false\n"
                    "  required_tools: [mail.send]\n")
        space.write("processes/p.yaml", SEND.replace("approval: required", "approval: none"))
        server.model.push(Answer.reply("done"),
                          Answer.tool_calls(("c1", "mail__send", '{"to": "all"}')),
                          Answer.reply("sent"))
        item_id = await _start(client, record, space)
        assert await client.get_workflow_handle(item_id).result() == "done"
        assert len(server.model.received) == 3
    return item_id


async def model_reads_run_together(client: Client, record: LocalRecord, space: Space) -> str:
    """A model agent's reply asks for two read-kind calls and one send: the reads run at once
    (the ``concurrent-reads`` patch, issue 26, point 7), then the send, then it answers →
    Done."""
    from tests.agents.model_server import Answer, serve
    from tests.engine.test_rules import mail_addon

    os.environ["ADDON_LOG"] = str(mail_addon(space, declared=True))
    with serve() as server:
        space.write("agents/sender.yaml", "instructions: send it\n"
                    "tools: [mail.list, mail.send]\n"
                    f"runner:\n  model:\n    base_url: {server.base_url}\n"
                    "    name: scripted\n  file_tools: false\n")
        space.write("processes/p.yaml", SEND.replace("approval: required", "approval: none"))
        server.model.push(Answer.tool_calls(("c1", "mail__list", '{"box": "in"}'),
                                            ("c2", "mail__list", '{"box": "out"}'),
                                            ("c3", "mail__send", '{"to": "all"}')),
                          Answer.reply("sent"))
        item_id = await _start(client, record, space)
        assert await client.get_workflow_handle(item_id).result() == "done"
        assert len(server.model.received) == 2
    return item_id


async def output_told_then_written(client: Client, record: LocalRecord,
                                   space: Space) -> str:
    """A model agent's final answer comes before its stage's declared ``output``: told back
    once (the ``output-told`` patch, issue 26, point 5), it writes the file, then answers →
    Done."""
    from tests.agents.model_server import Answer, serve

    with serve() as server:
        space.write("agents/alpha.yaml", "runner:\n  model:\n"
                    f"    base_url: {server.base_url}\n    name: scripted\n")
        space.write("processes/p.yaml", ONE.replace(
            "    agents: [alpha]\n", "    agents: [alpha]\n    output: {file: summary.json}\n"))
        server.model.push(
            Answer.reply("done"),
            Answer.tool_calls(("c1", "write_file", '{"path": "summary.json", "content": "{}"}')),
            Answer.reply("written"))
        item_id = await _start(client, record, space)
        assert await client.get_workflow_handle(item_id).result() == "done"
        assert len(server.model.received) == 3
    return item_id


async def relinquish_waits_for_cloud(client: Client, record: LocalRecord, space: Space) -> str:
    """Work fails; the item is relinquished on the ``handover-waits-for-cloud`` patch (the
    handover step tried without an attempt limit): ``relinquished``."""
    action_agent(space, "alpha", tools=[], actions=[], FAIL_FIRST="1")
    space.write("processes/p.yaml", ONE)
    item_id = await _start(client, record, space)
    await until(record, item_id, lambda r: r.status == "failed")
    handle = client.get_workflow_handle(item_id)
    handed = await handle.execute_update(RELINQUISH_UPDATE, MAYA, result_type=HandoverOutput)
    assert handed.ok, handed.reason
    assert await handle.result() == "relinquished: restarts at Work"
    return item_id


async def relinquish_as_stage_finishes(client: Client, record: LocalRecord,
                                       space: Space) -> str:
    """Work's agent holds; a relinquish is accepted and Work's cancel asked, then the agent
    exits 0 before its heartbeat sees the cancel (the cancel swallowed by Work's result), on
    the ``relinquish-between-steps`` patch: the plan stops before Review; ``relinquished``."""
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import WorkflowUpdateStage

    hold = space.root.parent / "hold"
    hold.touch()
    space.write("agents/alpha.yaml", "\n".join([
        "instructions: test", "runner:",
        f'  command: ["${{BEES_PYTHON}}", "{HERE / "handover_agent.py"}"]', "  env:",
        f'    AGENT_LOG: "{space.log}"', "    ACTIONS: '[]'", f'    HOLD: "{hold}"']) + "\n")
    space.agent("beta")
    space.write("processes/p.yaml", WORK_REVIEW)
    item_id = await _start(client, record, space)
    handle = client.get_workflow_handle(item_id)
    while not space.log.exists() or "holding Work" not in space.lines():
        await asyncio.sleep(0.05)
    update = await handle.start_update(RELINQUISH_UPDATE, MAYA, result_type=HandoverOutput,
                                       wait_for_stage=WorkflowUpdateStage.ACCEPTED)
    cancel_asked = EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED
    while cancel_asked not in [e.event_type for e in (await handle.fetch_history()).events]:
        await asyncio.sleep(0.02)
    hold.unlink()
    handed = await update.result()
    assert handed.ok, handed.reason
    assert await handle.result() == "relinquished: restarts at Work"
    types = [e.event_type for e in (await handle.fetch_history()).events]
    assert EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED not in types  # Work's result came
    return item_id


PIECE_HISTORY = "piece_command_agent_finished"
"""The history of one ``bees.piece`` child workflow, saved by :func:`pieces_two`."""


async def pieces_two(client: Client, record: LocalRecord, space: Space) -> str:
    """On the ``pieces`` patch (issue 14): Draft's writer hands two pieces to alpha and beta
    (``bees delegate``, two ``bees.piece`` children) and uses both answers → Done. Also
    saves the first piece's own history (:data:`PIECE_HISTORY`)."""
    from tests.engine.test_pieces import DRAFT, piece_agent

    piece_agent(space, "writer", DELEGATE=[["alpha", "figures", {"week": 2}],
                                           ["beta", "quotes", {}]])
    piece_agent(space, "alpha")
    piece_agent(space, "beta")
    space.write("processes/p.yaml", DRAFT.format(approval="none"))
    item_id = await _start(client, record, space)
    assert await client.get_workflow_handle(item_id).result() == "done"
    first = record.pieces(item_id)[0]
    history = await client.get_workflow_handle(first.workflow_id).fetch_history()
    (HISTORIES / f"{PIECE_HISTORY}.json").write_text(history.to_json() + "\n",
                                                      encoding="utf-8")
    return item_id


STOPPED_PIECE_HISTORY = "piece_stopped_with_relinquish"
"""The history of the ``bees.piece`` child a relinquish stopped, saved by
:func:`relinquish_pieces`."""


async def relinquish_pieces(client: Client, record: LocalRecord, space: Space) -> str:
    """On the ``relinquish-stops-pieces`` patch (issue 14, point 3): Draft's writer hands
    pieces to alpha (finishes) and beta (holds); the relinquish stops beta's piece and waits
    for it before the checkpoint → ``relinquished``. Also saves beta's stopped piece's own
    history (:data:`STOPPED_PIECE_HISTORY`)."""
    return await _relinquish_pieces(client, record, space, save_piece=True)


async def relinquish_pieces_top_down(client: Client, record: LocalRecord,
                                     space: Space) -> str:
    """The same run on the ``relinquish-stops-top-down`` patch too (the live pieces are
    stopped one depth at a time, callers first)."""
    return await _relinquish_pieces(client, record, space, save_piece=False)


async def _relinquish_pieces(client: Client, record: LocalRecord, space: Space, *,
                             save_piece: bool) -> str:
    from tests.engine.test_pieces import DRAFT, piece_agent

    hold = space.root.parent / "hold"
    hold.touch()
    piece_agent(space, "writer", DELEGATE=[["alpha", "figures", {"week": 2}],
                                           ["beta", "quotes", {}]])
    piece_agent(space, "alpha")
    piece_agent(space, "beta", HOLD=str(hold))
    space.write("processes/p.yaml", DRAFT.format(approval="none"))
    item_id = await _start(client, record, space)
    await wait.until(lambda: any(ln.startswith("holding beta") for ln in space.lines())
                     and any(ln.startswith("delegate alpha 0") for ln in space.lines()),
                     lambda: f"the pieces did not get going: {space.lines()}")
    handle = client.get_workflow_handle(item_id)
    handed = await handle.execute_update(RELINQUISH_UPDATE, MAYA, result_type=HandoverOutput)
    assert handed.ok, handed.reason
    beta = next(p for p in record.pieces(item_id) if p.named == "beta")
    assert handed.restart_stages == {"main": "Draft", beta.piece: "Draft"}
    assert await handle.result() == "relinquished: restarts at Draft"
    if save_piece:
        history = await client.get_workflow_handle(beta.workflow_id).fetch_history()
        (HISTORIES / f"{STOPPED_PIECE_HISTORY}.json").write_text(history.to_json() + "\n",
                                                                  encoding="utf-8")
    return item_id


async def stage_end_stops_pieces(client: Client, record: LocalRecord, space: Space) -> str:
    """On the ``stage-end-stops-pieces`` patch (issue 23, point 3): Draft's writer hands a
    piece to alpha (which holds) and ends without waiting for its answer; after the grace the
    run stops the piece and waits for it, then → Done."""
    from tests.engine.test_pieces import DRAFT, piece_agent

    hold = space.root.parent / "hold"
    hold.touch()
    piece_agent(space, "writer", DELEGATE=[["alpha", "figures", {}]], DETACH="1")
    piece_agent(space, "alpha", HOLD=str(hold))
    space.write("processes/p.yaml", DRAFT.format(approval="none"))
    item_id = await _start(client, record, space)
    assert await client.get_workflow_handle(item_id).result() == "done"
    assert [p.status for p in record.pieces(item_id)] == ["stopped"]
    hold.unlink()
    return item_id


Scenario = Callable[[Client, LocalRecord, Space], Awaitable[str]]
Skipping = Callable[[WorkflowEnvironment, LocalRecord, Space], Awaitable[str]]
SCENARIOS: dict[str, Scenario] = {
    "plain_work_review_done": plain,
    "review_send_back": review_send_back,
    "failed_then_retry": failed_then_retry,
    "approval_held_then_approved": approval_approved,
    "action_held_at_once_then_approved": approval_approved,
    "interrupted_send_held_then_ran": interrupted_ran,
    "relinquish_refused_then_retry": relinquish_refused,
    "model_stages_tool_then_verdict": model_stages,
    "relinquish_waits_for_cloud": relinquish_waits_for_cloud,
    "relinquish_as_stage_finishes": relinquish_as_stage_finishes,
    "pieces_writer_delegates_two": pieces_two,
    "relinquish_stops_pieces": relinquish_pieces,
    "relinquish_stops_pieces_top_down": relinquish_pieces_top_down,
    "eligible_locally_work_review_done": plain,
    "denial_answers_a_retried_ask": denial_answers_retry,
    "denial_ends_at_a_person_s_retry": denial_ends_at_retry,
    "stage_end_stops_pieces": stage_end_stops_pieces,
    "model_tool_waits_on_run": model_tool_waits_on_run,
    "required_tool_told_then_called": required_tool_told_then_called,
    "model_reads_run_together": model_reads_run_together,
    "review_checks_send_back": review_checks_send_back,
    "output_told_then_written": output_told_then_written,
}
"""Scenarios recorded on a dev server (the first four before the waits became retried
activities; the last two after a held action's update returned at once)."""

ON_SKIP: dict[str, Skipping] = {
    "eligibility_wait_then_eligible": eligibility_wait,
    "busy_wait_timeout_then_retry": busy_timeout,
    "review_limit_retry_then_accept": review_limit,
    "cancel_while_waiting": cancel,
    "relinquish_failed_stage": relinquish,
    "continued_with_review_count": continued_with_reviews,
    "journal_answers_a_retried_send": journal_answer,
    "eligible_locally_wait_then_eligible": eligibility_wait,
}
"""Scenarios recorded on the time-skipping server (its clock skips the waits)."""


async def _start(client: Client, record: LocalRecord, space: Space, *,
                 start: bool = True) -> str:
    from bees_cli.machine.computer import Computer
    from bees_cli.usecases.items import create_item

    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    if start:
        await _start_pending(client, record)
    return item.id


async def _start_pending(client: Client, record: LocalRecord) -> None:
    from bees_cli.engine.client import EngineGateway
    from bees_cli.machine.computer import Computer
    from bees_cli.usecases.run import start_pending

    assert await start_pending(EngineGateway(client), AsyncRecord(record), Computer.load()) == 1


async def record_one(env: WorkflowEnvironment, name: str, scenario: Scenario | Skipping,
                     base: Path, *, skipping: bool = False) -> Path:
    """Run ``scenario`` on a fresh computer under ``base``; save its history; return the file."""
    from bees_cli.engine.models import task_queue
    from bees_cli.engine.worker import make_worker
    from bees_cli.machine.computer import Computer
    from bees_cli.machine.identity import load_identity, set_identity
    from bees_cli.machine.paths import data_dir
    from bees_cli.record.local import open_record
    from bees_cli.usecases.run import note_worker

    folder = base / name
    home = folder / "home"
    home.mkdir(parents=True)
    os.environ["BEES_HOME"] = str(home)
    root = folder / "ws"
    root.mkdir()
    (root / "bees.yaml").write_text("name: test-space\n", encoding="utf-8")
    space = Space(root, folder / "agents.log")
    record = open_record()
    queue = task_queue(load_identity().machine_id)
    set_identity(person=MAYA.who)
    note_worker(data_dir(), env.client.service_client.config.target_host, queue)
    async with make_worker(env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5, act=_act(env.client)):
        if skipping:
            item_id = await scenario(env, record, space)  # type: ignore[arg-type]
        else:
            item_id = await scenario(env.client, record, space)  # type: ignore[arg-type]
    history = await env.client.get_workflow_handle(item_id).fetch_history()
    path = HISTORIES / f"{name}.json"
    path.write_text(history.to_json() + "\n", encoding="utf-8")
    return path


def _act(client: Client) -> Callable[[Any], Awaitable[Any]]:
    """The gate a model agent's add-on tool goes through, as ``bees run`` passes it."""
    from bees_cli.engine.client import EngineGateway
    from bees_cli.machine.computer import Computer
    from bees_cli.usecases.bees import Bees

    bees = Bees(Computer.load(), engine=EngineGateway(client))

    async def act(call: Any) -> Any:
        return await bees.call_action(call)

    return act


CONTINUED = ("continued_as_new_first_run", "continued_as_new_last_run")
"""A review loop on a server that suggests continue-as-new after 30 events: its first run
(ending continued as new) and its last run (started from the carried state)."""


async def record_continued(base: Path) -> list[Path]:
    """Record the two :data:`CONTINUED` histories; return their files."""
    from temporalio.api.enums.v1 import EventType

    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(SCRIPTS / "temporal"),
        data_converter=pydantic_data_converter,
        dev_server_log_level="error",
        dev_server_extra_args=["--dynamic-config-value",
                               "limit.historyCount.suggestContinueAsNew=30"],
    )
    try:
        async def loop(client: Client, record: LocalRecord, space: Space) -> str:
            space.agent("alpha")
            space.agent("beta", env={"VERDICTS": "changes_requested,changes_requested"})
            space.write("processes/p.yaml", WORK_REVIEW)
            item_id = await _start(client, record, space)
            assert await client.get_workflow_handle(item_id).result() == "done"
            return item_id

        last = await record_one(env, CONTINUED[1], loop, base)
        history = json.loads(last.read_text(encoding="utf-8"))
        started = history["events"][0]["workflowExecutionStartedEventAttributes"]
        assert started.get("continuedExecutionRunId"), "the run did not continue as new"
        first = await env.client.get_workflow_handle(
            _item_of(last), run_id=started["firstExecutionRunId"]).fetch_history()
        assert first.events[-1].event_type == (
            EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW)
        path = HISTORIES / f"{CONTINUED[0]}.json"
        path.write_text(first.to_json() + "\n", encoding="utf-8")
        return [path, last]
    finally:
        await env.shutdown()


def _item_of(path: Path) -> str:
    """Return the item id (workflow id) of a saved history, from its first event's input."""
    import base64

    history = json.loads(path.read_text(encoding="utf-8"))
    payload = history["events"][0]["workflowExecutionStartedEventAttributes"]["input"]
    return str(json.loads(base64.b64decode(payload["payloads"][0]["data"]))["item_id"])


async def main(names: list[str]) -> None:
    # the agents' `bees action` must find this venv's `bees`
    os.environ["PATH"] = f"{SCRIPTS}{os.pathsep}{os.environ.get('PATH', '')}"
    HISTORIES.mkdir(exist_ok=True)
    wanted = names or [*SCENARIOS, *ON_SKIP]
    with tempfile.TemporaryDirectory(prefix="bees-histories-") as base:
        dev = [name for name in wanted if name in SCENARIOS]
        if dev:
            env = await WorkflowEnvironment.start_local(
                dev_server_existing_path=str(SCRIPTS / "temporal"),
                data_converter=pydantic_data_converter,
                dev_server_log_level="error",
            )
            try:
                for name in dev:
                    path = await asyncio.wait_for(
                        record_one(env, name, SCENARIOS[name], Path(base)), timeout=120)
                    print(f"wrote {path}")
            finally:
                await env.shutdown()
        if any(name in CONTINUED for name in wanted) or not names:
            for path in await asyncio.wait_for(record_continued(Path(base)), timeout=120):
                print(f"wrote {path}")
        skip = [name for name in wanted if name in ON_SKIP]
        if skip:
            env = await WorkflowEnvironment.start_time_skipping(
                test_server_existing_path=str(SCRIPTS / "temporal-test-server"),
                data_converter=pydantic_data_converter,
            )
            try:
                for name in skip:
                    path = await asyncio.wait_for(record_one(
                        env, name, ON_SKIP[name], Path(base), skipping=True), timeout=120)
                    print(f"wrote {path}")
            finally:
                await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
