"""A stage ends with its processes, also when ``bees run`` is killed with ``kill -9`` (issue 12,
point 8): the agent dies with it, the next ``bees run`` stops the helpers it left and takes
over the engine it left, and ``bees status`` / ``bees doctor`` say it was not running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from bees_cli.engine.server import EngineServer, engines_on, ensure_engine, stop_engine
from tests.conftest import BeesRunner, run_lines
from tests.engine.conftest import Space
from tests.engine.test_cli import engine_json, start_bees
from tests.engine.test_user_reports import ONE_STAGE
from tests.support.wait import until_sync

SPAWNER = Path(__file__).resolve().parent / "spawner_agent.py"


def gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (exited, or a zombie nobody reaped yet)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def checks(bees: BeesRunner) -> dict[str, dict[str, Any]]:
    """``bees doctor --json``'s checks by name."""
    report = json.loads(bees("doctor", "--json").stdout)
    return {c["check"]: c for c in report["checks"]}


@pytest.fixture
def leftovers() -> Iterator[list[int]]:
    """Pids to kill at the end whatever happens (the test adds them)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_kill_9_of_bees_run_leaves_no_agent_nor_engine_and_the_next_run_cleans_up(
        bees: BeesRunner, bees_home: Path, space: Space, leftovers: list[int]) -> None:
    pids_file = space.root.parent / "pids"
    space.write("agents/alpha.yaml", f"""\
        instructions: leaves helpers
        runner:
          command: ["${{BEES_PYTHON}}", "{SPAWNER}"]
          env:
            PIDS_FILE: "{pids_file}"
            AGENT_LOG: "{space.log}"
        """)
    space.write("processes/p.yaml", ONE_STAGE)
    item_id = bees("item", "create", "p", "-w", str(space.root)).stdout.strip()
    first = start_bees(bees_home, "run")
    leftovers.append(first.pid)
    until_sync(pids_file.exists, cap=120)
    agent, *helpers = [int(p) for p in pids_file.read_text().split()]
    leftovers.extend([agent, *helpers])
    engine = int(engine_json(bees_home)["pid"])  # type: ignore[index, arg-type]
    leftovers.append(engine)
    assert [os.getpgid(p) for p in helpers] == [agent] * 3

    first.kill()
    first.wait(timeout=10)
    until_sync(lambda: gone(agent))  # PR_SET_PDEATHSIG: it died with bees run
    assert [p for p in helpers if gone(p)] == []  # its helpers wait for the next bees run
    until_sync(lambda: gone(engine))  # the engine too (SIGTERM on its parent's death)

    said = f"bees run is not running (last seen pid {first.pid}, stopped without cleanup)"
    status = bees("status")
    assert status.returncode == 0, status.stderr
    assert status.stderr.splitlines() == [said]
    found = checks(bees)
    assert found["bees run"] == {"check": "bees run", "ok": False,
                                 "state": "stopped_without_cleanup", "pid": first.pid}
    doctor = bees("doctor")
    assert doctor.returncode == 1
    assert (f"FAIL  bees run: not running (last seen pid {first.pid}, stopped without "
            "cleanup)") in doctor.stdout.splitlines()

    second = bees("run", "--exit-when-idle", timeout=180)
    assert second.returncode == 0, second.stderr
    lines = run_lines(second.stderr)
    assert lines[:2] == [
        f"the last bees run (pid {first.pid}) stopped without cleanup",
        f"stopped the processes that stage Work of {item_id} left running (process group "
        f"{agent})",
    ]
    assert lines[2].startswith("engine started at "), lines
    assert [p for p in [agent, *helpers] if not gone(p)] == []
    assert space.log.read_text().splitlines() == ["end 2"]
    # the engine it started stopped with it: no server is left on the database
    assert engines_on(bees_home / "data" / "temporal.db") == []
    assert engine_json(bees_home) is None
    rows = json.loads(bees("status", "--json").stdout)["items"]
    assert [(r["item_id"], r["status"]) for r in rows] == [(item_id, "done")]
    assert bees("status").stderr == ""
    assert checks(bees)["bees run"] == {"check": "bees run", "ok": False, "state": "not_running"}
    assert list((bees_home / "data" / "stages").iterdir()) == []


def test_kill_9_of_bees_run_stops_its_engine(bees: BeesRunner, bees_home: Path,
                                             leftovers: list[int]) -> None:
    """The dev server dies with the ``bees run`` that started it (``PR_SET_PDEATHSIG``): a
    ``kill -9`` leaves no server serving the database with parent pid 1; the next
    ``bees run`` starts its own."""
    first = start_bees(bees_home, "run")
    leftovers.append(first.pid)
    until_sync(lambda: (engine_json(bees_home) or {}).get("pid"), cap=120)
    engine = int(engine_json(bees_home)["pid"])  # type: ignore[index, arg-type]
    leftovers.append(engine)
    assert psutil.Process(engine).ppid() == first.pid

    first.kill()
    first.wait(timeout=10)
    until_sync(lambda: gone(engine), "the engine outlived the bees run that started it")
    assert engines_on(bees_home / "data" / "temporal.db") == []

    second = bees("run", "--exit-when-idle", timeout=180)
    assert second.returncode == 0, second.stderr
    started = [line for line in run_lines(second.stderr) if line.startswith("engine ")]
    assert len(started) == 1 and started[0].startswith("engine started at "), started
    assert engines_on(bees_home / "data" / "temporal.db") == []


def test_a_server_left_on_the_database_is_stopped_before_a_new_one_starts(
        tmp_path: Path) -> None:
    """A ``bees run`` killed while its engine started leaves a server ``engine.json`` does
    not name; the next start stops it instead of running a second one on the database."""
    from bees_cli.engine.server import free_port, temporal_binary

    data = tmp_path / "data"
    data.mkdir()
    db = data / "temporal.db"
    stray = subprocess.Popen(
        [str(temporal_binary()), "server", "start-dev", "--headless", "--db-filename", str(db),
         "--ip", "127.0.0.1", "--port", str(free_port()), "--http-port", str(free_port()),
         "--metrics-port", str(free_port()), "--log-level", "error"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    said: list[str] = []
    server: EngineServer | None = None
    try:
        until_sync(lambda: engines_on(db) == [stray.pid])
        server = ensure_engine(data, say=said.append)
        stray.wait(timeout=15)  # stopped; stop_process reaped it (here it is our child)
        assert said == [f"stopping engine process {stray.pid}: a server left on {db} by a "
                        "bees run that stopped without cleanup"]
        assert (server.started, server.adopted) == (True, False)
        assert engines_on(db) == [server.pid]
        # a second start (the first bees run was killed) adopts the recorded server
        again = ensure_engine(data, say=said.append)
        assert (again.address, again.pid, again.started, again.adopted) == (
            server.address, server.pid, False, True)
        assert len(said) == 1
    finally:
        if stray.poll() is None:
            stray.kill()
            stray.wait()
        if server is not None:
            stop_engine(data, server)
    assert engines_on(db) == []
    assert not (data / "engine.json").exists()


def test_a_server_whose_bees_run_died_is_stopped_not_adopted(tmp_path: Path) -> None:
    """``engine.json`` names a live, answering server and the ``bees run`` it dies with, which
    is gone: the server is stopping on its parent-death signal, so the next start waits for
    it to stop and starts its own instead of adopting a dying one."""
    from bees_cli.engine.server import answers, free_port, temporal_binary
    from bees_cli.machine.processes import mark_of

    data = tmp_path / "data"
    data.mkdir()
    db = data / "temporal.db"
    port = free_port()
    left = subprocess.Popen(
        [str(temporal_binary()), "server", "start-dev", "--headless", "--db-filename", str(db),
         "--ip", "127.0.0.1", "--port", str(port), "--http-port", str(free_port()),
         "--metrics-port", str(free_port()), "--log-level", "error"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_mark = mark_of(dead.pid)
    dead.wait()
    server: EngineServer | None = None
    try:
        until_sync(lambda: answers(f"127.0.0.1:{port}"))
        mark = mark_of(left.pid)
        assert mark is not None and dead_mark is not None
        (data / "engine.json").write_text(json.dumps(
            {"address": f"127.0.0.1:{port}", "pid": left.pid, "started": mark.started,
             "version": "x", "parent": dead_mark.model_dump()}))
        said: list[str] = []
        server = ensure_engine(data, say=said.append)
        left.wait(timeout=15)
        assert said == [f"stopping engine process {left.pid}: a server left on {db} by a "
                        "bees run that stopped without cleanup"]
        assert (server.started, server.adopted) == (True, False)
        assert engines_on(db) == [server.pid]
        assert engine_json(tmp_path)["parent"] == {  # type: ignore[index]
            "pid": os.getpid(), "started": mark_of(os.getpid()).started}  # type: ignore[union-attr]
    finally:
        if left.poll() is None:
            left.kill()
            left.wait()
        if server is not None:
            stop_engine(data, server)
    assert engines_on(db) == []


def test_engines_on_reads_only_dev_servers_of_that_database(tmp_path: Path) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                              "start-dev", "--db-filename", str(tmp_path / "temporal.db")])
    try:
        until_sync(lambda: engines_on(tmp_path / "temporal.db") == [other.pid])
        assert engines_on(tmp_path / "other.db") == []
    finally:
        other.kill()
        other.wait()


def test_a_port_taken_between_choice_and_start_is_chosen_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from bees_cli.engine import server as module

    data = tmp_path / "data"
    data.mkdir()
    busy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    real = module.free_port
    # the first start gets a port another program holds for its HTTP API
    ports = iter([real(), int(busy.getsockname()[1]), real()])
    monkeypatch.setattr(module, "free_port", lambda: next(ports, None) or real())
    server = None
    try:
        server = ensure_engine(data)
        assert server.started is True
        assert engines_on(data / "temporal.db") == [server.pid]
        assert b"address already in use" in (data / "temporal.log").read_bytes()
    finally:
        busy.close()
        if server is not None:
            stop_engine(data, server)


def test_a_recorded_server_that_does_not_answer_is_stopped_not_doubled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``engine.json`` names a live process on the database that never answers (hung): after
    the start timeout it is stopped, and only then does a new server start."""
    from bees_cli.engine import server as module
    from bees_cli.machine.processes import mark_of

    data = tmp_path / "data"
    data.mkdir()
    db = data / "temporal.db"
    hung = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                             "start-dev", "--db-filename", str(db)], start_new_session=True)
    mark = mark_of(hung.pid)
    assert mark is not None
    (data / "engine.json").write_text(json.dumps(
        {"address": f"127.0.0.1:{module.free_port()}", "pid": hung.pid,
         "started": mark.started, "version": "x"}))
    monkeypatch.setattr(module, "ADOPT_WAIT", 0.5)
    said: list[str] = []
    server = None
    try:
        server = ensure_engine(data, say=said.append)
        hung.wait(timeout=15)  # stopped (it sleeps 60 s); stop_process reaped it, our child
        assert said == [f"stopping engine process {hung.pid}: a server left on {db} by a "
                        "bees run that stopped without cleanup"]
        assert (server.started, server.adopted) == (True, False)
        assert engines_on(db) == [server.pid]
    finally:
        if hung.poll() is None:
            hung.kill()
            hung.wait()
        if server is not None:
            stop_engine(data, server)
