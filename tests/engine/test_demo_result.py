"""The model example's report and mail without a model (issue 28, point 2): its report add-on
renders the writer's choice with the notes' names and counts, its review check passes that
report and sends back any other, and the judge of the demo's result (tests/support) accepts
the right mail and refuses a muddled one, naming each problem."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.demo_result import judge_demo

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "weekly-report-model"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A copy of the example, as the demo makes it."""
    return Path(shutil.copytree(EXAMPLE, tmp_path / "demo",
                                ignore=shutil.ignore_patterns("*.eml", "__pycache__")))


def script(workspace: Path, cwd: Path, name: str, data: dict[str, str],
           **env: str) -> subprocess.CompletedProcess[str]:
    """Run the example's ``scripts/NAME`` as its add-on runs it: the input on stdin, in the
    stage's folder, with the stage's ``BEES_*`` variables."""
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [sys.executable, str(workspace / "scripts" / name)], input=json.dumps(data),
        cwd=cwd, capture_output=True, text=True, check=True,
        env={**os.environ, "BEES_WORKSPACE": str(workspace),
             "BEES_FOLDER_TEAM": str(workspace / "team"),
             "BEES_FOLDER_TEAM_NOTES": str(workspace / "notes"), **env})


def check(workspace: Path, run: Path) -> subprocess.CompletedProcess[str]:
    """The Review stage's check command, as the process declares it."""
    return subprocess.run(
        [sys.executable, str(workspace / "scripts" / "check_report.py"),
         str(workspace / "team"), str(workspace / "notes"), str(workspace / "templates")],
        cwd=run, capture_output=True, text=True)


def write_and_send(workspace: Path, run: Path, highlight: str, to: str) -> None:
    """The writer's report.write, then the sender's mail.send."""
    script(workspace, run / "Draft", "report_write.py", {"highlight": highlight})
    script(workspace, run / "Send", "mail_send.py", {"to": to},
           BEES_PREVIOUS_DRAFT=str(run / "Draft"), BEES_ITEM_ID="01ITEM",
           BEES_FOLDER_OUTBOX=str(workspace / "outbox"))


def test_the_report_names_each_person_with_their_count_and_the_mail_carries_it(
        workspace: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_and_send(workspace, run, "sam-on-call", "team@example.com")
    assert (run / "Draft" / "report.md").read_text() == (
        "# Weekly report\n\n"
        "Highlight of the week: Was on call on Wednesday: one page, no outage. (Sam)\n\n"
        "- **Maya**: 3 items this week: Reviewed the engine's pull requests. Shipped the "
        "schedule keys to Bees Cloud. Fixed the flaky sync test.\n"
        "- **Sam**: 2 items this week: Wrote the checkpoint verifier. Was on call on "
        "Wednesday: one page, no outage.\n")
    (mail,) = (workspace / "outbox").glob("*.eml")
    assert mail.read_text().startswith("To: team@example.com\nSubject: Weekly report\n\n")
    assert check(workspace, run).returncode == 0
    judged = judge_demo(workspace, run)
    assert (judged.problems, judged.to, judged.counts) == (
        [], "team@example.com", {"Maya": 3, "Sam": 2})


def test_the_review_check_sends_back_a_report_that_is_not_the_notes(
        workspace: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    script(workspace, run / "Draft", "report_write.py", {"highlight": "maya-sync-test"})
    report = run / "Draft" / "report.md"
    report.write_text(report.read_text().replace("**Maya**: 3 items", "**Maya**: 2 items"))
    failed = check(workspace, run)
    assert (failed.returncode, failed.stderr.strip()) == (
        1, "Draft/report.md is not the report the notes give: call report__write again")
    (run / "Draft" / "report.json").write_text('{"highlight": "maya-holiday"}')
    failed = check(workspace, run)
    assert failed.stderr.strip() == (
        "the highlight 'maya-holiday' is not a note: choose one of maya-engine-reviews, "
        "maya-schedule-keys, maya-sync-test, sam-checkpoint-verifier, sam-on-call")


def test_the_judge_refuses_a_muddled_result_naming_each_problem(
        workspace: Path, tmp_path: Path) -> None:
    """What the demo made before its task was reshaped: a made-up address, a free-text
    report with no counts."""
    run = tmp_path / "run"
    (run / "Draft").mkdir(parents=True)
    (run / "Draft" / "report.md").write_text(
        "# Weekly report\n\n- **Maya**: 1 items this week: the report is written\n")
    (workspace / "outbox" / "01ITEM-1.eml").write_text(
        "To: the_team.example.com@com.example.com\nSubject: Work item\n\n2023-01-22T12:12")
    assert judge_demo(workspace, run).problems == [
        "mailed to 'the_team.example.com@com.example.com', not an address of the team "
        "(maya@example.com, sam@example.com, team@example.com)",
        "the mail's subject 'Work item' is not the report's title 'Weekly report'",
        "the mail's body is not the report",
        "Maya: 1 items, the notes list 3",
        "Maya's line lacks: Reviewed the engine's pull requests. Shipped the schedule keys "
        "to Bees Cloud. Fixed the flaky sync test.",
        "the report names ['Maya'], the team ['Maya', 'Sam']",
        "0 highlight lines, not 1",
    ]
