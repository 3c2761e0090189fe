"""``bees item create PROCESS --on POOL`` (issue 27, point 2): an item offered to a pool from
the start. It is made here, claimed, and released at once with its checkpoint (its first
stage never runs here), then offered to the pool naming its secrets; a runner of the pool
verifies and claims it like any offer.

Real Bees Cloud over HTTP (SQLite), real ``bees`` processes; no engine is needed: nothing
runs on the computer that made it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from bees_cli.cloud.client import CloudClient
from bees_cli.cloud.login import Login, save_login
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import set_identity
from bees_cli.machine.links import link_folder
from bees_cli.record.local import LocalRecord
from tests.e2e.conftest import Team, cloud, team  # noqa: F401 - fixtures
from tests.engine.conftest import DRAFT_REVIEW_DONE

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


def _workspace(root: Path) -> Path:
    files = {
        "bees.yaml": "name: maya-space\nrun_folder: shared\n",
        "folders/shared.yaml": "description: run folders, shared with the runners\n",
        "processes/weekly-report.yaml": "title: Weekly report\n" + DRAFT_REVIEW_DONE,
        "addons/mail.yaml": ("connection:\n  env: [MAIL_TOKEN]\n"
                             "actions:\n  send: {kind: send, command: [\"true\"]}\n"),
        "agents/writer.yaml": ("instructions: drafts\ntools: [mail.send]\nrunner:\n"
                               "  command: [\"true\"]\n"),
        "agents/reviewer.yaml": "instructions: reviews\nrunner:\n  command: [\"true\"]\n",
    }
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_item_create_on_a_pool_offers_it_from_the_start(
        tmp_path: Path, team: Team, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    workspace = _workspace(tmp_path / "ws")
    shared = tmp_path / "shared-runs"
    shared.mkdir()
    home = tmp_path / "maya-laptop"
    home.mkdir()
    with monkeypatch.context() as patch:
        patch.setenv("BEES_HOME", str(home))
        set_identity(person=team.maya, computer="maya-laptop")
        save_login(Login(team.cloud.url, team.tokens[team.maya]))
        link_folder("shared", shared, ["shared"])
        Computer.load()
    env = {**os.environ, "BEES_HOME": str(home), "MAIL_TOKEN": "maya-secret"}

    made = subprocess.run(
        [sys.executable, "-m", "bees_cli", "item", "create", "weekly-report", "--title",
         "Week 2", "--on", "build", "--json", "-w", str(workspace)],
        env=env, capture_output=True, text=True, timeout=120, check=False)
    assert made.returncode == 0, made.stderr
    answer = json.loads(made.stdout)
    schema = json.loads((REPO / "schemas" / "output" / "item-create.json").read_text())
    jsonschema.validate(answer, schema)
    item = answer["item_id"]
    assert (answer["started"], answer["offer"]["pool"], answer["offer"]["secrets"],
            answer["offer"]["open"], answer["offer"]["epoch"]) == (
        False, "build", ["MAIL_TOKEN"], True, 1)
    assert f"{item}: offered to pool build (secrets by name: MAIL_TOKEN)" in made.stderr

    # released with its checkpoint: restarts at its first stage; nothing ran here
    row = LocalRecord(home / "data" / "record.db").item(item)
    assert (row.status, row.stage, row.status_text) == ("free", "Draft", "free, restarts at Draft")
    checkpoint = json.loads((shared / item / "checkpoint.json").read_text())
    assert (checkpoint["item"], checkpoint["restart_stages"]) == (item, {"main": "Draft"})
    with CloudClient(team.cloud.url, team.tokens[team.maya], retries=0) as maya:
        [offer] = maya.offers()
        owner = maya.get_owner(item)
    assert (offer.item_id, offer.pool, offer.open, offer.offered_by) == (
        item, "build", True, team.maya)
    assert owner is not None and owner.held is False and owner.epoch == 1
