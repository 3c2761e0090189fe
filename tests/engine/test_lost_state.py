"""Local state that is lost is rebuilt, not silently dropped (issue 12, point 7), end to end
through the ``bees`` command on the dev server ``bees run`` starts: a deleted local record is
rebuilt from the engine's runs; a deleted engine database leaves the item ``lost`` at its
stage, and ``bees retry`` runs that stage again without sending twice."""

from __future__ import annotations

import json
import signal
from datetime import timedelta
from pathlib import Path

import pytest
from ulid import ULID

from bees_cli.usecases.actions import action_key, digest_of
from bees_cli.utc import display_utc, parse_utc
from tests.conftest import EXAMPLE, BeesRunner, run_lines
from tests.engine.conftest import Space
from tests.engine.test_cli import start_bees
from tests.engine.test_rules import HERE, SEND, action_agent
from tests.support.wait import until_sync

pytestmark = pytest.mark.slow

MAIL = {"to": "team@example.com"}


def rows(bees: BeesRunner) -> list[dict[str, object]]:
    return list(json.loads(bees("status", "--json", "--mine").stdout)["items"])


def test_a_deleted_record_is_rebuilt_from_the_engine_and_the_approval_then_works(
        bees: BeesRunner, bees_home: Path, tmp_path: Path) -> None:
    outbox = tmp_path / "outbox"
    outbox.mkdir()
    assert bees("link", "outbox", str(outbox), "-w", str(EXAMPLE)).returncode == 0
    item_id = bees("item", "create", "weekly-report", "-w", str(EXAMPLE)).stdout.strip()
    first = bees("run", "-w", str(EXAMPLE), "--exit-when-idle")
    assert first.returncode == 0, first.stderr
    (before,) = rows(bees)
    assert (before["stage"], before["status"]) == ("Send", "waiting for approval")
    asked = json.loads(bees("approvals", "--json").stdout)["approvals"]

    record = bees_home / "data" / "record.db"
    for side in ("", "-wal", "-shm"):
        Path(f"{record}{side}").unlink(missing_ok=True)
    assert rows(bees) == []  # nothing here says the item exists, until bees run asks the engine

    again = bees("run", "-w", str(EXAMPLE), "--exit-when-idle")
    assert again.returncode == 0, again.stderr
    assert "recovered 1 work item from the engine" in run_lines(again.stderr)
    (after,) = rows(bees)
    same = ("item_id", "process", "title", "workspace", "run_folder", "stage", "status",
            "reason", "wait", "agent")
    assert {k: after[k] for k in same} == {k: before[k] for k in same}
    assert after["created"] == display_utc(ULID.from_str(item_id).datetime)
    assert timedelta(0) <= parse_utc(str(before["created"])) - parse_utc(
        str(after["created"])) < timedelta(seconds=1)
    assert json.loads(bees("approvals", "--json").stdout)["approvals"] == asked
    shown = json.loads(bees("item", "show", item_id, "--json").stdout)
    assert [e["kind"] for e in shown["history"]][:2] == ["created", "recovered"]
    assert "Send: rebuilt from the engine (waiting for approval): the local record had lost " \
           "it; 1 approval request(s), 0 journal entries" in bees("item", "show", item_id).stdout

    approved = bees("approve", item_id)
    assert approved.returncode == 0, approved.stderr
    last = bees("run", "-w", str(EXAMPLE), "--exit-when-idle")
    assert last.returncode == 0, last.stderr
    assert f"delivered the queued decision for {item_id}" in last.stderr
    assert [(r["stage"], r["status"]) for r in rows(bees)] == [("Done", "done")]
    (sent,) = outbox.iterdir()  # one delivery
    assert sent.name.startswith(f"{item_id}-")
    assert "recovered" not in last.stderr  # a record that has the row rebuilds nothing


def test_a_deleted_engine_database_leaves_the_item_lost_and_retry_sends_once(
        bees: BeesRunner, bees_home: Path, space: Space) -> None:
    outbox = space.root.parent / "outbox"
    outbox.mkdir()
    command = f'["${{BEES_PYTHON}}", "{HERE / "outbox_addon.py"}"]'
    space.write("addons/mail.yaml", f"actions:\n  send: {{kind: send, command: {command}}}\n")
    action_agent(space, "sender", tools=["mail.send"], actions=[["mail.send", MAIL]],
                 OUTBOX=str(outbox), BLOCK_FILE=str(space.root.parent / "no-block"),
                 SLEEP_AFTER="600")
    space.write("processes/p.yaml", SEND.format(approval="none"))
    item_id = bees("item", "create", "p", "-w", str(space.root)).stdout.strip()

    # the send is done (journaled) and the stage still runs when bees run stops
    run = start_bees(bees_home, "run")
    try:
        until_sync(lambda: space.log.exists() and "mail.send 0" in space.log.read_text(),
                   cap=120)
    finally:
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    assert [(r["stage"], r["status"], r["reason"], r["wait"]) for r in rows(bees)] == [
        ("Send", "waiting", "the engine is not running (bees run)", "engine_not_running")]
    data = bees_home / "data"
    for side in ("", "-wal", "-shm"):
        Path(f"{data / 'temporal.db'}{side}").unlink(missing_ok=True)

    found = bees("run", "--exit-when-idle")
    assert found.returncode == 0, found.stderr
    assert (f"{item_id} Send: lost: the engine's database was replaced; `bees retry {item_id}` "
            "starts Send again from the top") in run_lines(found.stderr)
    assert [(r["stage"], r["status"], r["reason"], r["wait"]) for r in rows(bees)] == [
        ("Send", "lost", "the engine's database was replaced", "person")]
    shown = bees("item", "show", item_id).stdout
    assert ("Send: lost: the engine's database was replaced (it was waiting: the engine is "
            "not running (bees run)); bees retry starts it again") in shown

    retried = bees("retry", item_id)
    assert retried.returncode == 0, retried.stderr
    assert retried.stderr.splitlines()[-1].startswith(f"{item_id}: Send starts again (asked by ")
    done = bees("run", "--exit-when-idle")
    assert done.returncode == 0, done.stderr
    assert [(r["stage"], r["status"]) for r in rows(bees)] == [("Done", "done")]

    deliveries = [json.loads(p.read_text()) for p in outbox.iterdir()]
    assert deliveries == [{"action": "mail.send", "input": MAIL,
                           "key": action_key(item_id, "Send", digest_of(MAIL))}]
    journal = json.loads(bees("item", "show", item_id, "--json").stdout)["journal"]
    (ran,) = journal
    lines = space.lines()
    stored = lines[-1].partition("(it ran at ")[2].partition(")")[0]  # the journal's own time
    assert lines == [
        "run Send sender 1 1", "mail.send 0 delivered 1 | ", "run Send sender 1 2",
        f"mail.send 0 delivered 1 | mail.send: answered from the journal (it ran at "
        f"{stored}); not run again"]
    assert display_utc(parse_utc(stored)) == ran["at"]  # --json: to whole seconds
