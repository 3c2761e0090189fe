"""Commands that only read import only what they print (issue 29, point 3): ``bees status``,
``bees item show`` and ``bees checkpoint verify``, printing for a person, import neither
the engine, the cloud client, asyncio nor the JSON output models (``--json`` does)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bees_cli.handover.checkpoint import write_checkpoint
from tests.cli.test_startup import _loaded
from tests.conftest import EXAMPLE, BeesRunner

NEVER = {"asyncio", "bees_cli.cli.json_models", "bees_cli.cloud.client",
         "bees_cli.cloud.async_client", "httpx", "temporalio", "bees_cli.engine.client"}
"""Off every read-only path below: the event loop, the output contract's models, the
cloud client and the engine's client."""


def _item(bees: BeesRunner) -> str:
    made = bees("item", "create", "weekly-report", "-w", str(EXAMPLE))
    assert made.returncode == 0, made.stderr
    (item,) = re.findall(r"^[0-9A-Z]{26}$", made.stdout, re.MULTILINE)
    return item


def _run_folder(root: Path) -> tuple[Path, str]:
    folder = root / "run"
    (folder / "Draft").mkdir(parents=True)
    (folder / "Draft" / "notes.md").write_text("notes\n")
    info = write_checkpoint(folder, item_id="i", workspace="w", process_digest="p",
                            restart_stages={"main": "Draft"}, computer="c",
                            machine_id="0" * 32, journal=[], now=datetime.now(UTC))
    return folder, info.sha256


def _heavy(modules: set[str], names: set[str]) -> set[str]:
    return {n for n in names if n in modules or any(m.startswith(n + ".") for m in modules)}


def test_status_for_a_person_imports_no_engine_nor_models_it_does_not_print(
        bees: BeesRunner, bees_home: Path) -> None:
    _item(bees)
    loaded = _loaded(["status"], bees_home)
    assert "bees_cli.usecases.items" in loaded  # it ran
    assert _heavy(loaded, NEVER | {"bees_cli.engine", "bees_cli.workspace.models",
                                   "bees_cli.record.views", "typer"}) == set()


def test_item_show_for_a_person_imports_no_event_loop_nor_json_models(
        bees: BeesRunner, bees_home: Path) -> None:
    item = _item(bees)
    loaded = _loaded(["item", "show", item], bees_home)
    assert "bees_cli.record.views" in loaded  # it ran (the history's events)
    # parsed without typer (quick path); the workspace's models only name an agent's type
    assert _heavy(loaded, NEVER | {"typer", "bees_cli.workspace.models"}) == set()


@pytest.mark.parametrize("as_json", [False, True])
def test_checkpoint_verify_imports_the_json_models_only_for_json(
        tmp_path: Path, bees: BeesRunner, bees_home: Path, as_json: bool) -> None:
    folder, digest = _run_folder(tmp_path)
    args = ["checkpoint", "verify", str(folder), "--digest", digest]
    assert bees(*args).returncode == 0
    loaded = _loaded([*args, *(["--json"] if as_json else [])], bees_home)
    assert "bees_cli.handover.checkpoint" in loaded
    if as_json:  # the contract's models, and through them the workspace's
        assert _heavy(loaded, NEVER | {"typer"}) == {"bees_cli.cli.json_models"}
    else:
        assert _heavy(loaded, NEVER | {"bees_cli.engine", "bees_cli.workspace.models",
                                       "bees_cli.agents.selection", "typer"}) == set()
