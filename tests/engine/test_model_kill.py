"""``kill -9`` of ``bees run`` in the middle of a model call, end to end through the ``bees``
command (issue 15's trial found no test of it): the model call heartbeats
(``MODEL_HEARTBEAT_TIMEOUT``, 10 s), so the next ``bees run`` asks the model that turn
again once the engine notices the lost worker, and finishes the stage; the model is asked
once per turn plus once for the lost turn, the tool action of the turn before runs once, and
the stage's transcript holds each turn once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bees_cli.engine.server import pid_alive
from bees_cli.engine.transcript import transcript_lines, transcript_path
from bees_cli.record.local import LocalRecord
from tests.agents.model_server import Answer, ScriptedServer, serve
from tests.conftest import BeesRunner
from tests.engine.conftest import Space
from tests.engine.test_cli import engine_json, start_bees
from tests.engine.test_rules import SEND, mail_addon
from tests.support.wait import until_sync

pytestmark = pytest.mark.slow


@pytest.fixture
def model_server() -> Iterator[ScriptedServer]:
    with serve() as server:
        yield server


class Runs:
    """The ``bees run`` processes of one computer; :meth:`stop` ends them and the engine."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.started: list[subprocess.Popen[str]] = []

    def start(self) -> subprocess.Popen[str]:
        run = start_bees(self.home, "run")
        self.started.append(run)
        return run

    def stop(self) -> None:
        info = engine_json(self.home)
        for run in self.started:
            if run.poll() is None:
                run.send_signal(signal.SIGTERM)
                run.communicate(timeout=60)
        if info is not None and pid_alive(int(info["pid"])):  # type: ignore[arg-type]
            os.kill(int(info["pid"]), signal.SIGTERM)  # type: ignore[arg-type]


@pytest.fixture
def runs(bees_home: Path) -> Iterator[Runs]:
    made = Runs(bees_home)
    try:
        yield made
    finally:
        made.stop()


@pytest.mark.timeout(120)
def test_bees_run_killed_mid_model_call_the_next_run_asks_that_turn_again_and_finishes(
        bees: BeesRunner, bees_home: Path, space: Space, model_server: ScriptedServer, runs: Runs,
        monkeypatch: pytest.MonkeyPatch) -> None:
    log = mail_addon(space, declared=True)
    monkeypatch.setenv("ADDON_LOG", str(log))  # the add-on's command runs under bees run
    space.write("agents/sender.yaml", "\n".join([
        "instructions: send it", "tools: [mail.send]", "runner:", "  model:",
        f"    base_url: {model_server.base_url}", "    name: scripted"]) + "\n")
    space.write("processes/p.yaml", SEND.format(approval="none"))
    thinking = threading.Event()
    model = model_server.model
    model.push(Answer.tool_calls(("c1", "mail__send", '{"to": "team"}')),
               Answer.reply("sent").held(thinking),  # turn 2: killed while it thinks
               Answer.reply("sent"))                 # turn 2 again, on the next bees run
    created = bees("item", "create", "p", "-w", str(space.root))
    assert created.returncode == 0, created.stderr
    item_id = created.stdout.strip()

    first = runs.start()
    until_sync(lambda: len(model.received) == 2, cap=60)
    first.kill()  # SIGKILL: no cleanup, the engine it started stays up
    first.communicate(timeout=10)
    thinking.set()  # the answer goes to a dead connection
    assert log.read_text().splitlines() == ['mail.send {"to": "team"}']

    runs.start()

    def status() -> str:
        return str(json.loads(bees("status", "--json").stdout)["items"][0]["status"])

    until_sync(lambda: status() == "done", cap=60)
    # turn 1, turn 2 (lost with the worker), turn 2 asked again: the same messages
    assert len(model.received) == 3
    # (the new worker asks to stream again: the server's whole answers were the first's to
    # remember; issue 26, point 2)
    unstreamed = {"stream": False}
    assert {**model.received[2].body, **unstreamed, "stream_options": None} == {
        **model.received[1].body, **unstreamed, "stream_options": None}
    assert log.read_text().splitlines() == ['mail.send {"to": "team"}']  # ran once
    run_folder = LocalRecord(bees_home / "data" / "record.db").item(item_id).run_folder
    entries = transcript_lines(transcript_path(run_folder, "Send"))
    assert [(e["kind"], e["turn"]) for e in entries] == [
        ("opening", 1), ("reply", 1), ("tool", 1), ("reply", 2)]
    assert [e["attempt"] for e in entries] == [1, 1, 1, 1]
