"""An item's story travels: told from one record, imported into another once, with its origin."""

from __future__ import annotations

from pathlib import Path

import pytest

from bees_cli.errors import NotFound
from bees_cli.record.local import LocalRecord
from bees_cli.record.story import ReviewRounds, Story, StoryEvent, import_story, tell_story

ITEM = "01JH2Q0000000000000000TEST"
LAPTOP, DESKTOP = "a" * 32, "b" * 32
REVIEWS = ReviewRounds(rounds={"Draft": 2, "Review": 2},
                       change_requests={"Review": [["shorter"], ["cite"]]}, comments=["cite"])


def laptop_record(tmp_path: Path) -> LocalRecord:
    """The laptop's record: the item created there, a pick and a review asking for changes."""
    record = LocalRecord(tmp_path / "laptop.db")
    record.add_item(id=ITEM, process="report", title="Week 2", workspace="/ws",
                    run_folder="/laptop/runs/X", input="{}", stage="Draft")
    record._add_event(ITEM, key="Draft:1:pick", kind="pick", stage="Draft", round=1,
                     data={"pick": {"agent": "writer", "reason": "named on the stage"}})
    record._add_event(ITEM, key="Review:1:1:stage_finished", kind="stage_finished",
                     stage="Review", round=1,
                     data={"verdict": "changes_requested", "comments": ["shorter"],
                           "output_dir": "/laptop/runs/X/Review",
                           "stdout": "/laptop/runs/X/logs/Review-r1-a1.stdout",
                           "elsewhere": "/laptop/runs/XY"})
    return record


def told(record: LocalRecord, machine_id: str, computer: str, run_folder: str) -> Story:
    return tell_story(record, ITEM, machine_id=machine_id, computer=computer,
                      run_folder=run_folder, reviews=REVIEWS)


def desktop_record(tmp_path: Path, story: Story) -> LocalRecord:
    """The desktop's record after ``bees continue``: the row, then the story."""
    record = LocalRecord(tmp_path / "desktop.db")
    record.add_item(id=ITEM, process="report", title="Week 2", workspace="/ws2",
                    run_folder="/desktop/runs/X", input="{}", stage="Draft",
                    created=story.created, created_on=story.created_on)
    return record


def test_a_story_keeps_each_fact_with_its_origin_and_the_created_time(tmp_path: Path) -> None:
    laptop = laptop_record(tmp_path)
    story = told(laptop, LAPTOP, "maya-laptop", "/laptop/runs/X")
    created = laptop.item(ITEM).created
    assert (story.created, story.created_on, story.run_folder, story.reviews) == (
        created, "maya-laptop", "/laptop/runs/X", REVIEWS)
    assert [(e.key, e.kind, e.stage, e.round, e.machine_id, e.computer)
            for e in story.events] == [
        ("created", "created", None, None, LAPTOP, "maya-laptop"),
        ("Draft:1:pick", "pick", "Draft", 1, LAPTOP, "maya-laptop"),
        ("Review:1:1:stage_finished", "stage_finished", "Review", 1, LAPTOP, "maya-laptop")]
    assert Story.model_validate(story.model_dump()) == story
    with pytest.raises(NotFound):
        tell_story(laptop, "01JH2Q0000000000000000NONE", machine_id=LAPTOP,
                   computer="maya-laptop", run_folder="/r", reviews=REVIEWS)


def test_the_desktop_imports_the_story_before_its_own_facts_once(tmp_path: Path) -> None:
    laptop = laptop_record(tmp_path)
    story = told(laptop, LAPTOP, "maya-laptop", "/laptop/runs/X")
    desktop = desktop_record(tmp_path, story)
    assert desktop.events(ITEM) == []  # no "created here": the story brings it
    added = import_story(desktop, ITEM, story, machine_id=DESKTOP, computer="maya-desktop",
                         run_folder="/desktop/runs/X")
    assert added == 3
    desktop._add_event(ITEM, key="continued:x", kind="continued", stage="Draft",
                      data={"from": "maya-laptop", "checkpoint_sha256": "c" * 64})
    row = desktop.item(ITEM)
    assert (row.created, row.created_on) == (laptop.item(ITEM).created, "maya-laptop")
    assert row.to_json()["created_on"] == "maya-laptop"
    events = desktop.events(ITEM)
    laptop_at = [e.at for e in laptop.events(ITEM)]
    assert [(e.kind, e.at, e.computer) for e in events] == [
        ("created", laptop_at[0], "maya-laptop"), ("pick", laptop_at[1], "maya-laptop"),
        ("stage_finished", laptop_at[2], "maya-laptop"), ("continued", events[3].at, None)]
    # paths under the laptop's run folder now name the desktop's (the folder travelled)
    assert events[2].data == {
        "verdict": "changes_requested", "comments": ["shorter"],
        "output_dir": "/desktop/runs/X/Review",
        "stdout": "/desktop/runs/X/logs/Review-r1-a1.stdout", "elsewhere": "/laptop/runs/XY"}
    assert [e.typed().render() for e in events[:2]] == [
        "[maya-laptop] created",
        "[maya-laptop] Draft round 1: picked writer: named on the stage"]
    # a continue retried imports nothing twice
    assert import_story(desktop, ITEM, story, machine_id=DESKTOP, computer="maya-desktop",
                        run_folder="/desktop/runs/X") == 0
    assert len(desktop.events(ITEM)) == 4


