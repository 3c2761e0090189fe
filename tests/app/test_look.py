"""The app reads like a tool (issue 28, point 5): each item's stages as a progress line
with the current one marked and a review's send-back shown, the story as a timeline, the
held action as a card with its recipients first, the team view, and empty states."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bees_cli.cloud.wire import RecordEntry
from bees_cli.machine.computer import Computer
from bees_cli.record.local import LocalRecord
from bees_cli.record.shared import SharedRecord
from bees_cli.record.states import Status
from tests.app.conftest import TestClient

ITEM = "01JH3QX5Z8KZ2W4M6N8P0R2T4V"
TEAM_ITEM = "01JH3QX5Z8KZ2W4M6N8P0R2T4X"
STAGES = [{"name": "Draft", "kind": "work", "reviews": None},
          {"name": "Review", "kind": "review", "reviews": "Draft"},
          {"name": "Send", "kind": "work", "reviews": None},
          {"name": "Done", "kind": "done", "reviews": None}]


def made(computer: Computer, tmp_path: Path, *, stage: str, status: Status) -> LocalRecord:
    """An item of the weekly report's four stages, at ``stage`` in ``status``."""
    record = LocalRecord(computer.record_path)
    record.add_item(id=ITEM, process="weekly-report", title="Week 48",
                    workspace=str(tmp_path / "ws"), run_folder=str(tmp_path / ITEM),
                    input=json.dumps({"snapshot": {"process": {"stages": STAGES}}}),
                    stage=stage)
    record.set_state(ITEM, status=status, stage=stage)
    return record


def steps(html: str) -> list[tuple[str, str]]:
    line = re.search(r'<ol data-testid="progress".*?</ol>', html, re.S)
    assert line is not None, html
    return re.findall(r'<li data-stage="(\w+)" data-state="(\w+)"', line.group(0))


def test_the_progress_line_marks_the_current_stage_and_a_send_back(
        client: TestClient, computer: Computer, tmp_path: Path) -> None:
    record = made(computer, tmp_path, stage="Review", status=Status.RUNNING)
    html = client.get(f"/items/{ITEM}").text
    assert steps(html) == [("Draft", "done"), ("Review", "current"), ("Send", "todo"),
                           ("Done", "todo")]
    assert html.count('aria-current="step"') == 1
    assert 'data-testid="sent-back"' not in html
    # the reviewer asks for changes: back to Draft, and the line says so on Review
    record._add_event(ITEM, key="r1", kind="stage_finished", stage="Review", round=1,
                      data={"agent": "reviewer", "attempt": 1, "verdict": "changes_requested",
                            "comments": ["needs a summary"]})
    record.set_state(ITEM, status=Status.RUNNING, stage="Draft")
    html = client.get(f"/items/{ITEM}").text
    assert steps(html) == [("Draft", "current"), ("Review", "todo"), ("Send", "todo"),
                           ("Done", "todo")]
    assert ('<span data-testid="sent-back" class="sent-back">↩ sent back to Draft 1×</span>'
            in html)
    assert re.search(r'<li data-event="stage_finished" class="tone-bad">', html)
    record.set_state(ITEM, status=Status.WAITING_FOR_APPROVAL, stage="Send")
    assert steps(client.get(f"/items/{ITEM}").text)[1:3] == [("Review", "done"),
                                                            ("Send", "waiting")]
    record.set_state(ITEM, status=Status.DONE, stage="Done")
    assert {state for _, state in steps(client.get(f"/items/{ITEM}").text)} == {"done"}


def test_the_story_is_a_timeline_and_an_empty_one_says_why(
        client: TestClient, computer: Computer, tmp_path: Path) -> None:
    made(computer, tmp_path, stage="Draft", status=Status.RUNNING)
    html = client.get(f"/items/{ITEM}").text
    assert '<ol data-testid="story" class="story timeline">' in html
    assert re.findall(r'<li data-event="(\w+)" class="tone-(\w+)">', html) == [
        ("created", "info")]


