"""The engine's snapshot view and the store of whole snapshots by digest (issue 10, points 3-4)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from bees_cli.agents.snapshot import ItemSnapshot, make_snapshot
from bees_cli.engine.models import ItemInput
from bees_cli.engine.snapshot import SNAPSHOT_VERSION, EngineSnapshot
from bees_cli.engine.snapshot_store import (
    SnapshotMissing,
    engine_view,
    keep_snapshot,
    load_snapshot,
    snapshot_file,
)
from bees_cli.record.local import LocalRecord
from bees_cli.workspace.loader import load_workspace
from tests.engine.conftest import Space

HISTORIES = Path(__file__).resolve().parents[1] / "engine" / "histories"

PROCESS = """\
stages:
  - name: Work
    kind: work
    agents: [alpha]
    approval: required
  - name: Done
    kind: done
"""


def whole(space: Space) -> ItemSnapshot:
    space.agent("alpha")
    space.write("agents/alpha.yaml", "max_concurrent_runs: 2\n"
                + (space.root / "agents/alpha.yaml").read_text())
    space.write("processes/p.yaml", PROCESS)
    return make_snapshot(load_workspace(space.root), "p")


def test_the_view_keeps_only_what_the_workflow_reads(space: Space) -> None:
    view = engine_view(whole(space))
    assert view.version == SNAPSHOT_VERSION == 1
    assert view.model_dump()["agents"] == {"alpha": {"tools": [], "max_concurrent_runs": 2,
                                                     "loop": None}}
    assert [(s.name, s.kind, s.approval) for s in view.process.stages] == [
        ("Work", "work", "required"), ("Done", "done", "none")]
    assert view.stage("Work").reviews is None


def test_an_old_history_input_reads_as_the_view() -> None:
    """Inputs saved before the view carried the whole workspace snapshot: extras are ignored."""
    history = json.loads((HISTORIES / "plain_work_review_done.json").read_text())
    payload = history["events"][0]["workflowExecutionStartedEventAttributes"]["input"]
    data = json.loads(base64.b64decode(payload["payloads"][0]["data"]))
    assert "runner" in data["snapshot"]["agents"]["alpha"]
    item = ItemInput.model_validate(data)
    assert isinstance(item.snapshot, EngineSnapshot)
    assert (item.snapshot.version, item.snapshot_digest, item.state) == (1, None, None)
    assert [s.name for s in item.snapshot.process.stages] == ["Work", "Review", "Done"]


def test_kept_once_by_digest_and_loaded_back(space: Space, record: LocalRecord) -> None:
    snapshot = whole(space)
    digest = keep_snapshot(record, snapshot)
    assert digest == snapshot.digest()
    path = snapshot_file(record, digest)
    assert path.name == f"{digest}.json"
    assert path.read_text() == snapshot.canonical_json()
    assert keep_snapshot(record, snapshot) == digest
    assert load_snapshot(record, "01ANY", digest) == snapshot


def test_a_changed_copy_is_not_loaded(space: Space, record: LocalRecord) -> None:
    snapshot = whole(space)
    digest = keep_snapshot(record, snapshot)
    changed = snapshot.model_copy(update={"default_agent": "alpha"})
    snapshot_file(record, digest).write_text(changed.canonical_json())
    with pytest.raises(SnapshotMissing) as caught:
        load_snapshot(record, "01ANY", digest)
    assert caught.value.message == "item 01ANY is not in the local record"


def test_an_item_made_before_the_store_loads_from_its_record_row(
        space: Space, record: LocalRecord) -> None:
    snapshot = whole(space)
    old_input = {"item_id": "01OLD", "title": "T", "run_folder": str(space.root / "run"),
                 "snapshot": snapshot.model_dump(mode="json")}
    record.add_item(id="01OLD", process="p", title="T", workspace=str(space.root),
                    run_folder=str(space.root / "run"), input=json.dumps(old_input),
                    stage="Work")
    assert load_snapshot(record, "01OLD", None) == snapshot
    assert load_snapshot(record, "01OLD", snapshot.digest()) == snapshot
    # found there, it is kept in the store for the next time
    assert snapshot_file(record, snapshot.digest()).exists()
    with pytest.raises(SnapshotMissing) as caught:
        load_snapshot(record, "01OLD", "0" * 64)
    assert caught.value.message == f"the snapshot {'0' * 64} of item 01OLD is not stored here"
