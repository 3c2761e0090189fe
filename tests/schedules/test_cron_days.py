"""A cron restricting both day-of-month and day-of-week is warned about (issue 11, point 9)."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bees_cli.schedules.times import fire_times
from bees_cli.workspace.checks import cron_days_either
from bees_cli.workspace.loader import load_workspace
from tests.conftest import BeesRunner
from tests.workspace.corpus_cases import BASE

SCHEDULE = BASE / "schedules" / "monday.yaml"


@pytest.mark.parametrize(("cron", "either"), [
    ("0 9 1 * 1", True),
    ("0 9 1-7 * mon", True),
    ("0 9 * * 1", False),
    ("0 9 1 * *", False),
    ("0 9 */2 * 1", False),
    ("0 9 1 * */2", False),
    ("@daily", False),
])
def test_both_day_fields_restricted(cron: str, either: bool) -> None:
    assert cron_days_either(cron) is either


def _workspace(tmp_path: Path, cron: str) -> Path:
    root = tmp_path / "w"
    shutil.copytree(BASE, root)
    text = SCHEDULE.read_text().replace('cron: "0 9 * * 1"', f'cron: "{cron}"')
    (root / "schedules" / "monday.yaml").write_text(text)
    return root


def test_validate_warns_that_either_day_fires(bees: BeesRunner, tmp_path: Path) -> None:
    result = bees("validate", str(_workspace(tmp_path, "0 9 1 * 1")))
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        "ok: 1 process, 2 agents, 1 schedule, 2 folders, 1 add-on\n",
        "schedules/monday.yaml:3:7  cron  warning: both day-of-month and day-of-week are "
        "restricted: Bees follows cron's rule and fires on a day that matches either (not "
        "only on days that match both, as Temporal's calendars do)\n",
    )


def test_the_warning_says_what_bees_does(tmp_path: Path) -> None:
    workspace = load_workspace(_workspace(tmp_path, "0 9 1 * 1"))
    fires = fire_times(workspace.schedules["monday"], "monday",
                       after=datetime(2025, 1, 1, tzinfo=UTC), count=3)
    # Wednesday the 1st, then Mondays 6 and 13: either day matches, not both
    assert [f.local.strftime("%a %d %b") for f in fires] == [
        "Wed 01 Jan", "Mon 06 Jan", "Mon 13 Jan"]
