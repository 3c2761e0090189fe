"""``bees item show``: typed history in text and JSON; the committed JSON Schema is current."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest

from bees_cli.cli.json_schemas import generate
from bees_cli.record.local import LocalRecord
from bees_cli.record.pieces import Piece
from bees_cli.record.states import Status, WaitKind
from bees_cli.record.views import ModelRetry, clock_words
from tests.conftest import REPO, BeesRunner
from tests.record.test_events import SAMPLES

OUTPUT_SCHEMAS = REPO / "schemas" / "output"
ITEM = "01JH3ZK4Q8W2M5N7P9R1T3V5X7"


def test_output_schema_files_are_current() -> None:
    on_disk = {p.name: p.read_text("utf-8") for p in OUTPUT_SCHEMAS.glob("*.json")}
    assert on_disk == generate(), "run: python -m bees_cli.cli.json_schemas"


@pytest.fixture
def shown_item(bees_home: Path, tmp_path: Path) -> str:
    """An item of this computer whose history holds one fact of every kind, and one unknown."""
    record = LocalRecord(bees_home / "data" / "record.db")
    record.add_item(id=ITEM, process="weekly-report", title="Week 2", workspace="/ws",
                    run_folder=str(tmp_path / "run"), input="{}", stage="Draft")
    for kind, (data, stage, round_, _) in sorted(SAMPLES.items()):
        if kind != "created":
            record._add_event(ITEM, key=kind, kind=kind, stage=stage, round=round_, data=data)
    record._add_event(ITEM, key="new", kind="piece_merged", data={"piece": "p-2"})
    for seq, parent, status in ((1, None, "finished"), (2, "r1-a1-p1", "running")):
        record.put_piece(Piece(
            item_id=ITEM, piece=f"r1-a1-p{seq}", stage="Draft", seq=seq, parent=parent,
            depth=seq, named="alpha" if seq == 1 else "beta", agent="alpha" if seq == 1
            else "beta", pick_reason="named by the caller", task="figures", ask_digest="d",
            status=status, exit_code=0 if seq == 1 else None,
            workflow_id=f"{ITEM}/Draft/r1-a1-p{seq}", folder=f"/run/Draft/pieces/r1-a1-p{seq}"))
    record.set_state(ITEM, status=Status.WAITING, reason="folder reports is not linked here",
                     wait=WaitKind.ELIGIBILITY)
    return ITEM


def test_item_show_json_is_typed_and_matches_its_schema(bees: BeesRunner, shown_item: str
                                                        ) -> None:
    done = bees("item", "show", shown_item, "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    schema = json.loads((OUTPUT_SCHEMAS / "item-show.json").read_text("utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(shown)) == []
    assert (shown["item"]["status"], shown["item"]["wait"], shown["item"]["reason"]) == (
        "waiting", "eligibility", "folder reports is not linked here")
    assert "status_text" not in shown["item"]  # the text view words status and reason
    kinds = [e["kind"] for e in shown["history"]]
    assert kinds == ["created", *sorted(k for k in SAMPLES if k != "created"), "piece_merged"]
    assert [(p["piece"], p["parent"], p["status"]) for p in shown["pieces"]] == [
        ("r1-a1-p1", None, "finished"), ("r1-a1-p2", "r1-a1-p1", "running")]
    continued = next(e for e in shown["history"] if e["kind"] == "continued")
    assert continued["from"] == "maya-laptop"
    assert shown["history"][-1]["data"] == {"piece": "p-2"}
    assert shown["logs"] == ["/l/a.stdout", "/l/a.stderr"]
    assert (shown["version"], shown["item"]["item_id"]) == (1, shown_item)
    assert "id" not in shown["item"] and "since_human" not in shown


def test_item_show_renders_every_fact_as_a_sentence(bees: BeesRunner, shown_item: str
                                                    ) -> None:
    done = bees("item", "show", shown_item)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[3] == "status      waiting: folder reports is not linked here"
    history = [line.split("  ", 2)[2] for line in lines[lines.index("history") + 1:]]
    assert history == [SAMPLES["created"][3],
                       *(SAMPLES[k][3] for k in sorted(SAMPLES) if k != "created"),
                       'piece_merged {"piece": "p-2"}']
    assert lines[lines.index("pieces") + 1:lines.index("history")] == [
        "  Draft round 1",
        "    r1-a1-p1  alpha (named by the caller)  finished  exit 0",
        "      r1-a1-p2  beta (named by the caller)  running  -"]


def test_a_queued_decision_in_status_and_item_show_json_matches_their_schemas(
        bees: BeesRunner, bees_home: Path, tmp_path: Path) -> None:
    record = LocalRecord(bees_home / "data" / "record.db")
    record.add_item(id=ITEM, process="p", title="Send it", workspace="/ws",
                    run_folder=str(tmp_path / "run"), input="{}", stage="Send")
    record.set_state(ITEM, status=Status.WAITING_FOR_APPROVAL, reason="mail.send {}")
    for request in (1, 2):
        record.put_approval(ITEM, {"id": request, "item_id": ITEM, "stage": "Send",
                                   "round": 1, "action": "mail.send", "kind": "send",
                                   "summary": "{}", "input": "{}", "status": "waiting",
                                   "asked_at": "2026-12-01T10:00:00.000000Z",
                                   "interrupted_at": "2026-12-01T09:59:00Z"
                                   if request == 2 else None})
    # `bees approve ITEM --action 2 --again` while bees run is down (usecases.approvals.decide)
    assert record.queue_decision(ITEM, "bees.decide", {
        "approve": True, "request_id": 2, "who": "maya@example.com",
        "at": "2026-12-01T10:01:00.123456Z", "reason": None, "answer": "again"}) is None
    decision = {"decision": "approved", "request_id": 2, "answer": "again",
                "who": "maya@example.com", "at": "2026-12-01T10:01:00Z", "reason": None}
    for command, name in ((["status", "--json"], "status"),
                          (["item", "show", ITEM, "--json"], "item-show")):
        done = bees(*command)
        assert done.returncode == 0, done.stderr
        shown = json.loads(done.stdout)
        schema = json.loads((OUTPUT_SCHEMAS / f"{name}.json").read_text("utf-8"))
        assert list(jsonschema.Draft202012Validator(schema).iter_errors(shown)) == []
        item = shown["items"][0] if name == "status" else shown["item"]
        # request 1 still waits for a person: that is what the item waits for
        assert (item["queued_decisions"], item["wait"]) == ([decision], "approval")
    assert [(a["id"], a["status"], a.get("who"), a.get("answer"), a.get("delivered"))
            for a in shown["approvals"]] == [(1, "waiting", None, None, None),
                                             (2, "approved", "maya@example.com", "again",
                                              False)]
    assert "  Send   waiting for approval: mail.send  " in bees("status").stdout.splitlines()[2]
    # answered too: the item waits for bees run, and every view says the decisions
    assert record.queue_decision(ITEM, "bees.decide", {
        "approve": True, "request_id": 1, "who": "sam@example.com",
        "at": "2026-12-01T10:02:00Z", "reason": None, "answer": None}) is None
    (row,) = json.loads(bees("status", "--json").stdout)["items"]
    assert (row["wait"], [d["who"] for d in row["queued_decisions"]]) == (
        "engine_not_running", ["maya@example.com", "sam@example.com"])
    status_line = bees("item", "show", ITEM).stdout.splitlines()[3]
    assert re.fullmatch(r"status      approved \(run it again\) by maya@example\.com \S+ ago: "
                        r"delivered when bees run starts; approved by sam@example\.com \S+ "
                        r"ago: delivered when bees run starts", status_line), status_line
@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's local time zone is America/New_York for the test."""
    import time

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("new_york")
def test_a_model_retry_is_worded_in_local_time_with_the_date_when_not_today() -> None:
    now = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)  # 13:00 in New York
    assert clock_words(datetime(2026, 12, 1, 19, 5, 59, tzinfo=UTC), now) == "14:05"
    assert clock_words(datetime(2026, 12, 2, 5, 30, tzinfo=UTC), now) == "2026-12-02 00:30"
    limited = ModelRetry(why="rate_limited", server="127.0.0.1:8080", try_number=2, tries=5,
                         until="2026-12-01T19:05:30.123456Z", error="HTTP 429")
    assert limited.until == "2026-12-01T19:05:30Z"
    assert limited.words(now) == "rate limited by 127.0.0.1:8080 until 14:05"
    running = limited.model_copy(update={"until": None})
    assert running.words(now) == "retrying model call, try 2 of 5"
    failed = ModelRetry(why="unavailable", server="h", try_number=3, tries=5,
                        until="2026-12-01T18:00:02Z")
    assert failed.words(now) == "retrying model call, try 3 of 5"
    assert failed.model_copy(update={"tries": None}).words(now) == "retrying model call, try 3"


def test_a_rows_model_retry_is_kept_beside_its_reason_and_cleared_with_it(
        tmp_path: Path) -> None:
    record = LocalRecord(tmp_path / "record.db")
    record.add_item(id=ITEM, process="p", title="t", workspace="/ws", run_folder="/r",
                    input="{}", stage="Draft")
    retry = {"why": "unavailable", "server": "h:1", "try_number": 2, "tries": 5,
             "until": "2026-12-01T18:00:01Z", "error": "HTTP 500"}
    record.set_state(ITEM, status=Status.WAITING, reason="retrying model call, try 2 of 5",
                     wait=WaitKind.MODEL, model_retry=retry)
    row = record.item(ITEM)
    assert (row.wait, row.model_retry) == (WaitKind.MODEL, retry)
    assert row.to_json()["model_retry"] == retry
    record.set_state(ITEM, status=Status.RUNNING)
    row = record.item(ITEM)
    assert (row.status_text, row.wait, row.model_retry) == ("running", None, None)
