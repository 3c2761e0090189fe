"""A checkpoint of format 2 carries the item's story; its digest covers it; format 1 still reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bees_cli.handover.checkpoint import canonical_json, verify_checkpoint
from bees_cli.record.story import ReviewRounds, Story, StoryEvent
from tests.handover.helpers import found, make_run, rewrite, sha, write

STORY = Story(
    created="2026-01-05T08:00:00.000000Z", created_on="maya-laptop", run_folder="/runs/X",
    events=[
        StoryEvent(key="created", at="2026-01-05T08:00:00.000000Z", kind="created",
                   stage=None, round=None, data={}, machine_id="m" * 32,
                   computer="maya-laptop"),
        StoryEvent(key="Review:1:1:stage_finished", at="2026-01-05T08:10:00.000000Z",
                   kind="stage_finished", stage="Review", round=1,
                   data={"verdict": "changes_requested", "comments": ["shorter"]},
                   machine_id="m" * 32, computer="maya-laptop"),
    ],
    reviews=ReviewRounds(rounds={"Draft": 2, "Review": 1},
                         change_requests={"Review": [["shorter"]]}, comments=["shorter"]),
)


def test_a_story_round_trips_and_is_covered_by_the_digest(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run")
    info = write(folder, story=STORY)
    data = (folder / "checkpoint.json").read_bytes()
    doc = json.loads(data)
    assert doc["format"] == 2
    assert canonical_json(doc) == data
    verification = verify_checkpoint(folder, expected_sha256=info.sha256)
    assert verification.ok is True
    assert verification.document is not None and verification.document.story == STORY
    assert Story.model_validate(verification.checkpoint["story"]) == STORY  # type: ignore[index]

    # a history changed after the handover is refused like a changed file
    def forge(doc: dict[str, Any]) -> None:
        doc["story"]["events"][1]["data"]["verdict"] = "approve"
        doc["story"]["reviews"]["change_requests"] = {}

    rewrite(folder, forge)
    forged = (folder / "checkpoint.json").read_bytes()
    assert found(verify_checkpoint(folder, expected_sha256=info.sha256)) == [
        ("checkpoint_digest", "checkpoint.json",
         f"sha256 {sha(forged)} does not match the expected {info.sha256}")]


def test_without_a_story_it_is_format_1_as_before(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run")
    write(folder)
    doc = json.loads((folder / "checkpoint.json").read_bytes())
    assert (doc["format"], "story" in doc) == (1, False)
    verification = verify_checkpoint(folder)
    assert verification.ok is True
    assert verification.document is not None and verification.document.story is None


def test_a_story_must_go_with_its_format(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run")
    write(folder, story=STORY)
    rewrite(folder, lambda doc: doc.pop("story"))
    assert found(verify_checkpoint(folder)) == [
        ("checkpoint_schema", "checkpoint.json",
         "missing field 'story' (format 2 carries the item's story)")]
    rewrite(folder, lambda doc: doc.update(story=None))
    assert found(verify_checkpoint(folder)) == [
        ("checkpoint_schema", "checkpoint.json", "'story' must be an object (format 2)")]
    write(folder)
    rewrite(folder, lambda doc: doc.update(story=STORY.model_dump()))
    assert found(verify_checkpoint(folder)) == [
        ("checkpoint_schema", "checkpoint.json",
         "unknown field 'story' in format 1 (it came with format 2)")]


def test_each_wrong_field_of_a_story_is_named(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run")
    write(folder, story=STORY)

    def damage(doc: dict[str, Any]) -> None:
        doc["item"] = ""
        doc["story"]["events"][0]["round"] = "1"
        del doc["story"]["events"][1]["machine_id"]
        doc["story"]["reviews"]["rounds"]["Draft"] = -2
        doc["story"]["created"] = 5

    rewrite(folder, damage)
    assert found(verify_checkpoint(folder)) == [
        ("checkpoint_schema", "checkpoint.json", message) for message in [
            "'item' must be a non-empty string",
            "story.created: input should be a valid string",
            "story.events[0].round: input should be a valid integer",
            "story.events[1].machine_id: field required",
            "story.reviews.rounds.Draft: input should be greater than or equal to 0",
        ]
    ]
