"""The command runner, seen from a real child process: env, context, logs, verdicts, killing."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from bees_cli.agents import spawn
from bees_cli.agents.groups import (
    StageGroup,
    group_file,
    group_of,
    kill_leftover,
    record_group,
    stop_leftovers,
)
from bees_cli.agents.runner import (
    StageRequest,
    StageResult,
    run_command_stage,
    stage_dir,
)
from tests.support.wait import until


def make_request(tmp_path: Path, script: str, **changes: Any) -> StageRequest:
    """A request whose agent runs ``script`` (Python source) from the workspace folder."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "agent.py").write_text(textwrap.dedent(script), encoding="utf-8")
    fields: dict[str, Any] = {
        "item_id": "01J0ITEM",
        "title": "Weekly report 2024-06-03",
        "process": "weekly-report",
        "stage": "Draft",
        "stage_kind": "work",
        "reviews": None,
        "agent": "writer",
        "instructions": "Write the report.",
        "command": ["${BEES_PYTHON}", "${BEES_WORKSPACE}/agent.py"],
        "env": {},
        "run_folder": str(tmp_path / "run"),
        "workspace_root": str(workspace),
    }
    fields.update(changes)
    return StageRequest(**fields)


def no_beat() -> None:
    pass


def gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (exited, or a zombie nobody reaped yet)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


SEE = """
import json, os, sys
from pathlib import Path
env = {k: v for k, v in os.environ.items()
       if (k.startswith("BEES_") and k != "BEES_HOME" and not k.startswith("BEES_TEST_"))
       or k in ("AGENT_VAR", "PARENT_VAR", "OPENAI_API_KEY", "BEES_TOKEN")}
context = json.loads(Path(os.environ["BEES_CONTEXT"]).read_text(encoding="utf-8"))
seen = {"cwd": os.getcwd(), "argv": sys.argv[1:], "env": env, "context": context,
        "path_head": os.environ["PATH"].split(os.pathsep)[0]}
Path("seen.json").write_text(json.dumps(seen), encoding="utf-8")
print("to stdout")
print("to stderr", file=sys.stderr)
"""


async def test_env_context_and_logs_seen_by_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARENT_VAR", "from parent")  # not declared: not handed on (issue 25)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-agents")
    monkeypatch.setenv("BEES_TOKEN", "not-for-agents")
    notes = str(tmp_path / "notes")
    draft = str(tmp_path / "run" / "Draft")
    request = make_request(
        tmp_path, SEE,
        stage="Polish-it",
        command=["${BEES_PYTHON}", "${BEES_WORKSPACE}/agent.py", "$HOME", "${X}"],
        env={"AGENT_VAR": "from agent", "BEES_STAGE": "hijacked"},
        folders={"team-notes": notes}, previous={"Draft": draft},
        review_comments=["add a summary", "fix the título"], round=2, attempt=3,
    )
    groups = tmp_path / "stages"
    result = await run_command_stage(request, heartbeat=no_beat, groups=groups)
    run = tmp_path / "run"
    logs = run / "logs"
    folder = run / "Polish-it"
    assert result == StageResult(
        ok=True, reason=None, verdict=None, comments=[], output_dir=str(folder),
        stdout_path=str(logs / "Polish-it-r2-a3.stdout"),
        stderr_path=str(logs / "Polish-it-r2-a3.stderr"), exit_code=0,
        context_path=str(logs / "Polish-it-r2-a3.context.json"),
    )
    assert stage_dir(run, "Polish-it") == folder
    seen = json.loads((folder / "seen.json").read_text(encoding="utf-8"))
    assert seen["cwd"] == str(folder)
    assert seen["argv"] == ["$HOME", "${X}"]
    assert seen["env"] == {
        "AGENT_VAR": "from agent",
        "BEES_ITEM_ID": "01J0ITEM",
        "BEES_ITEM_TITLE": "Weekly report 2024-06-03",
        "BEES_PROCESS": "weekly-report",
        "BEES_STAGE": "Polish-it",
        "BEES_AGENT": "writer",
        "BEES_INSTRUCTIONS": "Write the report.",
        "BEES_RUN_FOLDER": str(run),
        "BEES_WORKSPACE": str(tmp_path / "ws"),
        "BEES_CONTEXT": str(logs / "Polish-it-r2-a3.context.json"),
        "BEES_FOLDER_TEAM_NOTES": notes,
        "BEES_PREVIOUS_DRAFT": draft,
        "BEES_REVIEW_COMMENTS": '["add a summary", "fix the título"]',
        "BEES_ROUND": "2",
        "BEES_ATTEMPT": "3",
        "BEES_PYTHON": sys.executable,
    }
    assert seen["path_head"] == str(Path(sys.executable).parent)
    assert seen["context"] == {
        "item": {"id": "01J0ITEM", "title": "Weekly report 2024-06-03", "process": "weekly-report"},
        "stage": {"name": "Polish-it", "kind": "work", "reviews": None},
        "agent": "writer",
        "instructions": "Write the report.",
        "folders": {"team-notes": notes},
        "previous": {"Draft": draft},
        "review_comments": ["add a summary", "fix the título"],
        "round": 2,
        "attempt": 3,
        "run_folder": str(run),
    }
    assert Path(result.stdout_path).read_text() == "to stdout\n"
    assert Path(result.stderr_path).read_text() == "to stderr\n"
    assert list(groups.iterdir()) == []  # the group's file lives only while it runs
    assert StageRequest.from_json(json.loads(json.dumps(request.to_json()))) == request
    assert StageResult.from_json(json.loads(json.dumps(result.to_json()))) == result


