"""End to end through the ``bees`` command: the README flow, ``--wait``, SIGTERM, and kill -9
of ``bees run`` mid-stage followed by a restart."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from bees_cli.engine.server import pid_alive
from tests.conftest import EXAMPLE, BeesRunner, run_lines
from tests.engine.conftest import DRAFT_REVIEW_DONE, Space, status_on
from tests.support.wait import until_sync

WORK_REVIEW = DRAFT_REVIEW_DONE


def start_bees(home: Path, *args: str) -> subprocess.Popen[str]:
    """Start ``python -m bees_cli ARGS`` in the background on computer ``home``."""
    env = dict(os.environ, BEES_HOME=str(home))
    return subprocess.Popen([sys.executable, "-m", "bees_cli", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def engine_json(home: Path) -> dict[str, object] | None:
    path = home / "data" / "engine.json"
    return json.loads(path.read_text()) if path.exists() else None


def test_readme_flow_runs_the_example_to_done(bees: BeesRunner, bees_home: Path,
                                              tmp_path: Path) -> None:
    outbox = tmp_path / "outbox"
    outbox.mkdir()
    assert bees("link", "outbox", str(outbox), "-w", str(EXAMPLE)).returncode == 0
    created = bees("item", "create", "weekly-report", "-w", str(EXAMPLE))
    assert created.returncode == 0, created.stderr
    item_id = created.stdout.strip()
    assert len(item_id) == 26
    assert "the engine is not running" in created.stderr
    pending = json.loads(bees("status", "--json").stdout)["items"]
    assert [(r["item_id"], r["status"], r["wait"]) for r in pending] == [
        (item_id, "pending", "engine_not_running")]

    # the run returns when the item waits for a person's approval of the send
    ran = bees("run", "-w", str(EXAMPLE), "--exit-when-idle")
    assert ran.returncode == 0, ran.stderr
    assert ("nothing left to run here: 1 item waits for approval (bees approvals); stopping"
            in run_lines(ran.stderr))
    assert engine_json(bees_home) is None  # the server it started is stopped and forgotten
    rows = json.loads(bees("status", "--json").stdout)["items"]
    assert [(r["stage"], r["status"]) for r in rows] == [("Send", "waiting for approval")]
    assert rows[0]["reason"].startswith(
        'mail.send {"to": "team@example.com", "subject": "Weekly report", '
        '"body": "# Weekly report')
    waiting = json.loads(bees("approvals", "--json").stdout)["approvals"]
    assert [(w["item_id"], w["request_id"], w["action"]) for w in waiting] == [
        (item_id, 1, "mail.send")]
    assert list(outbox.iterdir()) == []

    approved = bees("approve", item_id)
    assert approved.returncode == 0, approved.stderr
    assert "bees run delivers it when it starts" in approved.stderr
    ran = bees("run", "-w", str(EXAMPLE), "--exit-when-idle")
    assert ran.returncode == 0, ran.stderr
    assert f"delivered the queued decision for {item_id}" in ran.stderr

    rows = json.loads(bees("status", "--json").stdout)["items"]
    assert [(r["item_id"], r["process"], r["stage"], r["status"]) for r in rows] == [
        (item_id, "weekly-report", "Done", "done")]
    shown = json.loads(bees("item", "show", item_id[:10], "--json").stdout)
    # a pick's reason is its tier, with the process and stage whose agents they are
    picks = [(e["stage"], e["pick"]["agent"], e["pick"]["reason"], e["pick"]["process"],
              e["pick"]["of_stage"]) for e in shown["history"] if e["kind"] == "pick"]
    assert picks[:2] == [("Draft", "writer", "stage", "weekly-report", "Draft"),
                         ("Review", "reviewer", "stage", "weekly-report", "Review")]
    assert picks[2:] == [("Send", "sender", "stage", "weekly-report", "Send")]
    report = Path(shown["item"]["run_folder"]) / "Draft" / "report.md"
    assert report.read_text().startswith("# Weekly report\n\n## Summary\n\n2 people sent notes")
    (sent,) = outbox.iterdir()  # each delivery has a file of its own: exactly one send
    assert sent.name.startswith(f"{item_id}-") and sent.suffix == ".eml"
    mail = sent.read_text()
    assert mail.startswith("To: team@example.com\nSubject: Weekly report\n\n# Weekly report")
    assert [(j["action"], j["exit_code"]) for j in shown["journal"]] == [("mail.send", 0)]
    text = bees("item", "show", item_id)
    assert "picked writer: stage agents of weekly-report.Draft" in text.stdout
    assert "request 1 approved by " in text.stdout, text.stdout
    table = bees("status")
    assert table.returncode == 0 and f"{item_id}  weekly-report" in table.stdout


def test_wait_reports_moves_and_sigterm_stops_the_engine(
        bees: BeesRunner, bees_home: Path, space: Space) -> None:
    space.agent("writer")
    space.agent("reviewer", env={"VERDICTS": "changes_requested"})
    space.write("processes/p.yaml", WORK_REVIEW)
    runner = start_bees(bees_home, "run", "-w", str(space.root))
    try:
        until_sync(lambda: engine_json(bees_home) is not None, "engine.json never written")
        server_pid = int(engine_json(bees_home)["pid"])  # type: ignore[index, arg-type]
        created = bees("item", "create", "p", "--title", "Week 2", "--wait",
                       "-w", str(space.root))
        assert created.returncode == 0, created.stderr
        item_id = created.stdout.strip()
        moves = [ln.split(" ", 1)[1] for ln in created.stderr.splitlines()
                 if ln.startswith(item_id)]
        # each move is seen when it lasts longer than a poll (0.2 s); the agents' log shows
        # every stage ran
        assert moves[-1] == "Done: done"
        assert space.lines() == ["Draft writer 1 1 []", "Review reviewer 1 1 []",
                                 'Draft writer 2 1 ["fix round 1"]', "Review reviewer 2 1 []"]
    finally:
        runner.send_signal(signal.SIGTERM)
        out, err = runner.communicate(timeout=60)
    assert runner.returncode == 0, err
    assert engine_json(bees_home) is None
    until_sync(lambda: not pid_alive(server_pid), "the dev server outlived bees run")


@pytest.mark.slow
def test_kill_9_mid_stage_restarts_the_stage_and_finishes_once(
        bees: BeesRunner, bees_home: Path, space: Space) -> None:
    space.agent("writer", env={"SLEEP_FIRST": "60"})
    space.agent("reviewer")
    space.write("processes/p.yaml", WORK_REVIEW)
    item_id = bees("item", "create", "p", "-w", str(space.root)).stdout.strip()
    first = start_bees(bees_home, "run", "--exit-when-idle")
    server_pid = None
    try:
        until_sync(lambda: space.lines() == ["Draft writer 1 1 []"], "the writer never ran")
        server_pid = int(engine_json(bees_home)["pid"])  # type: ignore[index, arg-type]
        first.kill()
        first.wait(timeout=10)
        # the engine dies with the killed run (SIGTERM on its parent's death); its database
        # keeps the run, which the second run's own engine carries on
        until_sync(lambda: not pid_alive(server_pid), "the engine outlived the killed run")
        second = bees("run", "--exit-when-idle", timeout=120)
        assert second.returncode == 0, second.stderr
        assert "engine started" in second.stderr
    finally:
        if server_pid is not None and pid_alive(server_pid):
            os.kill(server_pid, signal.SIGTERM)
    log = space.log.read_text().splitlines()
    assert log == ["Draft writer 1 1 []", "Draft writer 1 2 []", "end Draft 2",
                   "Review reviewer 1 1 []", "end Review 1"]
    shown = json.loads(bees("item", "show", item_id, "--json").stdout)
    kinds = [e["kind"] for e in shown["history"]]
    assert kinds.count("done") == 1
    assert [(e["stage"], e["attempt"]) for e in shown["history"]
            if e["kind"] == "stage_started"] == [("Draft", 1), ("Draft", 2), ("Review", 1)]
    assert shown["item"]["status"] == "done"


async def test_run_on_a_given_temporal_address(
        dev_env: WorkflowEnvironment, bees: BeesRunner, bees_home: Path, space: Space) -> None:
    space.agent("writer")
    space.agent("reviewer")
    space.write("processes/p.yaml", WORK_REVIEW)
    address = dev_env.client.service_client.config.target_host
    item_id = (await asyncio.to_thread(bees, "item", "create", "p", "-w", str(space.root))
               ).stdout.strip()
    ran = await asyncio.to_thread(bees, "run", "--temporal-address", address, "--exit-when-idle")
    assert ran.returncode == 0, ran.stderr
    assert run_lines(ran.stderr)[0].startswith("worker on task queue bees-")  # no engine
    assert not (bees_home / "data" / "temporal.db").exists()
    assert engine_json(bees_home) is None
    result = await dev_env.client.get_workflow_handle(item_id).result()
    assert result == "done"
    assert space.lines() == ["Draft writer 1 1 []", "Review reviewer 1 1 []"]


@pytest.mark.slow
def test_kill_9_after_a_gated_send_does_not_send_twice(
        bees: BeesRunner, bees_home: Path, space: Space) -> None:
    from tests.engine.test_rules import SEND, action_agent, mail_addon

    addon_log = mail_addon(space)
    action_agent(space, "sender", tools=["mail.send"], SLEEP_AFTER="60",
                 actions=[["mail.send", {"to": "team@example.com"}]])
    space.write("processes/p.yaml", SEND.format(approval="required"))
    item_id = bees("item", "create", "p", "-w", str(space.root)).stdout.strip()
    first = start_bees(bees_home, "run")
    server_pid = None
    try:
        until_sync(lambda: status_on(bees_home, item_id) == "waiting for approval",
                   "never waiting for approval")
        server_pid = int(engine_json(bees_home)["pid"])  # type: ignore[index, arg-type]
        approved = bees("approve", item_id, "--action", "1")
        assert approved.returncode == 0, approved.stderr
        assert approved.stderr.startswith(f"{item_id}: request 1 approved by ")
        until_sync(lambda: space.log.exists() and "mail.send 0" in space.log.read_text(),
                   "mail.send never ran")
        first.kill()  # after the send, while the agent still works
        first.wait(timeout=10)
        second = bees("run", "--exit-when-idle", timeout=120)
        assert second.returncode == 0, second.stderr
    finally:
        if server_pid is not None and pid_alive(server_pid):
            os.kill(server_pid, signal.SIGTERM)
    assert addon_log.read_text().splitlines() == ['mail.send {"to": "team@example.com"}']
    log = space.log.read_text().splitlines()
    assert log[0] == "run Send sender 1 1"
    assert log[1] == "mail.send 0 done 1 | "
    assert log[2] == "run Send sender 1 2"
    assert log[3].startswith("mail.send 0 done 1 | mail.send: answered from the journal")
    assert log[4:] == ["end Send 2"]
    text = bees("item", "show", item_id).stdout
    assert "Send round 1: mail.send (attempt 2) answered from the journal" in text
    assert json.loads(bees("status", "--json").stdout)["items"][0]["status"] == "done"


def test_person_commands_refuse_with_the_reason(bees: BeesRunner, space: Space) -> None:
    space.agent("writer")
    space.agent("reviewer")
    space.write("processes/p.yaml", WORK_REVIEW)
    item_id = bees("item", "create", "p", "-w", str(space.root)).stdout.strip()
    retried = bees("retry", item_id)
    assert retried.returncode == 3
    assert retried.stderr.splitlines()[0] == (
        f"error: item {item_id} has not started yet: start it with bees run")
    unknown = bees("approve", "01ZZZZZZZZZZZZZZZZZZZZZZZZ")
    assert unknown.returncode == 1  # not found (issue 15, point 3)
    assert unknown.stderr.splitlines()[0] == (
        "error: no work item '01ZZZZZZZZZZZZZZZZZZZZZZZZ' on this computer")
    nothing = bees("approve", item_id)
    assert nothing.returncode == 3
    assert nothing.stderr.splitlines()[0] == (
        f"error: nothing waits for approval on item {item_id} (it is waiting: the engine is "
        "not running (bees run))")
    outside = bees("action", "mail.send")
    assert outside.returncode == 2
    assert outside.stderr.splitlines()[0] == (
        "error: bees action runs inside a stage: BEES_ITEM_ID, BEES_STAGE and BEES_AGENT "
        "are not set")
    ran = bees("run", "--exit-when-idle")
    assert ran.returncode == 0, ran.stderr
    not_up = bees("retry", item_id)
    assert not_up.returncode == 3
    assert not_up.stderr.splitlines()[0] == f"error: item {item_id} is done: nothing to change"
    cancelled = bees("item", "cancel", item_id)
    assert cancelled.returncode == 3
    assert "Traceback" not in retried.stderr + unknown.stderr + not_up.stderr + outside.stderr
