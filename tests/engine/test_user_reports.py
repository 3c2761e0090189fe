"""Problems a new user met with the CLI, each pinned by a test (one worker per computer,
a corrupt record, refusals, hints, interrupted stages)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bees_cli.engine.server import pid_alive
from bees_cli.errors import EngineError
from bees_cli.record.local import LocalRecord
from tests.conftest import BeesRunner, run_lines
from tests.engine.conftest import Space
from tests.support.wait import until_sync

ONE_STAGE = """\
stages:
  - name: Work
    kind: work
    agents: [alpha]
  - name: Done
    kind: done
"""


def start_bees(home: Path, cwd: Path, *args: str) -> subprocess.Popen[str]:
    """Start ``python -m bees_cli ARGS`` in the background on computer ``home``."""
    env = dict(os.environ, BEES_HOME=str(home))
    return subprocess.Popen([sys.executable, "-m", "bees_cli", *args], env=env, text=True,
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


# -- 1. one bees run per computer ------------------------------------------------------------

def test_a_second_bees_run_is_refused(bees: BeesRunner, bees_home: Path,
                                      tmp_path: Path) -> None:
    from bees_cli.usecases.run import hold_worker_lock

    lock = hold_worker_lock(bees_home / "data")
    try:
        second = bees("run", cwd=tmp_path)
    finally:
        lock.release()
    assert second.returncode == 3, second.stderr
    assert second.stderr.splitlines()[0] == (
        f"error: bees run is already running on this computer (pid {os.getpid()})")
    assert "Traceback" not in second.stderr


@pytest.mark.slow
def worker_up(home: Path) -> bool:
    """True once ``bees run`` on the computer ``home`` runs its worker (``worker.json`` names
    the engine's address; while it starts, the address is null)."""
    try:
        return bool(json.loads((home / "data" / "worker.json").read_text())["address"])
    except (FileNotFoundError, ValueError, KeyError):
        return False


def test_bees_run_stops_when_its_engine_goes_away(bees_home: Path, tmp_path: Path) -> None:
    run = start_bees(bees_home, tmp_path, "run")
    engine = bees_home / "data" / "engine.json"
    try:
        until_sync(lambda: worker_up(bees_home), "the worker never came up")  # its engine is up
        pid = int(json.loads(engine.read_text())["pid"])
        os.kill(pid, signal.SIGKILL)
        _out, err = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 1, err
    assert "error: the engine at " in err and f"stopped (process {pid} is gone)" in err
    assert "Traceback" not in err
    assert not pid_alive(pid)


# -- 2. a corrupt record, and a create that fails half-way ---------------------------------

def test_a_corrupt_record_is_one_error_not_a_traceback(bees: BeesRunner, bees_home: Path,
                                                       tmp_path: Path) -> None:
    db = bees_home / "data" / "record.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(bytes(range(256)) * 16)
    shown = bees("item", "show", "01ABCDEF")
    assert shown.returncode == 1
    assert shown.stderr.splitlines()[0] == (
        f"error: {db} is not a Bees record (file is not a database)")
    assert "move it aside" in shown.stderr and "temporal.db" in shown.stderr
    assert "Traceback" not in shown.stderr
    as_json = bees("status", "--json")
    assert as_json.returncode == 1
    error = json.loads(as_json.stdout)["error"]
    assert error["message"] == f"{db} is not a Bees record (file is not a database)"


def test_a_create_that_fails_half_way_leaves_no_item(space: Space, record: LocalRecord,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from bees_cli.machine.computer import Computer
    from bees_cli.machine.paths import default_runs_dir
    from bees_cli.schedules import owners
    from bees_cli.usecases.items import create_item

    space.agent("alpha")
    space.write("processes/p.yaml", ONE_STAGE)

    def broken(*_: object) -> None:
        raise EngineError("the claim step broke")

    monkeypatch.setattr(owners, "claim_at_create", broken)
    with pytest.raises(EngineError, match="the claim step broke"):
        create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                    computer=Computer.load())
    assert record.items() == []
    runs = default_runs_dir()
    assert not runs.exists() or list(runs.iterdir()) == []


# -- 3. a denial needs a reason, engine up or not ------------------------------------------

def test_a_denial_without_a_reason_is_refused_at_once(bees: BeesRunner, space: Space,
                                                      record: LocalRecord) -> None:
    space.agent("alpha")
    space.write("processes/p.yaml", ONE_STAGE)
    item_id = bees("item", "create", "p", "-w", str(space.root)).stdout.strip()
    for reason in ("", "  "):
        denied = bees("deny", item_id, "--reason", reason)
        assert denied.returncode == 2, denied.stderr
        assert denied.stderr.splitlines()[0] == "error: a denial needs a reason (--reason TEXT)"
    assert record.queued_controls() == 0


# -- 7. unknown and ambiguous ids, the same everywhere -------------------------------------

def test_unknown_and_ambiguous_ids_read_the_same_in_every_command(
        bees: BeesRunner, record: LocalRecord) -> None:
    for n in range(3):
        record.add_item(id=f"01M8KFMAAAAAAAAAAAAAAAAAA{n}", process="p", title="T",
                        workspace="/w", run_folder="/r", input="{}", stage="Work")
    commands = [("approve",), ("deny", "--reason", "no"), ("retry",), ("item", "accept"),
                ("item", "cancel"), ("item", "show")]
    for command in commands:
        unknown = bees(*command[:2 if command[0] == "item" else 1], "01NSCHTEM",
                       *command[2 if command[0] == "item" else 1:])
        assert unknown.returncode == 1, (command, unknown.stderr)  # not found
        assert unknown.stderr.splitlines()[0] == "error: no work item '01NSCHTEM' on this computer"
        many = bees(*command[:2 if command[0] == "item" else 1], "01m8kfm",
                    *command[2 if command[0] == "item" else 1:])
        assert many.returncode == 2, (command, many.stderr)
        assert many.stderr.splitlines()[0] == "error: '01m8kfm' matches 3 items"
    as_json = bees("item", "show", "01M8KFM", "--json")
    assert json.loads(as_json.stdout)["error"]["code"] == "ambiguous"


# -- 5. Ctrl-C of bees run mid-stage ---------------------------------------------------------

def test_ctrl_c_mid_stage_says_waiting_and_the_restart_notes_the_interruption(
        bees: BeesRunner, bees_home: Path, space: Space) -> None:
    space.agent("alpha", env={"SLEEP_FIRST": "60"})
    space.write("processes/p.yaml", ONE_STAGE)
    item_id = bees("item", "create", "p", "-w", str(space.root)).stdout.strip()
    first = start_bees(bees_home, space.root, "run", "--exit-when-idle")
    try:
        until_sync(lambda: space.lines() == ["Work alpha 1 1 []"], "alpha never ran")
        first.send_signal(signal.SIGINT)
        _out, err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err
    assert run_lines(err)[-1] == "stopped"
    rows = json.loads(bees("status", "--json").stdout)["items"]
    assert [(r["status"], r["reason"], r["wait"]) for r in rows] == [
        ("waiting", "the engine is not running (bees run)", "engine_not_running")]
    second = bees("run", "--exit-when-idle", cwd=space.root, timeout=120)
    assert second.returncode == 0, second.stderr
    shown = bees("item", "show", item_id)
    assert "Work round 1: attempt 1 interrupted: bees run stopped" in shown.stdout
    rows = json.loads(bees("status", "--json").stdout)["items"]
    assert (rows[0]["status"], rows[0]["item_id"]) == ("done", item_id)
    logs = json.loads(bees("item", "show", item_id, "--json").stdout)["logs"]
    assert {Path(log).name for log in logs} >= {"Work-r1-a1.stdout", "Work-r1-a2.stdout"}


# -- 6. --wait with the engine down, --timeout ------------------------------------------------

def test_wait_says_bees_run_is_down_and_times_out(bees: BeesRunner, space: Space) -> None:
    space.agent("alpha")
    space.write("processes/p.yaml", ONE_STAGE)
    created = bees("item", "create", "p", "-w", str(space.root), "--wait", "--timeout", "0.5")
    assert created.returncode == 1
    item_id = created.stdout.strip()
    lines = created.stderr.splitlines()
    assert lines.count("waiting for bees run to start (Ctrl-C to stop)") == 1
    assert lines[-2] == (f"error: timed out after 0.5 s waiting for {item_id} (status: "
                         "waiting: the engine is not running (bees run))")
    shown = bees("item", "create", "--help")
    assert "--timeout SECONDS" in shown.stdout and "--agent AGENT" in shown.stdout
    assert "--folder FOLDER" in shown.stdout


# -- 8. hints that name real commands ----------------------------------------------------------

def test_engine_down_hints_name_the_real_command(bees: BeesRunner, record: LocalRecord) -> None:
    record.add_item(id="01M8KFMAAAAAAAAAAAAAAAAAA0", process="p", title="T", workspace="/w",
                    run_folder="/r", input="{}", stage="Review")
    record.set_state("01M8KFMAAAAAAAAAAAAAAAAAA0", status="waiting for a person",
                     reason="Review asked for changes 3 times")
    accepted = bees("item", "accept", "01M8KFMAAAAAAAAAAAAAAAAAA0")
    assert accepted.returncode == 1
    assert accepted.stderr.splitlines() == [
        "error: the engine is not running on this computer",
        "hint: start it with `bees run`, then `bees item accept 01M8KFMAAAAAAAAAAAAAAAAAA0`"]


def test_a_wrong_temporal_address_hints_at_the_option(
        bees_home: Path, record: LocalRecord, monkeypatch: pytest.MonkeyPatch) -> None:
    from bees_cli.engine import client
    from bees_cli.machine.computer import Computer
    from bees_cli.usecases import Bees

    async def refused(address: str, **_: object) -> None:
        raise EngineError(f"cannot reach the Temporal engine at {address}: refused",
                          hint="is `bees run` up? see temporal.log in the data dir")

    monkeypatch.setattr(client, "connect", refused)
    bees = Bees(Computer.load())
    with pytest.raises(EngineError) as error:
        asyncio.run(bees.run(workspace_path=None, address="127.0.0.1:1",
                             exit_when_idle=True))
    assert error.value.hint == "check the address given with --temporal-address"


# -- 9. continue of an item that was never relinquished ----------------------------------------

def test_continue_of_an_item_never_relinquished_is_refused(bees: BeesRunner,
                                                           space: Space) -> None:
    space.agent("alpha")
    space.write("processes/p.yaml", ONE_STAGE)
    item_id = bees("item", "create", "p", "-w", str(space.root)).stdout.strip()
    continued = bees("continue", item_id, "-w", str(space.root))
    assert continued.returncode == 3, continued.stderr
    assert continued.stderr.splitlines()[0] == (
        f"error: item {item_id} runs here already (status: waiting: the engine is not "
        "running (bees run)): only a relinquished item can be continued")
