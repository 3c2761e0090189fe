"""Problems a new user met with the CLI, each pinned by a test (one worker per computer,
a corrupt record, refusals, hints, interrupted stages)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bees_cli.engine.server import pid_alive
from tests.conftest import BeesRunner


def start_bees(home: Path, cwd: Path, *args: str) -> subprocess.Popen[str]:
    """Start ``python -m bees_cli ARGS`` in the background on computer ``home``."""
    env = dict(os.environ, BEES_HOME=str(home))
    return subprocess.Popen([sys.executable, "-m", "bees_cli", *args], env=env, text=True,
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for(check, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    """Poll ``check()`` until it is true (fails after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


# -- 1. one bees run per computer ------------------------------------------------------------

def test_a_second_bees_run_is_refused(bees: BeesRunner, bees_home: Path,
                                      tmp_path: Path) -> None:
    from bees_cli.engine.control import hold_worker_lock

    lock = hold_worker_lock(bees_home / "data")
    try:
        second = bees("run", cwd=tmp_path)
    finally:
        lock.close()
    assert second.returncode == 3, second.stderr
    assert second.stderr.splitlines()[0] == (
        f"error: bees run is already running on this computer (pid {os.getpid()})")
    assert "Traceback" not in second.stderr


def test_bees_run_stops_when_its_engine_goes_away(bees_home: Path, tmp_path: Path) -> None:
    run = start_bees(bees_home, tmp_path, "run")
    engine = bees_home / "data" / "engine.json"
    try:
        wait_for(lambda: (bees_home / "data" / "worker.json").exists())
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
