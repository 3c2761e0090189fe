"""An add-on action runs at most once through a power cut (issue 12 point 1), end to end through
the ``bees`` command: the engine, ``bees run`` and the stage's processes are killed after the
add-on took effect but before its result was written; the restarted stage holds the action for
a person ("may already have run"), who answers ``--ran`` or ``--again``."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bees_cli.engine.server import pid_alive
from bees_cli.usecases.actions import action_key, digest_of
from bees_cli.utc import display_utc, parse_utc
from tests.conftest import BeesRunner
from tests.engine.conftest import Space, status_on
from tests.engine.test_cli import engine_json, start_bees
from tests.engine.test_rules import HERE, SEND, action_agent
from tests.support.wait import until_sync

MAIL = {"to": "team@example.com"}

pytestmark = pytest.mark.slow


class Cut:
    """A power cut after ``mail.send`` delivered: the item, its outbox and the restarted run."""

    def __init__(self, bees: BeesRunner, home: Path, space: Space) -> None:
        self.bees, self.home, self.space = bees, home, space
        self.outbox = space.root.parent / "outbox"
        self.outbox.mkdir()
        self.block = space.root.parent / "block"
        self.block.write_text("")
        command = f'["${{BEES_PYTHON}}", "{HERE / "outbox_addon.py"}"]'
        space.write("addons/mail.yaml", f"actions:\n  send: {{kind: send, command: {command}}}\n")
        action_agent(space, "sender", tools=["mail.send"], actions=[["mail.send", MAIL]],
                     OUTBOX=str(self.outbox), BLOCK_FILE=str(self.block))
        space.write("processes/p.yaml", SEND.format(approval="none"))
        self.item_id = bees("item", "create", "p", "-w", str(space.root)).stdout.strip()
        self.run: subprocess.Popen[str] | None = None

    def deliveries(self) -> list[dict[str, object]]:
        return [json.loads(p.read_text()) for p in sorted(self.outbox.iterdir())]

    def cut(self) -> None:
        """Run until the add-on delivered and blocks, then kill -9 the engine, ``bees run``
        and the stage's process group, all at once, as a power cut does."""
        first = start_bees(self.home, "run")
        until_sync(lambda: self.block.read_text() != "", cap=120)
        addon_pid = int(self.block.read_text())
        engine = int(engine_json(self.home)["pid"])  # type: ignore[index, arg-type]
        stage_group = os.getpgid(addon_pid)
        assert stage_group != os.getpgid(0)
        first.kill()
        os.kill(engine, signal.SIGKILL)
        os.killpg(stage_group, signal.SIGKILL)
        first.wait(timeout=10)
        until_sync(lambda: not pid_alive(engine) and not pid_alive(addon_pid))
        self.block.unlink()  # the add-on no longer blocks after the restart
        assert len(self.deliveries()) == 1

    def restart(self) -> None:
        self.run = start_bees(self.home, "run")
        until_sync(lambda: self.status() == "waiting for approval", cap=180)

    def status(self) -> str:
        return status_on(self.home, self.item_id)

    def intent_at(self) -> str:
        db = sqlite3.connect(self.home / "data" / "record.db")
        (at,) = db.execute("SELECT at FROM intents ORDER BY seq LIMIT 1").fetchone()
        db.close()
        return str(at)

    def stop(self) -> None:
        info = engine_json(self.home)
        if self.run is not None and self.run.poll() is None:
            self.run.send_signal(signal.SIGTERM)
            self.run.communicate(timeout=60)
        if info is not None and pid_alive(int(info["pid"])):  # type: ignore[arg-type]
            os.kill(int(info["pid"]), signal.SIGTERM)  # type: ignore[arg-type]


@pytest.fixture
def cut(bees: BeesRunner, bees_home: Path, space: Space) -> Iterator[Cut]:
    made = Cut(bees, bees_home, space)
    try:
        yield made
    finally:
        made.stop()


def test_an_interrupted_send_is_held_and_ran_finishes_without_a_second_delivery(
        cut: Cut, bees: BeesRunner) -> None:
    cut.cut()
    cut.restart()
    at = cut.intent_at()
    waiting = json.loads(bees("approvals", "--json").stdout)["approvals"]
    assert [(w["item_id"], w["action"], w["kind"], w["interrupted_at"]) for w in waiting] == [
        (cut.item_id, "mail.send", "send", display_utc(parse_utc(at)))]
    assert "  mail.send  may already have run: " in bees("approvals").stdout
    plain = bees("approve", cut.item_id)
    assert plain.returncode == 2
    assert plain.stderr.splitlines()[0] == (
        f"error: mail.send may already have run (interrupted at {at}): say whether it ran")
    done = bees("approve", cut.item_id, "--ran")
    assert done.returncode == 0, done.stderr
    until_sync(lambda: cut.status() == "done", cap=120)
    assert len(cut.deliveries()) == 1
    log = cut.space.log.read_text().splitlines()
    assert log == ["run Send sender 1 1", "run Send sender 1 2",
                   f"mail.send 0  | mail.send: answered from the journal (it ran at {at}); "
                   "not run again", "end Send 2"]
    # the history says whose word it is, and claims no exit code nobody recorded
    story = [line for line in bees("item", "show", cut.item_id).stdout.splitlines()
             if "answered from the journal" in line]
    shown_at = at.split(".")[0].rstrip("Z") + "Z"  # the history shows whole seconds
    assert [line.split(": ", 1)[1] for line in story] == [
        f"mail.send (attempt 2) answered from the journal: it ran at {shown_at}, "
        "as a person said (bees approve --ran; no exit code or output recorded); "
        "not run again"], story


def test_an_interrupted_send_run_again_delivers_exactly_once_more(
        cut: Cut, bees: BeesRunner) -> None:
    cut.cut()
    cut.restart()
    done = bees("approve", cut.item_id, "--again")
    assert done.returncode == 0, done.stderr
    until_sync(lambda: cut.status() == "done", cap=120)
    deliveries = cut.deliveries()
    key = action_key(cut.item_id, "Send", digest_of(MAIL))
    assert [(d["action"], d["input"], d["key"]) for d in deliveries] == [
        ("mail.send", MAIL, key), ("mail.send", MAIL, key)]
    log = cut.space.log.read_text().splitlines()
    assert log == ["run Send sender 1 1", "run Send sender 1 2",
                   "mail.send 0 delivered 2 | ", "end Send 2"]
