"""One ``bees app`` per computer: a second one on the same ``BEES_HOME`` prints the first one's
URL and exits 0 (refused for another workspace); a killed app's lock and record never block
the next start."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import httpx
import pytest
from filelock import FileLock

from bees_cli.app.instance import LOCK_FILE, Serving, claim, note_serving, record_file
from bees_cli.errors import Refused
from bees_cli.machine.computer import Computer
from tests.app.conftest import LocalhostTransport
from tests.app.test_command import START, start
from tests.conftest import EXAMPLE


def first_line(app: subprocess.Popen[str]) -> dict[str, object]:
    assert app.stdout is not None
    doc: dict[str, object] = json.loads(app.stdout.readline())
    return doc


def stop(app: subprocess.Popen[str]) -> None:
    if app.poll() is None:
        app.kill()
        app.wait()


def test_a_second_app_prints_the_first_ones_url_and_exits_0(bees_home: Path,
                                                           tmp_path: Path) -> None:
    first = start(bees_home, "--json")
    try:
        doc = first_line(first)
        pid = first.pid
        named = re.fullmatch(rf"(http://bees-[0-9a-f]{{32}}\.localhost:{doc['port']}/)\?secret=\S+",
                             str(doc["url"]))
        assert named is not None, doc
        address = named.group(1)  # the app's own name: 127.0.0.1 is refused (issue 23)
        second = start(bees_home, "--json")
        out, err = second.communicate(timeout=START)
        assert second.returncode == 0
        assert out == json.dumps(doc) + "\n"
        assert err == (f"bees app is already serving this computer at {address} (pid "
                       f"{pid}): its URL is above; no second one started\n")
        text = start(bees_home)
        out, _ = text.communicate(timeout=START)
        assert (text.returncode, out) == (0, f"Bees app: {doc['url']}\n")
        # another workspace is not what the first one serves: refused, in words
        other = start(bees_home, "-w", str(EXAMPLE))
        out, err = other.communicate(timeout=START)
        assert (other.returncode, out) == (3, "")
        assert err.startswith(f"error: bees app is already serving this computer at "
                              f"{address} (pid {pid}), for the default workspace, not ")
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=START) == 0
        assert not record_file(Computer.load(bees_home).data_dir).exists()
    finally:
        stop(first)


def test_an_app_killed_with_kill_9_does_not_block_the_next(bees_home: Path) -> None:
    killed = start(bees_home, "--json")
    try:
        url = first_line(killed)["url"]
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=START)
    finally:
        stop(killed)
    data = Computer.load(bees_home).data_dir
    assert json.loads(record_file(data).read_text("utf-8"))["url"] == url  # left behind
    after = start(bees_home, "--json")
    try:
        doc = first_line(after)
        assert doc["url"] != url
        with httpx.Client(transport=LocalhostTransport()) as web:
            assert web.get(str(doc["url"])).status_code == 303
        after.send_signal(signal.SIGTERM)
        assert after.wait(timeout=START) == 0
    finally:
        stop(after)


def test_claim_returns_the_live_holder_or_refuses_while_it_starts(tmp_path: Path) -> None:
    holder = FileLock(tmp_path / LOCK_FILE, timeout=0, thread_local=False)
    holder.acquire()  # another bees app (a second open file: flock excludes it here too)
    try:
        clock = iter([0.0, 0.0, 0.1, 0.2])
        with pytest.raises(Refused, match="another bees app is starting on this computer"):
            claim(tmp_path, wait=0.15, sleep=lambda _s: None, clock=lambda: next(clock))
        mine = note_serving(tmp_path, url="http://127.0.0.1:9/?secret=s", port=9,
                            workspace=None)
        assert claim(tmp_path, wait=0) == mine
        assert oct(record_file(tmp_path).stat().st_mode & 0o777) == "0o600"
    finally:
        holder.release()
    dead = Serving(pid=os.getpid(), started=1.0, url="http://127.0.0.1:9/?secret=s", port=9)
    record_file(tmp_path).write_text(dead.model_dump_json(), "utf-8")  # a pid reused since
    held = claim(tmp_path, wait=0)
    assert isinstance(held, FileLock) and held.is_locked
    held.release()
