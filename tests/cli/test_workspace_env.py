"""``BEES_WORKSPACE`` is a default for ``-w``: a workspace given as DIR wins over it."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import EXAMPLE, BeesRunner


def test_a_dir_given_wins_over_bees_workspace(bees: BeesRunner, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(EXAMPLE, bad)
    process = bad / "processes" / "weekly-report.yaml"
    process.write_text(process.read_text().replace("kind: review", "kind: reviw"))
    env = {"BEES_WORKSPACE": str(EXAMPLE)}
    given = bees("validate", str(bad), env=env)
    assert given.returncode == 2
    assert given.stderr.splitlines()[0].startswith("processes/weekly-report.yaml:")
    assert "'reviw'" in given.stderr.splitlines()[0]
    default = bees("validate", env=env)
    assert (default.returncode, default.stdout.split(":")[0]) == (0, "ok")
    both = bees("validate", str(bad), "-w", str(EXAMPLE))
    assert both.returncode == 2
    assert both.stderr.splitlines()[0] == (
        "error: give the workspace either as DIR or with -w, not both")
