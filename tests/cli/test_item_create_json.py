"""`bees item create --json`: one JSON object on stdout, talk on stderr."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import EXAMPLE


def test_item_create_json_prints_one_object(bees, bees_home: Path) -> None:
    created = bees("item", "create", "weekly-report", "-w", str(EXAMPLE), "--title", "Week 9",
                   "--json")
    assert created.returncode == 0, created.stderr
    data = json.loads(created.stdout)
    assert sorted(data) == ["final", "item_id", "offer", "process", "run_folder", "started",
                            "title", "version"]
    assert (data["version"], data["started"], data["final"], data["offer"]) == (
        1, False, None, None)
    assert (data["process"], data["title"], len(data["item_id"])) == (
        "weekly-report", "Week 9", 26)
    assert data["run_folder"] == str(bees_home / "data" / "runs" / data["item_id"])
    assert Path(data["run_folder"]).is_dir()
    listed = json.loads(bees("status", "--json").stdout)["items"]
    assert [row["item_id"] for row in listed] == [data["item_id"]]
