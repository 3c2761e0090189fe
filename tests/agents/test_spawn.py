"""Starting a stage's program through ``setpriv`` (no fork of the worker): the same program,
argv, environment, group and parent-death signal as the ``preexec_fn`` way, the same errors
for a program that cannot start, and no value of the environment on any command line."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bees_cli.agents import runner, spawn
from bees_cli.agents.groups import die_with_parent
from bees_cli.agents.runner import StageRequest, run_command_stage
from bees_cli.agents.spawn import CHECK, PWD_CARRIER, fast_launch

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or fast_launch(["true"], Path("/"), {"PATH": "/usr/bin"})
    is None, reason="needs Linux and util-linux setpriv")

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
SHOW = """
import ctypes, json, os
prctl = ctypes.CDLL(None, use_errno=True).prctl
sig = ctypes.c_int(0)
prctl(2, ctypes.byref(sig), 0, 0, 0)  # PR_GET_PDEATHSIG
argv = open("/proc/self/cmdline", "rb").read().split(b"\\0")[:-1]
print(json.dumps({"argv": [a.decode() for a in argv], "env": dict(os.environ),
                  "cwd": os.getcwd(), "pdeathsig": sig.value,
                  "own_group": os.getpgid(0) == os.getpid(),
                  "own_session": os.getsid(0) == os.getpid()}))
"""
ENV = {"PATH": os.path.dirname(PY) + ":/bin", "LC_ALL": "C.UTF-8", "PWD": "/not/the/cwd",
       "SHLVL": "4", "_": "/usr/bin/x", "EMPTY": "", "LINES": "two\nlines", "SP": " a  b "}


def run_both(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[Any, Any]:
    """Run ``argv`` the fast way and the ``preexec_fn`` way; return what each printed."""
    launch = fast_launch(argv, cwd, env)
    assert launch is not None
    new = subprocess.run(launch.argv, cwd=cwd, env=launch.env, stdout=subprocess.PIPE,
                         check=True, start_new_session=True)
    old = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, check=True,
                         start_new_session=True, preexec_fn=die_with_parent())
    return json.loads(new.stdout), json.loads(old.stdout)


@pytest.mark.parametrize("env", [ENV, {k: v for k, v in ENV.items() if k != "PWD"}],
                         ids=["with PWD", "without PWD"])
def test_the_program_sees_the_same_argv_env_group_and_death_signal(
        tmp_path: Path, env: dict[str, str]) -> None:
    new, old = run_both(["python3", "-c", SHOW, "an arg"], tmp_path, env)
    assert new == old
    assert new == {"argv": ["python3", "-c", SHOW, "an arg"], "env": env, "cwd": str(tmp_path),
                   "pdeathsig": int(signal.SIGKILL), "own_group": True, "own_session": True}


def test_the_environment_travels_in_the_environment_not_on_the_command_line(
        tmp_path: Path) -> None:
    launch = fast_launch(["true", "x"], tmp_path, ENV)
    assert launch == spawn.Launch(
        argv=[shutil.which("setpriv"), "--pdeathsig", "KILL", "--", "/bin/sh", "-c", CHECK,
              "bees-agent", str(os.getpid()), "true", "x"],
        env={**ENV, PWD_CARRIER: "/not/the/cwd"})


def test_a_script_and_a_relative_path_start_the_same_way(tmp_path: Path) -> None:
    script = tmp_path / "show"
    script.write_text(f"#!{PY}\n{SHOW}")
    script.chmod(0o755)
    new, old = run_both(["./show", "x"], tmp_path, ENV)
    assert new == old
    assert new["argv"] == [PY, "./show", "x"]


def test_the_program_dies_before_it_runs_when_the_worker_died_first(tmp_path: Path) -> None:
    launch = fast_launch(["touch", "ran"], tmp_path, ENV)
    assert launch is not None
    argv = list(launch.argv)
    argv[argv.index(str(os.getpid()))] = "1"  # as if the worker died before setpriv's prctl
    done = subprocess.run(argv, cwd=tmp_path, env=launch.env, start_new_session=True)
    assert done.returncode == -signal.SIGKILL
    assert not (tmp_path / "ran").exists()


def test_what_would_not_start_is_left_to_the_old_way(tmp_path: Path) -> None:
    text = tmp_path / "text"  # executable, but neither ELF nor #!: ENOEXEC
    text.write_text("echo hi\n")
    text.chmod(0o755)
    lost = tmp_path / "lost"  # its interpreter is missing: ENOENT
    lost.write_text("#!/nonexistent/interpreter\n")
    lost.chmod(0o755)
    plain = tmp_path / "plain"
    plain.write_text("#!/bin/sh\n")
    assert [fast_launch(argv, tmp_path, ENV) for argv in (
        ["/nonexistent/program"], ["no-such-program-anywhere"], [str(plain)], [str(text)],
        [str(lost)], ["./text"],
    )] == [None] * 6


@pytest.mark.parametrize("name", ["A B", "x.y", "BASH_FUNC_f%%", "1X", "", "IFS", "OPTIND",
                                  "PPID", PWD_CARRIER])
def test_a_name_sh_would_drop_or_change_is_left_to_the_old_way(tmp_path: Path,
                                                               name: str) -> None:
    assert fast_launch(["true"], tmp_path, {**ENV, name: "v"}) is None


@pytest.mark.skipif(not os.access("/bin/bash", os.X_OK), reason="needs bash")
def test_a_shell_that_changes_the_environment_turns_the_fast_way_off(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert spawn._chain.__wrapped__() == shutil.which("setpriv")  # type: ignore[attr-defined]
    monkeypatch.setattr(spawn, "SH", "/bin/bash")  # exports SHLVL and _ of its own
    assert spawn._chain.__wrapped__() is None  # type: ignore[attr-defined]


def request(tmp_path: Path, command: list[str], env: dict[str, str] | None = None
            ) -> StageRequest:
    return StageRequest(
        item_id="01J0ITEM", title="t", process="p", stage="Draft", stage_kind="work",
        reviews=None, agent="writer", instructions="i", command=command, env=env or {},
        run_folder=str(tmp_path / "run"), workspace_root=str(tmp_path))


async def test_the_runner_reports_programs_that_cannot_start_as_before(tmp_path: Path) -> None:
    text = tmp_path / "text"
    text.write_text("echo hi\n")
    text.chmod(0o755)
    lost = tmp_path / "lost"
    lost.write_text("#!/nonexistent/interpreter\n")
    lost.chmod(0o755)
    reasons = [(await run_command_stage(request(tmp_path, [str(p)]), heartbeat=lambda: None))
               .reason for p in (text, lost)]
    assert reasons == [f"cannot start {text}: Exec format error", f"cannot start {lost}: not found"]


TREE = """
import json, os, subprocess, sys
helper = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                          stdin=subprocess.PIPE)
while not open(f"/proc/{helper.pid}/cmdline", "rb").read():  # until its exec is done
    pass
