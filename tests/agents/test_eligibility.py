"""Item snapshots and eligibility: folders linked, an enabled agent, its add-ons connected."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from bees_cli.agents.eligibility import Eligibility, check_eligibility, item_reads
from bees_cli.agents.selection import Pick, Skipped
from bees_cli.agents.snapshot import ItemSnapshot, make_snapshot
from bees_cli.errors import NotFound
from bees_cli.machine.links import link_folder
from bees_cli.workspace.loader import load_workspace
from bees_cli.workspace.models import (
    Action,
    Addon,
    Agent,
    CommandRunner,
    Connection,
    Folder,
    Process,
    Stage,
)

from ..conftest import EXAMPLE

RUNNER = CommandRunner(command=["true"])
PROCESS = Process(
    stages=[
        Stage(name="Draft", kind="work", agents=["writer"], reads=["team-notes"]),
        Stage(name="Review", kind="review", reviews="Draft", agents=["reviewer"],
              reads=["archive"]),
        Stage(name="Done", kind="done"),
    ]
)
GMAIL = Addon(
    actions={"read": Action(kind="read", command=["true"])},
    connection=Connection(env=["BEES_TEST_GMAIL_TOKEN"]),
)


def snapshot(root: Path, **changes: object) -> ItemSnapshot:
    base: dict[str, object] = {
        "process_name": "weekly-report",
        "process": PROCESS,
        "agents": {
            "writer": Agent(runner=RUNNER, tools=["gmail.read"]),
            "reviewer": Agent(runner=RUNNER),
        },
        "addons": {"gmail": GMAIL},
        "folders": {"team-notes": Folder(), "archive": Folder(path="archive"), "extra": Folder()},
        "default_agent": "writer",
        "workspace_root": str(root),
        "item_folders": [],
        "item_agents": [],
    }
    base.update(changes)
    return ItemSnapshot.model_validate(base)


# --- snapshot -----------------------------------------------------------------------------


def test_make_snapshot_of_the_example() -> None:
    workspace = load_workspace(EXAMPLE)
    snap = make_snapshot(workspace, "weekly-report", item_agents=["writer"],
                         item_folders=["team-notes", "team-notes"])
    assert snap.process_name == "weekly-report"
    assert [s.name for s in snap.process.stages] == ["Draft", "Review", "Send", "Done"]
    assert sorted(snap.agents) == ["reviewer", "sender", "writer"]
    assert snap.default_agent == "writer"
    assert snap.workspace_root == str(EXAMPLE.resolve())
    assert snap.item_folders == ["team-notes"]
    assert snap.item_agents == ["writer"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"process": "weekly-reprt"},
         "no process named 'weekly-reprt' in the workspace — did you mean 'weekly-report'?"),
        ({"item_agents": ["writr"]},
         "no agent named 'writr' in the workspace — did you mean 'writer'?"),
        ({"item_folders": ["nowhere"]}, "no folder named 'nowhere' in the workspace"),
    ],
)
def test_make_snapshot_unknown_names(kwargs: dict[str, object], message: str) -> None:
    workspace = load_workspace(EXAMPLE)
    process = str(kwargs.pop("process", "weekly-report"))
    with pytest.raises(NotFound) as caught:
        make_snapshot(workspace, process, **kwargs)  # type: ignore[arg-type]
    assert caught.value.message == message


def test_snapshot_json_round_trip_and_digest(tmp_path: Path) -> None:
    snap = snapshot(tmp_path, item_folders=["extra"], item_agents=["reviewer"])
    data = json.loads(json.dumps(snap.model_dump(mode="json")))
    again = ItemSnapshot.model_validate(data)
    assert again == snap
    assert ItemSnapshot.model_validate_json(snap.model_dump_json()) == snap
    digest = snap.digest()
    assert len(digest) == 64 and digest == again.digest()
    assert digest == hashlib.sha256(snap.canonical_json().encode()).hexdigest()
    # dict order does not matter; content does
    reordered = snapshot(tmp_path, item_folders=["extra"], item_agents=["reviewer"],
                         agents=dict(reversed(list(snap.agents.items()))))
    assert list(reordered.agents) != list(snap.agents)
    assert reordered.digest() == digest
    assert snapshot(tmp_path, item_folders=["extra"]).digest() != digest


# --- eligibility ------------------------------------------------------------------------------


def test_item_reads_order(tmp_path: Path) -> None:
    assert item_reads(snapshot(tmp_path, item_folders=["extra", "archive"])) == [
        "extra", "archive", "team-notes"
    ]


def test_unlinked_folders_and_a_disconnected_addon(
    bees_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BEES_TEST_GMAIL_TOKEN", raising=False)
    snap = snapshot(tmp_path, item_folders=["extra"])
    result = check_eligibility(snapshot=snap, stage_name="Draft", reviewed_by=None)
    archive = (tmp_path / "archive").resolve()
    assert result == Eligibility(
        ok=False,
        reasons=(
            "folder extra: not linked on this computer (bees link extra PATH)",
            "folder team-notes: not linked on this computer (bees link team-notes PATH)",
            f"folder archive: default path {archive} is not an existing directory",
        ),
        pick=Pick(
            "reviewer",
            "first enabled agent by name",
            (Skipped("writer", "add-on gmail not connected (env BEES_TEST_GMAIL_TOKEN)"),),
        ),
        folders={},
    )


def test_all_linked_and_connected(
    bees_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BEES_TEST_GMAIL_TOKEN", "secret")
    notes = tmp_path / "notes"
    notes.mkdir()
    (tmp_path / "archive").mkdir()
    link_folder("team-notes", notes, ["team-notes"])
    snap = snapshot(tmp_path)
    result = check_eligibility(snapshot=snap, stage_name="Draft", reviewed_by=None)
    assert result == Eligibility(
        ok=True,
        reasons=(),
        pick=Pick("writer", "stage agents of weekly-report.Draft", ()),
        folders={"archive": str((tmp_path / "archive").resolve()),
                 "team-notes": str(notes.resolve())},
    )
    assert Eligibility.from_json(json.loads(json.dumps(result.to_json()))) == result
    review = check_eligibility(snapshot=snap, stage_name="Review", reviewed_by="reviewer")
    assert review.ok
    assert review.pick == Pick(
        "writer", "workspace default", (Skipped("reviewer", "did the work under review"),)
    )
    done = check_eligibility(snapshot=snap, stage_name="Done", reviewed_by=None)
    assert (done.ok, done.reasons, done.pick) == (True, (), None)


def test_disabled_agents(bees_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BEES_TEST_GMAIL_TOKEN", "secret")
    for name in ("notes", "archive"):
        (tmp_path / name).mkdir()
    link_folder("team-notes", tmp_path / "notes", ["team-notes"])
    snap = snapshot(tmp_path, agents={
        "writer": Agent(runner=RUNNER, enabled=False),
        "reviewer": Agent(runner=RUNNER, enabled=False),
    })
    result = check_eligibility(snapshot=snap, stage_name="Draft", reviewed_by=None)
    assert result.ok is False
    assert result.reasons == ("no enabled agent for Draft: writer disabled; reviewer disabled",)
    assert result.pick is not None and result.pick.agent is None


def test_model_runner_agent_is_eligible(bees_home: Path, tmp_path: Path) -> None:
    model = {"model": {"base_url": "https://api.example.com/v1", "name": "m",
                       "api_key_env": "EXAMPLE_API_KEY"}}
    snap = snapshot(tmp_path, agents={"writer": Agent.model_validate({"runner": model})},
                    process=Process(stages=[Stage(name="Draft", kind="work"),
                                            Stage(name="Done", kind="done")]))
    result = check_eligibility(snapshot=snap, stage_name="Draft", reviewed_by=None)
    assert (result.ok, result.reasons) == (True, ())
    assert result.pick is not None and result.pick.agent == "writer"


def test_undeclared_addon_and_unknown_stage(bees_home: Path, tmp_path: Path) -> None:
    snap = snapshot(tmp_path, agents={"writer": Agent(runner=RUNNER, tools=["slack.post"])},
                    process=Process(stages=[Stage(name="Draft", kind="work"),
                                            Stage(name="Done", kind="done")]))
    result = check_eligibility(snapshot=snap, stage_name="Draft", reviewed_by=None)
    assert result.reasons == (
        "no enabled agent for Draft: writer add-on slack not connected "
        "(not declared in the workspace)",
    )
    with pytest.raises(NotFound) as caught:
        check_eligibility(snapshot=snap, stage_name="Drafts", reviewed_by=None)
    assert caught.value.message == (
        "process weekly-report has no stage 'Drafts' — did you mean 'Draft'?"
    )
