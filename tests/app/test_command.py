"""``bees app`` as a process (APP_CONTRACT.md, The command): its first stdout line, the
loopback socket, and exit 0 on SIGTERM or SIGINT."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import jsonschema
import pytest

from tests.app.conftest import LocalhostTransport
from tests.conftest import REPO

START = 30.0
"""Seconds a loaded machine may take to start ``bees app`` and print its URL."""


def start(bees_home: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "BEES_HOME": str(bees_home)}
    return subprocess.Popen([sys.executable, "-m", "bees_cli", "app", "--no-open", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_json_line_then_serves_until_a_signal_and_exits_0(bees_home: Path,
                                                          sig: signal.Signals) -> None:
    app = start(bees_home, "--json")
    try:
        assert app.stdout is not None
        line = app.stdout.readline()
        doc = json.loads(line)
        assert sorted(doc) == ["port", "url", "version"]
        assert doc["version"] == 1
        port = doc["port"]
        named = re.fullmatch(rf"(http://bees-[0-9a-f]{{32}}\.localhost:{port})/\?secret=\S+",
                             doc["url"])
        assert named is not None, doc["url"]
        assert line == json.dumps(doc) + "\n"
        schema = json.loads((REPO / "schemas" / "output" / "app.json").read_text("utf-8"))
        jsonschema.validate(doc, schema)
        with httpx.Client(base_url=named.group(1), transport=LocalhostTransport()) as web:
            assert web.get("/items").status_code == 403
            entered = web.get(doc["url"])
            assert (entered.status_code, entered.headers["location"]) == (303, "/items")
            assert web.get("/items").status_code == 200
        # the socket is 127.0.0.1's, but the app answers there only under its own name
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as web:
            assert web.get(doc["url"].replace(named.group(1), "")).status_code == 421
        app.send_signal(sig)
        assert app.wait(timeout=START) == 0
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()


def test_text_line_names_the_url(bees_home: Path) -> None:
    app = start(bees_home, "--port", "0")
    try:
        assert app.stdout is not None
        line = app.stdout.readline()
        assert re.fullmatch(r"Bees app: http://bees-[0-9a-f]{32}\.localhost:\d+/\?secret=\S+\n",
                            line), line
        app.send_signal(signal.SIGTERM)
        assert app.wait(timeout=START) == 0
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()


def test_a_workspace_that_does_not_load_is_refused_before_serving(bees_home: Path,
                                                                 tmp_path: Path) -> None:
    app = start(bees_home, "-w", str(tmp_path / "nowhere"))
    out, err = app.communicate(timeout=60)
    assert (app.returncode, out) == (2, "")
    assert err.splitlines() == [f"error: {tmp_path / 'nowhere'}: no such folder",
                                "hint: check the path, or create a workspace with `bees init DIR`"]