def test_the_held_action_card_shows_recipients_first_then_each_argument(
        client: TestClient, computer: Computer, tmp_path: Path) -> None:
    record = made(computer, tmp_path, stage="Send", status=Status.WAITING_FOR_APPROVAL)
    record.put_approval(ITEM, {"id": 1, "item_id": ITEM, "stage": "Send", "round": 1,
                               "action": "chat.post", "kind": "send", "summary": "post",
                               "input": json.dumps({"text": "Hi", "pin": True,
                                                    "channel": "#team"}),
                               "status": "waiting",
                               "asked_at": "2026-12-01T10:00:00.000000Z"})
    html = client.get(f"/items/{ITEM}").text
    card = re.search(r'<section data-testid="approval".*?</section>', html, re.S)
    assert card is not None
    assert "Waits for your approval · request 1" in card.group(0)
    assert re.findall(r'<dt>(\w+)</dt><dd data-field="(\w+)">', card.group(0)) == [
        ("channel", "channel"), ("text", "text"), ("pin", "pin")]


def test_the_team_view_lists_every_computer_what_it_runs_and_when_it_was_heard_from(
        client: TestClient, computer: Computer, tmp_path: Path) -> None:
    alone = client.get("/team").text
    assert re.findall(r'<section data-computer="([\w-]+)"', alone) == [computer.computer]
    assert 'data-testid="team-alone"' in alone
    assert 'data-testid="runs-none"' in alone
    made(computer, tmp_path, stage="Draft", status=Status.RUNNING)
    SharedRecord(computer.record_path).apply([RecordEntry(
        item_id=TEAM_ITEM, fields={"title": "Week 49", "process": "weekly-report",
                                   "stage": "Review", "status": "running",
                                   "agent": "reviewer", "computer": "sam-desktop"},
        origin_time="2026-12-01T10:00:00Z", machine_id="m-sam", person="sam@example.com",
        seq=1)], cursor=1)
    html = client.get("/team").text
    assert re.findall(r'<section data-computer="([\w-]+)"', html) == [
        computer.computer, "sam-desktop"]
    sam = html.split('<section data-computer="sam-desktop"')[1]
    assert '<span data-field="person">sam@example.com</span>' in sam
    assert '<span data-field="under-way">1 under way</span>' in sam
    assert '<span data-field="heard">last heard from 2026-12-01T10:00:00Z (' in sam
    assert re.findall(r'<li data-item-id="(\w+)"><a href="/items/\w+">([^<]+)</a> '
                      r'<span class="pill [\w-]+">([^<]+)</span>', sam) == [
        (TEAM_ITEM, "Week 49", "Review · running")]
    mine = html.split(f'<section data-computer="{computer.computer}"')[1].split("</section>")[0]
    assert re.findall(r'<li data-item-id="(\w+)">', mine) == [ITEM]
    assert "bees run is not running" in mine
    assert 'data-testid="team-alone"' not in html


def test_an_empty_list_says_what_to_do(client: TestClient) -> None:
    assert ("No items yet. Make one with <code>bees item create PROCESS</code>, or let a "
            "schedule fire.") in client.get("/items").text
    assert "Nothing waits for you: no approval and no stopped item." in client.get(
        "/items?show=waiting").text


def test_the_team_view_shows_each_runner_as_the_last_sync_heard_it(
        client: TestClient, computer: Computer) -> None:
    alone = client.get("/team").text
    assert ('<p class="empty" data-testid="runners-none">No runners in this team.' in alone)
    SharedRecord(computer.record_path).set_meta(runners=json.dumps({
        "server_time": "2026-12-01T10:12:00Z", "runners": [
            {"name": "runner-1", "pool": "build", "heard_at": "2026-12-01T10:11:50Z",
             "retired_at": None, "running": ["01JH3QX5Z8"]},
            {"name": "runner-2", "pool": "build", "heard_at": "2026-12-01T10:00:00Z",
             "retired_at": None, "running": []}]}))
    html = client.get("/team").text
    assert re.findall(r'<li data-runner="([\w-]+)">([^<]+)</li>', html) == [
        ("runner-1", "runner-1: pool build, runs 01JH3QX5Z8, heard 10 s ago"),
        ("runner-2", "runner-2: pool build, runs nothing, silent for 12 min")]
    assert 'data-testid="runners-none"' not in html