secret = os.environ["AGENT_API_KEY"].encode()
lines = {}
for name in os.listdir("/proc"):
    if name.isdigit():
        try:
            lines[int(name)] = open(f"/proc/{name}/cmdline", "rb").read()
        except OSError:
            pass
group = [pid for pid in lines if pid in (os.getpid(), helper.pid)]
print(json.dumps({
    "tree": {str(pid): lines[pid].decode().split("\\0")[:-1] for pid in sorted(group)},
    "holding_the_secret": [pid for pid, line in lines.items() if secret in line],
    "key": os.environ["AGENT_API_KEY"], "pid": os.getpid(), "helper": helper.pid,
}))
helper.stdin.close()
helper.wait()
"""


async def test_no_process_shows_the_agents_environment_on_its_command_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-" + secrets.token_hex(16)
    started: list[tuple[str, ...]] = []
    exec_ = asyncio.create_subprocess_exec

    async def spy(*argv: str, **kwargs: Any) -> asyncio.subprocess.Process:
        started.append(argv)
        return await exec_(*argv, **kwargs)

    monkeypatch.setattr(runner.asyncio, "create_subprocess_exec", spy)
    for name in list(os.environ):  # names sh cannot pass on send a program the old way
        if name in spawn.SHELL_OWNED or not spawn.SHELL_NAME.match(name):
            monkeypatch.delenv(name)
    (tmp_path / "tree.py").write_text(TREE)
    command = ["${BEES_PYTHON}", "${BEES_WORKSPACE}/tree.py"]
    done = await run_command_stage(request(tmp_path, command, {"AGENT_API_KEY": secret}),
                                   heartbeat=lambda: None)
    assert done.ok, done.reason
    seen = json.loads(Path(done.stdout_path).read_text())
    argv = [sys.executable, str(tmp_path / "tree.py")]
    # the chain's first exec (setpriv, then sh: each execs the rest of this argv)
    assert started == [(shutil.which("setpriv"), "--pdeathsig", "KILL", "--", "/bin/sh", "-c",
                        CHECK, "bees-agent", str(os.getpid()), *argv)]
    assert seen == {
        "tree": {str(seen["pid"]): argv,
                 str(seen["helper"]): [sys.executable, "-c", "import sys; sys.stdin.read()"]},
        "holding_the_secret": [], "key": secret, "pid": seen["pid"], "helper": seen["helper"],
    }