async def test_the_stage_folder_is_kept_between_rounds(tmp_path: Path) -> None:
    script = """
    from pathlib import Path
    drafts = Path("drafts.txt")
    drafts.write_text(drafts.read_text() + "x" if drafts.exists() else "x")
    """
    await run_command_stage(make_request(tmp_path, script), heartbeat=no_beat)
    await run_command_stage(make_request(tmp_path, script, round=2), heartbeat=no_beat)
    assert (tmp_path / "run" / "Draft" / "drafts.txt").read_text() == "xx"


async def test_non_zero_exit_gives_the_stderr_tail(tmp_path: Path) -> None:
    script = """
    import sys
    for n in range(30):
        print(f"line {n}", file=sys.stderr)
    sys.exit(3)
    """
    result = await run_command_stage(make_request(tmp_path, script), heartbeat=no_beat)
    assert (result.ok, result.exit_code) == (False, 3)
    assert result.reason == "exit 3: " + "\n".join(f"line {n}" for n in range(10, 30))

    long = await run_command_stage(
        make_request(tmp_path, "import sys\nsys.stderr.write('e' * 5000)\nsys.exit(1)\n"),
        heartbeat=no_beat,
    )
    assert long.reason == "exit 1: …" + "e" * 1999

    silent = await run_command_stage(make_request(tmp_path, "raise SystemExit(4)\n"),
                                     heartbeat=no_beat)
    assert silent.reason == "exit 4 (nothing on stderr)"


async def test_a_command_that_cannot_start(tmp_path: Path) -> None:
    missing = await run_command_stage(
        make_request(tmp_path, "", command=["/nonexistent/agent-program"]), heartbeat=no_beat
    )
    assert (missing.ok, missing.exit_code, missing.reason) == (
        False, None, "cannot start /nonexistent/agent-program: not found"
    )
    plain = tmp_path / "not-executable"
    plain.write_text("#!/bin/sh\n")
    plain.chmod(0o644)
    denied = await run_command_stage(make_request(tmp_path, "", command=[str(plain)]),
                                     heartbeat=no_beat)
    assert denied.reason == f"cannot start {plain}: not executable (permission denied)"
    empty = await run_command_stage(make_request(tmp_path, "", command=[]), heartbeat=no_beat)
    assert empty.reason == "the agent's command is empty"


