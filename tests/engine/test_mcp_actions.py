"""MCP add-ons under the same gate (issue 25), on a real dev server with a real MCP server
(``tests/mcp_server.py``) over stdio and over Streamable HTTP: a read tool runs without
asking, a declared send and an undeclared tool wait for a person and run once, the journal
answers a repeat; a server that does not start makes the computer ineligible."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.cli.errors import ExitCode, exit_code_of
from bees_cli.errors import ActionInterrupted, BeesError
from bees_cli.machine.computer import Computer
from bees_cli.record.local import LocalRecord, item_journal
from bees_cli.usecases.actions import digest_of
from bees_cli.usecases.items import create_item
from tests.engine.conftest import Space, until
from tests.engine.test_actions import updates_accepted
from tests.engine.test_rules import (
    SEND,
    action_agent,
    decide,
    here,
    log_lines,
    start,
    waiting_approvals,
    worker,  # noqa: F401 - the fixture
)
from tests.mcp_server import SCRIPT, http_server

MAIL = {"to": "team@example.com", "subject": "Week 2"}
ACTIONS = [["notes.search", {"query": "week"}], ["notes.send_email", MAIL],
           ["notes.close_issue", {"number": 7}], ["notes.send_email", MAIL]]


@contextmanager
def notes_addon(space: Space, monkeypatch: pytest.MonkeyPatch, transport: str,
                mode: str = "stdio") -> Iterator[Path]:
    """Declare add-on ``notes``: the test server over ``transport`` (``stdio`` runs it in
    ``mode``, given ``NOTES_LOG``, set on this computer), ``send_email`` declared ``send``;
    yield the file its tools log to."""
    log = space.root.parent / "notes.log"
    monkeypatch.setenv("NOTES_LOG", str(log))
    kinds = "kinds:\n  send_email: send\n"
    if transport == "stdio":
        space.write("addons/notes.yaml", f'mcp:\n  command: ["${{BEES_PYTHON}}", "{SCRIPT}", '
                    f'"{mode}"]\n  env: [NOTES_LOG]\n  start_seconds: 20\n{kinds}')
        yield log
        return
    with http_server(str(log)) as url:
        space.write("addons/notes.yaml", f"mcp:\n  url: {url}\n{kinds}")
        yield log


def notes_lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_read_tool_runs_and_send_and_undeclared_tools_wait_for_a_person(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker, transport: str,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    with notes_addon(space, monkeypatch, transport) as log:
        action_agent(space, "sender", tools=["notes.search", "notes.send_email",
                                             "notes.close_issue"],
                     actions=ACTIONS, NOTES_LOG=str(log))
        space.write("processes/p.yaml", SEND.format(approval="required"))
        item_id = await start(dev_env, record, space, "p")
        row = await until(record, item_id, lambda r: r.status == "waiting for approval",
                          timeout=60)
        assert row.status_text == f"waiting for approval: notes.send_email {json.dumps(MAIL)}"
        # the read tool (marked read-only by the server) ran without asking
        assert notes_lines(log) == ['search {"query": "week"}']
        assert [(w["action"], w["kind"]) for w in waiting_approvals()] == [
            ("notes.send_email", "send")]
        done = await asyncio.to_thread(decide, item_id, approve=True, request_id=None,
                                       reason=None)
        assert done["decided"] == [1]
        # the tool without a declared kind and without a read-only hint waits too
        row = await until(record, item_id, lambda r: "close_issue" in r.status_text, timeout=60)
        assert row.status_text == 'waiting for approval: notes.close_issue {"number": 7}'
        assert [(w["action"], w["kind"]) for w in waiting_approvals()] == [
            ("notes.close_issue", "gated")]
        assert notes_lines(log) == ['search {"query": "week"}',
                                    'send_email {"subject": "Week 2", "to": "team@example.com"}']
        done = await asyncio.to_thread(decide, item_id, approve=True, request_id=2,
                                       reason=None)
        assert done["decided"] == [2]
        assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    # each ran once: the same send again was answered from the journal
    assert notes_lines(log) == ['search {"query": "week"}',
                                'send_email {"subject": "Week 2", "to": "team@example.com"}',
                                'close_issue {"number": 7}']
    journal = item_journal(item_id)
    assert [(j["action"], j["kind"], j["exit_code"], j["request_id"]) for j in journal] == [
        ("notes.search", "read", 0, None), ("notes.send_email", "send", 0, 1),
        ("notes.close_issue", "gated", 0, 2)]
    assert log_lines(space) == [
        "run Send sender 1 1", "notes.search 0 2 notes match week | ",
        "notes.send_email 0 sent to team@example.com | ",
        "notes.close_issue 0 closed #7 | ",
        "notes.send_email 0 sent to team@example.com | notes.send_email: answered from the "
        f"journal (it ran at {journal[1]['at']}); not run again",
        "end Send 1"]
    # two held actions asked the run once each and waited on it once each, and a person
    # decided each once
    assert await updates_accepted(dev_env, item_id) == 6


async def test_tools_run_without_asking_on_a_stage_without_approval(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    with notes_addon(space, monkeypatch, "stdio") as log:
        action_agent(space, "sender", tools=["notes.send_email", "notes.close_issue"],
                     actions=ACTIONS[1:3], NOTES_LOG=str(log))
        space.write("processes/p.yaml", SEND.format(approval="none"))
        item_id = await start(dev_env, record, space, "p")
        assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    assert notes_lines(log) == ['send_email {"subject": "Week 2", "to": "team@example.com"}',
                                'close_issue {"number": 7}']
    assert await updates_accepted(dev_env, item_id) == 0


async def test_a_server_that_does_not_start_makes_the_computer_ineligible(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    with notes_addon(space, monkeypatch, "stdio", mode="crash") as log:
        action_agent(space, "sender", tools=["notes.send_email"], actions=ACTIONS[1:2],
                     NOTES_LOG=str(log))
        space.write("processes/p.yaml", SEND.format(approval="none"))
        item_id = await start(dev_env, record, space, "p")
        row = await until(record, item_id, lambda r: r.status == "waiting", timeout=60)
    assert row.reason == ("no enabled agent for Send: sender add-on notes not connected "
                          "(server exited: notes: cannot open the notes file)")
    assert log_lines(space) == [] and notes_lines(log) == []


async def test_a_call_cut_by_its_bound_leaves_its_intent_held_for_a_person(
        space: Space, record: LocalRecord, monkeypatch: pytest.MonkeyPatch) -> None:
    """No engine needed: an ungated tool runs from ``bees action`` itself; its call gets no
    answer within ``call_seconds``, so it may have run: the intent stays open (the stage's
    next attempt holds it for a person), and a server that cannot start writes none."""
    log = space.root.parent / "notes.log"
    monkeypatch.setenv("NOTES_LOG", str(log))
    space.write("addons/notes.yaml", f'mcp:\n  command: ["${{BEES_PYTHON}}", "{SCRIPT}"]\n'
                "  env: [NOTES_LOG]\n  start_seconds: 20\n  call_seconds: 1\n"
                "kinds:\n  stall: write\n")
    action_agent(space, "sender", tools=["notes.stall"], actions=[])
    space.write("processes/p.yaml", SEND.format(approval="none"))
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    record.set_state(item.id, status="running", stage="Send", agent="sender")
    env = dict(os.environ, BEES_ITEM_ID=item.id, BEES_STAGE="Send", BEES_AGENT="sender",
               BEES_TEMPORAL_ADDRESS="127.0.0.1:9")
    with pytest.raises(ActionInterrupted) as cut:
        await here().action("notes.stall", '{"seconds": 30}', env=env)
    assert cut.value.message == (
        "notes.stall: no answer to the tool call: no answer within 1 s; it may already have "
        "run, so it is not run again by itself")
    assert notes_lines(log) == ['stall {"seconds": 30.0}']
    intent = record.open_intent(item.id, "Send", "notes.stall", digest_of({"seconds": 30}))
    assert intent is not None and intent["attempt"] == 1


@pytest.mark.parametrize("mode", ["crash", "flaky"])
async def test_an_action_whose_server_does_not_start_is_a_failure_with_the_command_to_try(
        space: Space, record: LocalRecord, monkeypatch: pytest.MonkeyPatch,
        mode: str) -> None:
    """``bees action`` on a server that does not start, when its tool is looked up
    (``crash``) or when it is called (``flaky``: it answered the look-up in the workspace,
    not the call in the current folder): nothing ran, exit 1 (a failure, not bad usage), and
    the hint is the server's command as it ran."""
    log = space.root.parent / "notes.log"
    monkeypatch.setenv("NOTES_LOG", str(log))
    space.write("addons/notes.yaml", f'mcp:\n  command: ["${{BEES_PYTHON}}", "{SCRIPT}", '
                f'"{mode}", "${{BEES_WORKSPACE}}"]\n  env: [NOTES_LOG]\n  start_seconds: 20\n')
    action_agent(space, "sender", tools=["notes.search"], actions=[])
    space.write("processes/p.yaml", SEND.format(approval="none"))
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    record.set_state(item.id, status="running", stage="Send", agent="sender")
    env = dict(os.environ, BEES_ITEM_ID=item.id, BEES_STAGE="Send", BEES_AGENT="sender",
               BEES_TEMPORAL_ADDRESS="127.0.0.1:9")
    with pytest.raises(BeesError) as failed:
        await here().action("notes.search", '{"query": "week"}', env=env)
    assert exit_code_of(failed.value) == ExitCode.FAILURE
    assert failed.value.message == ("notes.search was not run: server exited: notes: cannot "
                                    "open the notes file" if mode == "flaky" else
                                    "server exited: notes: cannot open the notes file")
    assert failed.value.hint == ("try the server's command by hand: "
                                 f"{sys.executable} {SCRIPT} {mode} {space.root.resolve()}")
    assert notes_lines(log) == []
