"""``bees item watch`` against real items moving through their stages under a real ``bees run``
(issue 28, point 4): the weekly-report example with its command agents, watched to its approval
(exit 3 with --until-waiting) and to Done once approved (exit 0); a failing stage (exit 1)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bees_cli.cli import json_models as out
from tests.cli.test_json_contract import matches
from tests.conftest import EXAMPLE, BeesRunner
from tests.engine.conftest import DRAFT_REVIEW_DONE, Space
from tests.engine.test_cli import engine_json, start_bees
from tests.support.wait import until_sync

pytestmark = pytest.mark.integration


def _run(home: Path, workspace: Path) -> subprocess.Popen[str]:
    runner = start_bees(home, "run", "-w", str(workspace))
    until_sync(lambda: engine_json(home) is not None, "engine.json never written")
    return runner


def _stop(runner: subprocess.Popen[str]) -> None:
    runner.send_signal(signal.SIGTERM)
    runner.communicate(timeout=60)


def _watch(home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "bees_cli", "item", "watch", *args],
                            env={**os.environ, "BEES_HOME": str(home)},
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_watch_follows_the_weekly_report_to_its_approval_then_to_done(
        bees: BeesRunner, bees_home: Path, tmp_path: Path) -> None:
    outbox = tmp_path / "outbox"
    outbox.mkdir()
    assert bees("link", "outbox", str(outbox), "-w", str(EXAMPLE)).returncode == 0
    runner = _run(bees_home, EXAMPLE)
    try:
        created = bees("item", "create", "weekly-report", "-w", str(EXAMPLE))
        assert created.returncode == 0, created.stderr
        item_id = created.stdout.strip()
        # started at once, while the item moves: each line one document of its schema
        watching = _watch(bees_home, item_id, "--until-waiting", "--json")
        stdout, stderr = watching.communicate(timeout=120)
        assert watching.returncode == 3, stderr
        assert {matches("item watch", json.loads(line)) for line in stdout.splitlines()} == {
            "item-watch.json"}  # and every time as YYYY-MM-DDTHH:MM:SSZ
        lines = [out.ItemWatchOut.model_validate_json(line).root
                 for line in stdout.splitlines()]
        facts = [(line.fact.stage, line.fact.kind) for line in lines if line.kind == "fact"]
        assert facts == [
            (None, "created"),
            ("Draft", "pick"), ("Draft", "stage_started"), ("Draft", "stage_finished"),
            ("Review", "pick"), ("Review", "stage_started"), ("Review", "stage_finished"),
            ("Send", "pick"), ("Send", "stage_started"), ("Send", "approval_asked")]
        picks = [line.fact.pick for line in lines if line.kind == "fact"
                 and line.fact.kind == "pick"]
        assert [(p.agent, p.reason) for p in picks] == [
            ("writer", "stage"), ("reviewer", "stage"), ("sender", "stage")]
        end = lines[-1]
        assert (end.kind, end.outcome, end.stage, end.status, end.exit_code) == (
            "end", "waiting", "Send", "waiting for approval", 3)
        assert [line.kind for line in lines].count("end") == 1

        # the text view goes on past the approval, answered from another terminal
        watching = _watch(bees_home, item_id[:10])
        approved = bees("approve", item_id)
        assert approved.returncode == 0, approved.stderr
        stdout, stderr = watching.communicate(timeout=120)
        assert watching.returncode == 0, stderr
        shown = [line.split("  ", 1)[1] for line in stdout.splitlines()
                 if line[:4].isdigit()]  # the facts, each after its UTC time
        assert shown[0] == "created"
        assert shown[1] == "Draft round 1: picked writer: stage agents of weekly-report.Draft"
        assert shown[-6].startswith("Send round 1: waiting for approval (request 1): mail.send")
        assert shown[-5].startswith("Send round 1: request 1 approved by ")
        assert shown[-4] == "Send: running again: every request answered"
        assert shown[-3].startswith("Send round 1: ran mail.send (attempt 1), exit 0")
        assert shown[-2].startswith("Send round 1: finished; output ")
        assert shown[-1] == "Done: done"
        assert stdout.splitlines()[-1] == "                done  Done: done (exit 0)"
    finally:
        _stop(runner)


def test_watch_of_a_failing_stage_ends_with_exit_1(bees: BeesRunner, bees_home: Path,
                                                   space: Space) -> None:
    space.agent("writer", env={"FAIL": "1"})
    space.agent("reviewer")
    space.write("processes/p.yaml", DRAFT_REVIEW_DONE)
    runner = _run(bees_home, space.root)
    try:
        created = bees("item", "create", "p", "-w", str(space.root))
        assert created.returncode == 0, created.stderr
        watching = _watch(bees_home, created.stdout.strip(), "--json")
        stdout, stderr = watching.communicate(timeout=120)
        assert watching.returncode == 1, stderr
        lines = [json.loads(line) for line in stdout.splitlines()]
        assert {matches("item watch", line) for line in lines} == {"item-watch.json"}
        assert [(f["fact"]["stage"], f["fact"]["kind"]) for f in lines if f["kind"] == "fact"] == [
            (None, "created"), ("Draft", "pick"), ("Draft", "stage_started"),
            ("Draft", "stage_failed"), ("Draft", "stage_failed")]  # the attempt, the stage
        assert lines[-1] == {"version": 1, "kind": "end", "item_id": created.stdout.strip(),
                             "outcome": "failed", "stage": "Draft", "status": "failed",
                             "reason": "exit 3: something broke", "exit_code": 1}
    finally:
        _stop(runner)