def verdict_script(content: str | None) -> str:
    if content is None:
        return "pass\n"
    return f"from pathlib import Path\nPath('verdict.json').write_text({content!r})\n"


REVIEW = {"stage": "Review", "stage_kind": "review", "reviews": "Draft", "agent": "reviewer"}


@pytest.mark.parametrize(
    ("content", "verdict", "comments"),
    [
        ('{"verdict": "approve"}', "approve", []),
        ('{"verdict": "changes_requested", "comments": "needs a summary"}',
         "changes_requested", ["needs a summary"]),
        ('{"verdict": "changes_requested", "comments": ["a", "b"]}',
         "changes_requested", ["a", "b"]),
    ],
)
async def test_verdicts(tmp_path: Path, content: str, verdict: str, comments: list[str]) -> None:
    result = await run_command_stage(
        make_request(tmp_path, verdict_script(content), **REVIEW), heartbeat=no_beat
    )
    assert (result.ok, result.reason, result.verdict, result.comments) == (
        True, None, verdict, comments
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "the review wrote no verdict: {path} is missing (expected "
               '{{"verdict": "approve"}} or '
               '{{"verdict": "changes_requested", "comments": [...]}})'),
        ("{not json", "{path} is not valid JSON: "),
        ('{"verdict": "yes"}', '{path}: "verdict" must be "approve" or "changes_requested"'),
        ('{"verdict": "approve", "comments": 3}',
         '{path}: "comments" must be a text or a list of texts'),
    ],
)
async def test_bad_verdicts(tmp_path: Path, content: str | None, problem: str) -> None:
    folder = tmp_path / "run" / "Review"
    folder.mkdir(parents=True)
    (folder / "verdict.json").write_text('{"verdict": "approve"}')  # stale, from a past round
    result = await run_command_stage(
        make_request(tmp_path, verdict_script(content), **REVIEW), heartbeat=no_beat
    )
    assert (result.ok, result.verdict, result.exit_code) == (False, None, 0)
    assert result.reason is not None
    assert result.reason.startswith(problem.format(path=folder / "verdict.json"))


async def test_heartbeat_is_called_while_the_program_runs(tmp_path: Path) -> None:
    beats: list[float] = []
    result = await run_command_stage(
        make_request(tmp_path, "import time\ntime.sleep(0.5)\n"),
        heartbeat=lambda: beats.append(time.monotonic()), heartbeat_every=0.05,
    )
    assert result.ok
    assert len(beats) >= 4


SPAWNER = """
import os, subprocess, sys, time
# a `sleep` child, a shell child with its own `sleep` child (a grandchild), and a child that
# ignores SIGTERM (it needs the SIGKILL after the grace time)
sleeper = subprocess.Popen(["sleep", "60"])
shell = subprocess.Popen(["sh", "-c", "sleep 60 & echo $! > grandchild.tmp; "
                          "mv grandchild.tmp grandchild; wait"])
stubborn = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "open('ready', 'w').close(); time.sleep(60)"])
while not (os.path.exists("grandchild") and os.path.exists("ready")):
    time.sleep(0.01)
grandchild = int(open("grandchild").read())
with open("pids.tmp", "w") as handle:
    handle.write(f"{os.getpid()} {sleeper.pid} {shell.pid} {grandchild} {stubborn.pid}")
os.replace("pids.tmp", "pids")
time.sleep(60)
"""


async def wait_for_pids(folder: Path) -> list[int]:
    """Wait until the spawner wrote ``pids`` in its stage folder; return them."""
    await until(lambda: (folder / "pids").exists(), "the child did not start", every=0.02)
    return [int(p) for p in (folder / "pids").read_text().split()]


