"""``bees doctor`` and ``bees addons`` on MCP add-ons (issue 25, point 3): each says which
add-on is not connected and why, and lists a connected server's tools with their kinds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import BeesRunner
from tests.mcp_server import SCRIPT, free_port


def server(mode: str, extra: str = "") -> str:
    return f'mcp:\n  command: ["${{BEES_PYTHON}}", "{SCRIPT}", "{mode}"]\n{extra}'


def workspace(root: Path, addons: dict[str, str], tools: list[str]) -> Path:
    root.mkdir()
    files = {"bees.yaml": "name: doctor\n",
             "agents/clerk.yaml": f"tools: [{', '.join(tools)}]\nrunner:\n  command: [clerk]\n",
             "processes/p.yaml": "stages:\n  - {name: Work, kind: work, agents: [clerk]}\n"
                                 "  - {name: Done, kind: done}\n"}
    files |= {f"addons/{name}.yaml": text for name, text in addons.items()}
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def addon_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if " add-on " in line or "process" in line]


def test_doctor_says_which_mcp_addon_is_not_connected_and_why(
        tmp_path: Path, bees: BeesRunner) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    root = workspace(tmp_path / "w", {
        "crashy": server("crash"),
        "stuck": server("hang", "  start_seconds: 1\n"),
        "notes": server("stdio", "kinds:\n  send_email: send\n"),
        "remote": f"mcp:\n  url: {url}\n",
    }, ["notes.send_mail"])
    listed = bees("addons", "-w", str(root))  # a listing reports, exit 0; doctor fails
    assert (listed.returncode, listed.stdout.splitlines()[2].split()[:2]) == (0, ["crashy", "no"])
    done = bees("doctor", "-w", str(root))
    assert done.returncode == 1, done.stderr
    assert addon_lines(done.stdout) == [
        "FAIL  add-on crashy: not connected: server exited: notes: cannot open the notes file",
        "FAIL  add-on notes: not connected: tool send_mail missing",
        f"FAIL  add-on remote: not connected: {url} refused the connection",
        "FAIL  add-on stuck: not connected: no answer within 1 s",
        "no    process p: cannot run here now: no enabled agent for Work: clerk add-on notes "
        "not connected",
    ]


def test_addons_lists_a_connected_servers_tools_with_their_kinds(
        tmp_path: Path, bees: BeesRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    starts = tmp_path / "starts.log"  # one line each time a command starts the server
    monkeypatch.setenv("STARTS_LOG", str(starts))
    root = workspace(tmp_path / "w", {"notes": server(
        "stdio", "  env: [STARTS_LOG]\nkinds:\n  send_email: send\n")},
                     ["notes.search", "notes.send_email"])
    done = bees("addons", "-w", str(root))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[2:] == [
        "notes     yes          -",
        "add-on notes: close_issue gated (not declared and not marked read-only)",
        "add-on notes: fail gated (not declared and not marked read-only)",
        "add-on notes: search read (marked read-only by the server)",
        "add-on notes: send_email send (declared)",
        "add-on notes: stall gated (not declared and not marked read-only)",
    ]
    listed = json.loads(bees("addons", "-w", str(root), "--json").stdout)["addons"]
    assert listed == [{"addon": "notes", "connected": True, "missing": [], "tools": [
        {"addon": "notes", "tool": "close_issue", "kind": "gated", "why": "undeclared"},
        {"addon": "notes", "tool": "fail", "kind": "gated", "why": "undeclared"},
        {"addon": "notes", "tool": "search", "kind": "read", "why": "read_only_hint"},
        {"addon": "notes", "tool": "send_email", "kind": "send", "why": "declared"},
        {"addon": "notes", "tool": "stall", "kind": "gated", "why": "undeclared"}]}]
    assert starts.read_text() == "start\n" * 2
    done = bees("doctor", "-w", str(root))
    assert "ok    add-on notes: connected, 5 tools" in done.stdout.splitlines()
    assert "ok    process p: could run here now" in done.stdout.splitlines()
    # the add-on's line and the process's both come from one start of its server
    assert starts.read_text() == "start\n" * 3


def test_doctor_words_a_server_that_writes_non_mcp_output_without_a_traceback(
        tmp_path: Path, bees: BeesRunner) -> None:
    # a bound the server's start cannot miss on a loaded machine: it exits at once anyway
    root = workspace(tmp_path / "w", {"chatty": server("chatty", "  start_seconds: 30\n")}, [])
    done = bees("doctor", "-w", str(root))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert addon_lines(done.stdout)[0] == (
        "FAIL  add-on chatty: not connected: server wrote non-MCP output on stdout: "
        "'hello, this is not json-rpc'")


@pytest.mark.parametrize("command", ["addons", "doctor"])
def test_ctrl_c_while_servers_hang_stops_at_once_not_after_their_bounds(
        tmp_path: Path, bees_home: Path, command: str) -> None:
    # two servers that never answer, each bounded at 60 s: both asked at once, then Ctrl-C
    starts = tmp_path / "starts.log"
    hang = server("hang", "  env: [STARTS_LOG]\n  start_seconds: 60\n")
    root = workspace(tmp_path / "w", {"stuck": hang, "still": hang}, [])
    env = os.environ | {"BEES_HOME": str(bees_home), "STARTS_LOG": str(starts)}
    with subprocess.Popen([sys.executable, "-m", "bees_cli", command, "-w", str(root)],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as bees:
        try:
            while not starts.exists() or starts.read_text() != "start\n" * 2:
                assert bees.poll() is None, bees.communicate()
                time.sleep(0.05)
            bees.send_signal(signal.SIGINT)
            _, stderr = bees.communicate(timeout=30)  # a half of one server's bound
        finally:
            bees.kill()
    assert (bees.returncode, stderr.splitlines()[-1]) == (130, "interrupted"), stderr
