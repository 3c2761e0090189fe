"""The action journal survives a lost ``record.db`` (a fault gap of issue 12, points 1 and 7):
each intent and result is also kept in the run folder (``RUN/journal/actions.jsonl``), so a
stage that restarts after the record was deleted and rebuilt answers a send that already ran
from that copy, and an intent without a result found there is held as "may already have run".
End to end through the ``bees`` command on the dev server ``bees run`` starts."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from bees_cli.errors import UserError
from bees_cli.machine.computer import Computer
from bees_cli.record.local import LocalRecord
from bees_cli.record.run_journal import journal_path, recall, write_end, write_intent
from bees_cli.usecases.actions import action_key, digest_of
from bees_cli.usecases.items import create_item
from bees_cli.utc import display_utc, parse_utc
from tests.conftest import BeesRunner, run_lines
from tests.engine.conftest import Space, status_on
from tests.engine.test_actions import addon_lines, ops_addon
from tests.engine.test_cli import start_bees
from tests.engine.test_rules import HERE, SEND, action_agent, here
from tests.support.wait import until_sync

MAIL = {"to": "team@example.com"}


def rows(bees: BeesRunner) -> list[dict[str, object]]:
    return list(json.loads(bees("status", "--json", "--mine").stdout)["items"])


def delete_record(home: Path) -> None:
    record = home / "data" / "record.db"
    for side in ("", "-wal", "-shm"):
        Path(f"{record}{side}").unlink(missing_ok=True)


@pytest.mark.slow
def test_a_send_journaled_in_the_run_folder_is_not_sent_again_after_record_db_is_lost(
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
    (row,) = rows(bees)
    folder = Path(str(row["run_folder"]))

    # the send ran (delivered and journaled); the stage still runs when bees run stops
    run = start_bees(bees_home, "run")
    try:
        until_sync(lambda: space.log.exists() and "mail.send 0" in space.log.read_text(),
                   cap=120)
    finally:
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=60)
    assert run.returncode == 0, err

    delete_record(bees_home)
    done = bees("run", "--exit-when-idle")
    assert done.returncode == 0, done.stderr
    assert "recovered 1 work item from the engine" in run_lines(done.stderr)
    assert [(r["stage"], r["status"]) for r in rows(bees)] == [("Done", "done")]

    deliveries = [json.loads(p.read_text()) for p in outbox.iterdir()]
    assert deliveries == [{"action": "mail.send", "input": MAIL,
                           "key": action_key(item_id, "Send", digest_of(MAIL))}]
    lines = [json.loads(line) for line in journal_path(folder).read_text().splitlines()]
    assert [(ln["type"], ln["stage"], ln["action"], ln["digest"], ln.get("how"))
            for ln in lines] == [("intent", "Send", "mail.send", digest_of(MAIL), None),
                                 ("end", "Send", "mail.send", digest_of(MAIL), "result")]
    assert (lines[0]["attempt"], lines[1]["entry"]["exit_code"]) == (1, 0)
    ran_at = lines[1]["entry"]["at"]
    first, sent, again, answered = space.lines()
    assert (first, sent, answered) == (
        "run Send sender 1 1", "mail.send 0 delivered 1 | ",
        f"mail.send 0 delivered 1 | mail.send: answered from the journal (it ran at "
        f"{ran_at}); not run again")
    # the restarted stage (its attempt depends on when the engine saw the worker go)
    assert again.startswith("run Send sender 1 ") and int(again.split()[-1]) > 1
    journal = json.loads(bees("item", "show", item_id, "--json").stdout)["journal"]
    assert [(e["action"], e["at"]) for e in journal] == [
        ("mail.send", display_utc(parse_utc(ran_at)))]  # --json: to whole seconds


def test_the_run_folders_copy_keeps_the_first_success_and_the_latest_open_intent(
        tmp_path: Path) -> None:
    digest = digest_of(MAIL)
    keys = {"stage": "Send", "action": "mail.send", "digest": digest}
    assert recall(tmp_path, **keys).hit is None  # no file: nothing known
    write_intent(tmp_path, attempt=1, at="2026-12-01T08:00:00Z", **keys)
    assert recall(tmp_path, **keys).intent == {"attempt": 1, "at": "2026-12-01T08:00:00Z"}
    write_end(tmp_path, how="again", entry=None, **keys)
    assert recall(tmp_path, **keys).intent is None
    write_intent(tmp_path, attempt=2, at="2026-12-01T08:01:00Z", **keys)
    failed = {"stage": "Send", "action": "mail.send", "digest": digest, "exit_code": 1,
              "at": "2026-12-01T08:01:01Z"}
    write_end(tmp_path, how="result", entry=failed, **keys)
    assert recall(tmp_path, **keys).hit is None  # a failed run is not an answer
    with journal_path(tmp_path).open("a") as torn:  # a power cut in the middle of a line
        torn.write('{"type": "intent", "stage": "Se')
    write_intent(tmp_path, attempt=3, at="2026-12-01T08:02:00Z", **keys)
    write_intent(tmp_path, attempt=1, at="2026-12-01T08:02:30Z", stage="Send",
                 action="mail.send", digest="0" * 64)
    found = recall(tmp_path, **keys)
    assert (found.hit, found.intent) == (None, {"attempt": 3, "at": "2026-12-01T08:02:00Z"})
    ok = dict(failed, exit_code=0, at="2026-12-01T08:02:05Z")
    write_end(tmp_path, how="result", entry=ok, **keys)
    write_end(tmp_path, how="result", entry=dict(ok, at="later"), **keys)
    found = recall(tmp_path, **keys)
    assert (found.hit, found.intent) == (ok, None)
    assert len(journal_path(tmp_path).read_text().splitlines()) == 9


@pytest.mark.slow
def test_an_intent_without_a_result_in_the_run_folder_is_held_after_record_db_is_lost(
        bees: BeesRunner, bees_home: Path, space: Space) -> None:
    outbox = space.root.parent / "outbox"
    outbox.mkdir()
    command = f'["${{BEES_PYTHON}}", "{HERE / "outbox_addon.py"}"]'
    space.write("addons/mail.yaml", f"actions:\n  send: {{kind: send, command: {command}}}\n")
    action_agent(space, "sender", tools=["mail.send"], actions=[["mail.send", MAIL]],
                 OUTBOX=str(outbox), BLOCK_FILE=str(space.root.parent / "no-block"))
    space.write("processes/p.yaml", SEND.format(approval="none"))
    item_id = bees("item", "create", "p", "-w", str(space.root)).stdout.strip()
    (row,) = rows(bees)
    # the record lost everything of the send; the run folder says it was about to run
    write_intent(Path(str(row["run_folder"])), stage="Send", action="mail.send",
                 digest=digest_of(MAIL), attempt=1, at="2026-12-01T08:00:00Z")
    assert LocalRecord(bees_home / "data" / "record.db").journal(item_id) == []

    run = start_bees(bees_home, "run")
    try:
        until_sync(lambda: status_on(bees_home, item_id) == "waiting for approval", cap=120)
        (asked,) = json.loads(bees("approvals", "--json").stdout)["approvals"]
        assert asked["interrupted_at"] == "2026-12-01T08:00:00Z"  # --json: whole seconds
    finally:
        run.send_signal(signal.SIGTERM)
        run.communicate(timeout=60)
    assert list(outbox.iterdir()) == []  # held for a person, not run again by itself


async def test_an_action_whose_intent_cannot_reach_the_run_folder_does_not_run(
        space: Space, record: LocalRecord) -> None:
    tools = ops_addon(space)
    action_agent(space, "sender", tools=tools, actions=[])
    space.write("processes/p.yaml", SEND.format(approval="none"))
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    record.set_state(item.id, status="running", stage="Send", agent="sender")
    env = dict(os.environ, BEES_ITEM_ID=item.id, BEES_STAGE="Send", BEES_AGENT="sender",
               BEES_TEMPORAL_ADDRESS="127.0.0.1:9", ADDON_LOG=str(space.root.parent / "addon.log"))
    blocked = item.run_folder / "journal"
    blocked.parent.mkdir(parents=True, exist_ok=True)
    blocked.write_text("not a folder")  # the journal's folder cannot be made
    with pytest.raises(UserError) as failed:
        await here().action("ops.send", '{"n": 1}', env=env)
    assert failed.value.message == (
        f"cannot write the run folder's journal: [Errno 17] File exists: '{blocked}'")
    assert addon_lines(space) == []  # not run
    digest = digest_of({"n": 1})
    assert record.open_intent(item.id, "Send", "ops.send", digest) is None  # nothing held

    blocked.unlink()
    sent = await here().action("ops.send", '{"n": 1}', env=env)
    assert (sent.exit_code, sent.stdout, sent.from_journal) == (0, "done 1\n", False)
    assert addon_lines(space) == ['ops.send {"n": 1}']
    assert recall(item.run_folder, stage="Send", action="ops.send", digest=digest).hit == (
        record.journal_hit(item.id, "Send", "ops.send", digest))