@pytest.fixture
def short_grace(monkeypatch: pytest.MonkeyPatch) -> float:
    """A stubborn program's SIGTERM grace cut from 3 s to 0.3 s, where a test waits it out
    (the stage's cancel, the next start's stop of leftovers): what is killed stays the same."""
    from bees_cli.agents import groups, program

    for module in (groups, program):
        monkeypatch.setattr(module, "KILL_GRACE", 0.3)
    return 0.3


@pytest.mark.usefixtures("short_grace")
async def test_cancelling_kills_the_whole_group(tmp_path: Path) -> None:
    request = make_request(tmp_path, SPAWNER)
    groups = tmp_path / "stages"
    folder = tmp_path / "run" / "Draft"
    task = asyncio.create_task(run_command_stage(request, heartbeat=no_beat,
                                                 heartbeat_every=0.05, groups=groups))
    pids = await wait_for_pids(folder)
    child = pids[0]
    started = psutil.Process(child).create_time()
    recorded = StageGroup.model_validate_json(
        group_file(groups, "01J0ITEM", "Draft").read_text())
    assert recorded == StageGroup(pgid=child, started=started, item_id="01J0ITEM",
                                  stage="Draft", run_folder=str(tmp_path / "run"))
    assert [os.getpgid(p) for p in pids] == [child] * 5
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # every one is gone when the cancel returns; the stubborn one needed the SIGKILL
    assert [pid for pid in pids if not gone(pid)] == []
    assert list(groups.iterdir()) == []


async def test_helpers_left_behind_after_a_clean_exit_are_killed(tmp_path: Path) -> None:
    script = """
    import subprocess, sys
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    print(helper.pid)
    """
    result = await run_command_stage(make_request(tmp_path, script), heartbeat=no_beat)
    helper = int(Path(result.stdout_path).read_text())
    await until(lambda: gone(helper), f"the helper {helper} outlived the stage", every=0.02)


def leader_with_a_helper(tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    """Start a group leader (its own session) that starts ``sleep 60`` in its group and
    then waits on stdin; return it and the helper's pid."""
    leader = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys; "
         "print(subprocess.Popen(['sleep', '60']).pid, flush=True); sys.stdin.read()"],
        start_new_session=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert leader.stdout is not None
    return leader, int(leader.stdout.readline())


def test_kill_leftover(tmp_path: Path) -> None:
    groups = tmp_path / "stages"
    path = group_file(groups, "01J0ITEM", "Draft")
    assert kill_leftover(groups, "01J0ITEM", "Draft") is False  # no file

    leader, helper = leader_with_a_helper(tmp_path)
    group = group_of(leader.pid, item_id="01J0ITEM", stage="Draft", run_folder="/run")
    assert group is not None
    assert record_group(groups, group) == path
    assert kill_leftover(groups, "01J0ITEM", "Draft") is True
    assert leader.wait(timeout=5) == -15
    assert gone(helper)
    assert not path.exists()

    # a pid reused by another program (its start time differs) is left alone
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             start_new_session=True)
    try:
        record_group(groups, StageGroup(pgid=other.pid, started=1.0, item_id="01J0ITEM",
                                        stage="Draft", run_folder="/run"))
        assert kill_leftover(groups, "01J0ITEM", "Draft") is False
        assert other.poll() is None
        assert not path.exists()
    finally:
        other.kill()
        other.wait()

    # a dead group, this process's own group, or garbage in the file
    for pgid in (other.pid, os.getpgrp()):
        record_group(groups, StageGroup(pgid=pgid, started=psutil.Process().create_time(),
                                        item_id="01J0ITEM", stage="Draft", run_folder="/run"))
        assert kill_leftover(groups, "01J0ITEM", "Draft") is False
    path.write_text("garbage\n")
    assert kill_leftover(groups, "01J0ITEM", "Draft") is False
    assert not path.exists()


