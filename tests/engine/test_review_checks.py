"""A review stage's checks on a real dev server (issue 26, point 5): a failed check sends the
work back with its message, counted like a reviewer's request, and the reviewer never runs."""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.record.local import LocalRecord
from tests.conftest import BeesRunner
from tests.engine.conftest import Space, until
from tests.engine.test_rules import start, worker

__all__ = ["worker"]

CHECKED = """\
stages:
  - name: Work
    kind: work
    agents: [alpha]
  - name: Review
    kind: review
    reviews: Work
    agents: [beta]
    checks:
      - file_exists: Work/ready.txt
  - name: After
    kind: work
    agents: [alpha]
  - name: Done
    kind: done
"""

MISSING = "Work/ready.txt does not exist in the run folder"


async def test_a_failed_check_sends_the_work_back_without_running_the_reviewer(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        bees: BeesRunner) -> None:
    space.agent("alpha", env={"READY_FROM_ROUND": "2"})
    space.agent("beta")
    space.write("processes/p.yaml", CHECKED)
    item_id = await start(dev_env, record, space, "p")
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
    # the reviewer ran once, after the work stage wrote the file; never on round 1
    assert space.lines() == [
        "Work alpha 1 1 []", f'Work alpha 2 1 ["{MISSING}"]', "Review beta 2 1 []",
        "After alpha 1 1 []"]
    checks = [(e.round, e.data) for e in record.events(item_id) if e.kind == "review_check"]
    assert checks == [
        (1, {"check": "file_exists Work/ready.txt", "ok": False, "message": MISSING}),
        (2, {"check": "file_exists Work/ready.txt", "ok": True, "message": None})]
    shown = bees("item", "show", item_id)
    assert f"Review round 1: check file_exists Work/ready.txt failed: {MISSING}" in shown.stdout
    assert "Review round 2: check file_exists Work/ready.txt passed" in shown.stdout


async def test_three_failed_checks_stop_the_item_for_a_person(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker) -> None:
    space.agent("alpha")
    space.agent("beta")
    space.write("processes/p.yaml", CHECKED)
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "waiting for a person")
    assert (row.stage, row.reason) == ("Review", "Review asked for changes 3 times")
    assert [ln.split()[0] + ln.split()[2] for ln in space.lines()] == [
        "Work1", "Work2", "Work3"]
    limit = [e.data for e in record.events(item_id) if e.kind == "review_limit"]
    assert limit == [{"rounds": [[MISSING], [MISSING], [MISSING]]}]
    await dev_env.client.get_workflow_handle(item_id).terminate()


def checked_workspace(root: Path, work: str, review: str) -> Path:
    """A workspace whose process has a work stage and a review with these extra lines."""
    (root / "agents").mkdir(parents=True)
    (root / "processes").mkdir()
    (root / "bees.yaml").write_text("name: w\ndefault_agent: a\n")
    (root / "agents/a.yaml").write_text("runner:\n  command: [x]\n")
    (root / "processes/p.yaml").write_text(
        "stages:\n  - name: Work\n    kind: work\n" + work
        + "  - name: Review\n    kind: review\n    reviews: Work\n" + review
        + "  - {name: Done, kind: done}\n")
    return root


def test_validate_names_a_bad_check_with_its_file_and_line(
        tmp_path: Path, bees: BeesRunner) -> None:
    root = checked_workspace(tmp_path / "w", "", (
        "    checks:\n"
        "      - {file_exists: ../secret}\n"
        "      - {command: [make], file_exists: x}\n"))
    done = bees("validate", str(root))
    assert done.returncode == 2
    assert done.stderr.splitlines()[:2] == [
        "processes/p.yaml:8:23  stages[1].checks[0].file_exists  '../secret' must be a path "
        "inside the folder, without '..'",
        "processes/p.yaml:9:9  stages[1].checks[1]  a check needs exactly one of "
        "'file_exists', 'json_schema' or 'command'"]


def test_validate_checks_a_schema_file_and_where_checks_belong(
        tmp_path: Path, bees: BeesRunner) -> None:
    root = checked_workspace(tmp_path / "w", (
        "    checks: [{file_exists: out.txt}]\n"
        "    output: {file: summary.json, schema: schemas/summary.json}\n"), (
        "    checks:\n"
        "      - json_schema: {file: Work/s.json, schema: schemas/missing.json}\n"
        "      - json_schema: {file: Work/s.json, schema: {type: 7}}\n"
        "    output: {file: verdict.json}\n"))
    done = bees("validate", str(root))
    assert done.returncode == 2
    assert done.stderr.splitlines()[:5] == [
        "processes/p.yaml:4:13  stages[0].checks  'checks' belong on a review stage; this "
        "stage is 'work'",
        "processes/p.yaml:5:42  stages[0].output.schema  schema file 'schemas/summary.json' "
        "does not exist in the workspace",
        "processes/p.yaml:10:50  stages[1].checks[0].json_schema.schema  schema file "
        "'schemas/missing.json' does not exist in the workspace",
        "processes/p.yaml:11:50  stages[1].checks[1].json_schema.schema  not a valid JSON "
        "schema: 7 is not valid under any of the given schemas",
        "processes/p.yaml:12:13  stages[1].output  'output' belongs on a work stage; this "
        "stage is 'review'"]


DECLARED = """\
stages:
  - name: Work
    kind: work
    agents: [alpha]
    output:
      file: summary.json
      schema: {type: object, required: [id], properties: {id: {type: string}}}
  - name: Done
    kind: done
"""


async def test_a_command_stage_without_its_declared_output_fails_with_the_reason(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker) -> None:
    space.agent("alpha", env={"SUMMARY": '{\\"id\\": 7}'})
    space.write("processes/p.yaml", DECLARED)
    item_id = await start(dev_env, record, space, "p")
    row = await until(record, item_id, lambda r: r.status == "failed")
    assert row.reason == ("agent alpha: its output summary.json does not match its schema at "
                          "id: 7 is not of type 'string'")
    await dev_env.client.get_workflow_handle(item_id).terminate()


async def test_a_command_stage_with_its_declared_output_finishes(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker) -> None:
    space.agent("alpha", env={"SUMMARY": '{\\"id\\": \\"B-7\\"}'})
    space.write("processes/p.yaml", DECLARED)
    item_id = await start(dev_env, record, space, "p")
    assert await dev_env.client.get_workflow_handle(item_id).result() == "done"
