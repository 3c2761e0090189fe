"""Which processes are alive: a pid and its start time (a reused pid never counts), process
groups whose members are only zombies, and ``bees run``'s liveness for status and doctor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil

from bees_cli.machine.processes import (
    ProcessMark,
    group_alive,
    group_members,
    is_alive,
    mark_of,
    this_process,
)
from bees_cli.usecases.doctor import _bees_run_check
from bees_cli.usecases.liveness import (
    BeesRunState,
    bees_run_state,
    forget_worker,
    note_starting,
    note_worker,
    running_worker,
    worker_file,
)
from tests.support.wait import until_sync


def dead_pid() -> int:
    """The pid of a process that ran and was reaped."""
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_a_mark_names_a_process_only_with_its_start_time() -> None:
    me = this_process()
    assert me == ProcessMark(pid=os.getpid(), started=psutil.Process().create_time())
    assert mark_of(os.getpid()) == me
    assert is_alive(me)
    assert is_alive(ProcessMark(pid=me.pid, started=me.started + 0.5))  # within 1 s
    assert not is_alive(ProcessMark(pid=me.pid, started=me.started - 60))  # a reused pid
    assert mark_of(dead_pid()) is None


def test_a_group_of_zombies_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    try:
        until_sync(lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE,
                   "the child did not end", every=0.01)
        os.killpg(child.pid, 0)  # the kernel still knows the group: its leader is unreaped
        assert mark_of(child.pid) is None
        assert mark_of(child.pid, zombie=True) is not None
        assert group_alive(child.pid) is False
        assert group_members(child.pid) == []
    finally:
        child.wait()
    assert group_alive(child.pid) is False


def test_a_live_group_and_its_members() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             start_new_session=True)
    try:
        assert group_alive(child.pid) is True
        assert group_members(child.pid) == [child.pid]
    finally:
        child.kill()
        child.wait()


def test_bees_run_state_by_its_live_process(tmp_path: Path) -> None:
    assert bees_run_state(tmp_path) == BeesRunState(running=False)
    assert bees_run_state(tmp_path).text == "bees run is not running"
    assert _bees_run_check(tmp_path).model_dump(exclude_none=True) == {
        "check": "bees run", "ok": False, "detail": "not running (start it with `bees run`)",
        "state": "not_running"}

    note_worker(tmp_path, "127.0.0.1:7233", "bees-m1")
    me = this_process()
    assert json.loads(worker_file(tmp_path).read_text()) == {
        "pid": me.pid, "started": me.started, "address": "127.0.0.1:7233",
        "task_queue": "bees-m1"}
    running = bees_run_state(tmp_path)
    assert running == BeesRunState(running=True, pid=me.pid, address="127.0.0.1:7233")
    assert running.text == f"bees run is running (pid {me.pid})"
    assert running_worker(tmp_path) == "127.0.0.1:7233"
    assert _bees_run_check(tmp_path).model_dump(exclude_none=True) == {
        "check": "bees run", "ok": True, "detail": f"running (pid {me.pid})",
        "state": "running", "pid": me.pid}

    # kill -9: the file stays, its process is gone
    pid = dead_pid()
    worker_file(tmp_path).write_text(json.dumps(
        {"pid": pid, "started": me.started, "address": "127.0.0.1:7233", "task_queue": "q"}))
    stale = bees_run_state(tmp_path)
    assert stale == BeesRunState(running=False, pid=pid, stopped_without_cleanup=True)
    assert stale.text == (f"bees run is not running (last seen pid {pid}, stopped without "
                          "cleanup)")
    assert running_worker(tmp_path) is None
    assert _bees_run_check(tmp_path).model_dump(exclude_none=True) == {
        "check": "bees run", "ok": False,
        "detail": f"not running (last seen pid {pid}, stopped without cleanup)",
        "state": "stopped_without_cleanup", "pid": pid}
    forget_worker(tmp_path)  # not this process's file: kept
    assert worker_file(tmp_path).exists()

    # the pid now belongs to another program (this one, started at another time)
    worker_file(tmp_path).write_text(json.dumps(
        {"pid": me.pid, "started": me.started - 60, "address": "a:1", "task_queue": "q"}))
    assert bees_run_state(tmp_path) == BeesRunState(running=False, pid=me.pid,
                                                    stopped_without_cleanup=True)
    # a file from an older Bees, without the start time: judged by its pid
    worker_file(tmp_path).write_text(json.dumps({"pid": me.pid, "address": "a:1"}))
    assert bees_run_state(tmp_path).running is True

    note_worker(tmp_path, "127.0.0.1:7233", "bees-m1")
    forget_worker(tmp_path)
    assert not worker_file(tmp_path).exists()


def test_a_starting_bees_run_is_waited_for(tmp_path: Path) -> None:
    """A control command given while ``bees run`` starts waits for its worker (polling every
    0.2 s, up to ``wait``), rather than saying that nothing runs."""
    me = this_process()
    note_starting(tmp_path)
    starting = bees_run_state(tmp_path)
    assert starting == BeesRunState(running=True, pid=me.pid)
    assert (starting.starting, starting.text) == (True, f"bees run is starting (pid {me.pid})")
    assert _bees_run_check(tmp_path).model_dump(exclude_none=True) == {
        "check": "bees run", "ok": True, "detail": f"starting (pid {me.pid})",
        "state": "starting", "pid": me.pid}

    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds
        if len(slept) == 3:  # the worker comes up during the third wait
            note_worker(tmp_path, "127.0.0.1:7233", "bees-m1")

    assert running_worker(tmp_path) is None  # no wait asked: answered at once
    assert running_worker(tmp_path, wait=60, sleep=sleep, clock=lambda: now[0]) == "127.0.0.1:7233"
    assert slept == [0.2, 0.2, 0.2]

    note_starting(tmp_path)  # a bees run that never gets its worker up
    waits: list[float] = []

    def sleep_only(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    now[0] = 0.0
    assert running_worker(tmp_path, wait=1, sleep=sleep_only, clock=lambda: now[0]) is None
    assert len(waits) == 5  # gave up after 1 s
    forget_worker(tmp_path)
    assert running_worker(tmp_path, wait=60, sleep=sleep, clock=lambda: now[0]) is None