def test_a_story_that_comes_back_adds_only_what_happened_elsewhere(tmp_path: Path) -> None:
    laptop = laptop_record(tmp_path)
    desktop = desktop_record(tmp_path, told(laptop, LAPTOP, "maya-laptop", "/laptop/runs/X"))
    import_story(desktop, ITEM, told(laptop, LAPTOP, "maya-laptop", "/laptop/runs/X"),
                 machine_id=DESKTOP, computer="maya-desktop", run_folder="/desktop/runs/X")
    desktop._add_event(ITEM, key="Draft:3:pick", kind="pick", stage="Draft", round=3,
                      data={"pick": {"agent": "writer", "reason": "named on the stage"}})
    # the desktop tells it on: the laptop's facts keep their laptop keys and origin
    back = told(desktop, DESKTOP, "maya-desktop", "/desktop/runs/X")
    assert [(e.key, e.machine_id, e.computer) for e in back.events] == [
        ("created", LAPTOP, "maya-laptop"), ("Draft:1:pick", LAPTOP, "maya-laptop"),
        ("Review:1:1:stage_finished", LAPTOP, "maya-laptop"),
        ("Draft:3:pick", DESKTOP, "maya-desktop")]
    assert (back.created, back.created_on) == (laptop.item(ITEM).created, "maya-laptop")
    # back on the laptop: only the desktop's fact is new; the item was created here
    assert import_story(laptop, ITEM, back, machine_id=LAPTOP, computer="maya-laptop",
                        run_folder="/laptop/runs/X") == 1
    assert [(e.kind, e.round, e.computer) for e in laptop.events(ITEM)] == [
        ("created", None, None), ("pick", 1, None), ("stage_finished", 1, None),
        ("pick", 3, "maya-desktop")]
    assert laptop.item(ITEM).created_on is None


def test_the_story_model_is_strict() -> None:
    event = {"key": "k", "at": "2026-01-05T09:30:00.000000Z", "kind": "pick", "stage": None,
             "round": None, "data": {}, "machine_id": LAPTOP, "computer": "maya-laptop"}
    assert StoryEvent.model_validate(event).key == "k"
    for wrong in ({"round": True}, {"round": "1"}, {"key": ""}, {"data": []},
                  {"extra": 1}, {"computer": None}):
        with pytest.raises(ValueError):
            StoryEvent.model_validate({**event, **wrong})
    with pytest.raises(ValueError):
        ReviewRounds.model_validate({"rounds": {"Draft": -1}})


def test_a_continued_run_keeps_its_facts_apart_from_the_earlier_runs(tmp_path: Path) -> None:
    record = laptop_record(tmp_path)
    # relinquished in Draft round 1 and continued here: run 2 starts that round again
    record.restart_item(ITEM, input='{"run": 2, "snapshot": {}}', run_folder="/laptop/runs/X",
                        stage="Draft")
    for _ in range(2):  # an activity retried writes its fact once
        record._add_event(ITEM, key="Draft:1:pick", kind="pick", stage="Draft", round=1,
                         data={"pick": {"agent": "editor", "reason": "named on the item"}})
    picks = [e.data["pick"]["agent"] for e in record.events(ITEM) if e.kind == "pick"]
    assert picks == ["writer", "editor"]
    story = told(record, LAPTOP, "maya-laptop", "/laptop/runs/X")
    assert [e.key for e in story.events if e.kind == "pick"] == [
        "Draft:1:pick", "run2:Draft:1:pick"]