def test_stop_leftovers_stops_the_helpers_of_a_dead_leader(tmp_path: Path) -> None:
    groups = tmp_path / "stages"
    leader, helper = leader_with_a_helper(tmp_path)
    group = group_of(leader.pid, item_id="01J0ITEM", stage="Draft", run_folder="/run")
    assert group is not None
    record_group(groups, group)
    record_group(groups, StageGroup(pgid=999_999_999, started=1.0, item_id="01J0OTHER",
                                    stage="Review", run_folder="/run"))
    leader.kill()  # as PR_SET_PDEATHSIG does when bees run dies: the helper stays
    assert leader.wait(timeout=5) == -9
    assert not gone(helper)
    assert stop_leftovers(groups) == [group]
    assert gone(helper)
    assert list(groups.iterdir()) == []
    assert stop_leftovers(groups) == []
    assert stop_leftovers(tmp_path / "none") == []


DIES_WITH = """
import asyncio, json, sys
from pathlib import Path
from bees_cli.agents import spawn
from bees_cli.agents.runner import StageRequest, run_command_stage
if sys.argv[3] == "preexec_fn":  # as where setpriv is not on PATH
    spawn._chain = lambda: None
else:
    assert spawn._chain() is not None
request = StageRequest.from_json(json.loads(sys.argv[1]))
asyncio.run(run_command_stage(request, heartbeat=lambda: None, groups=Path(sys.argv[2])))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
@pytest.mark.parametrize("way", ["setpriv", "preexec_fn"])
@pytest.mark.usefixtures("short_grace")
async def test_the_program_dies_with_its_worker_and_the_next_start_stops_its_helpers(
        tmp_path: Path, way: str) -> None:
    request = make_request(tmp_path, SPAWNER)
    groups = tmp_path / "stages"
    env = {k: v for k, v in os.environ.items()  # names sh passes on: setpriv is used
           if k not in spawn.SHELL_OWNED and spawn.SHELL_NAME.match(k)}
    worker = subprocess.Popen([sys.executable, "-c", DIES_WITH,
                               json.dumps(request.to_json()), str(groups), way], env=env)
    try:
        pids = await wait_for_pids(tmp_path / "run" / "Draft")
        worker.kill()  # kill -9 of the worker: no cleanup of its own
        assert worker.wait(timeout=5) == -9
        # the kernel kills the program with its parent
        await until(lambda: gone(pids[0]), "the program outlived its worker", every=0.02)
        assert [pid for pid in pids[1:] if gone(pid)] == []  # its helpers live on
        [left] = stop_leftovers(groups)
        assert (left.pgid, left.item_id, left.stage) == (pids[0], "01J0ITEM", "Draft")
        assert [pid for pid in pids if not gone(pid)] == []
    finally:
        if worker.poll() is None:
            worker.kill()
        for pid in pids if "pids" in locals() else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)


async def test_the_example_agents_run_through_the_runner(tmp_path: Path) -> None:
    from ..conftest import EXAMPLE

    base: dict[str, Any] = {
        "item_id": "01J0ITEM", "title": "Weekly report 2024-06-03", "process": "weekly-report",
        "env": {}, "run_folder": str(tmp_path / "run"), "workspace_root": str(EXAMPLE),
        "folders": {"team-notes": str(EXAMPLE / "notes")},
    }
    draft = await run_command_stage(StageRequest(
        stage="Draft", stage_kind="work", reviews=None, agent="writer", instructions="",
        command=["${BEES_PYTHON}", "${BEES_WORKSPACE}/scripts/write_report.py"], **base,
    ), heartbeat=no_beat)
    assert draft.ok, draft.reason
    report = (Path(draft.output_dir) / "report.md").read_text(encoding="utf-8")
    assert report.startswith("# Weekly report 2024-06-03\n")
    review = await run_command_stage(StageRequest(
        stage="Review", stage_kind="review", reviews="Draft", agent="reviewer", instructions="",
        command=["${BEES_PYTHON}", "${BEES_WORKSPACE}/scripts/review_report.py"],
        previous={"Draft": draft.output_dir}, **base,
    ), heartbeat=no_beat)
    assert (review.ok, review.verdict, review.comments) == (True, "approve", [])
