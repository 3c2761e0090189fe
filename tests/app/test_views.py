"""The app's view models, pure functions of the use cases' results (issue 17, point 2):
ages, a held action's input, a waiting finish's output, the item page's parts."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from bees_cli.app.item_page import OUTPUT_BYTES, item_page, stage_output
from bees_cli.app.views import Field_, held_view, offered, since_text
from bees_cli.usecases.item_details import ItemDetails

NOW = datetime(2026, 12, 1, 10, 5, 30, tzinfo=UTC)
ITEM = "01JH3QX5Z8KZ2W4M6N8P0R2T4V"


def test_an_age_is_coarse_so_a_live_part_changes_at_most_once_a_minute() -> None:
    assert since_text("2026-12-01T10:05:01.000000Z", NOW) == "2026-12-01T10:05:01Z (just now)"
    assert since_text("2026-12-01T10:02:00.000000Z", NOW) == "2026-12-01T10:02:00Z (3m ago)"
    assert since_text("2026-11-29T10:05:30Z", NOW) == "2026-11-29T10:05:30Z (2d ago)"
    assert since_text("not a time", NOW) == "not a time"


def request(input_text: str, **more: object) -> dict[str, object]:
    return {"id": 2, "item_id": ITEM, "stage": "Send", "round": 1, "action": "chat.post",
            "kind": "post", "summary": "s", "input": input_text, "status": "waiting",
            "asked_at": "2026-12-01T10:00:00Z", **more}


def test_a_mail_shows_to_subject_body_and_other_keys_after() -> None:
    held = held_view(request(json.dumps({"to": ["a@x.org", "b@x.org"], "subject": "Hi",
                                         "body": "Text", "cc": "c@x.org"})))
    assert held.mail == {"to": "a@x.org, b@x.org", "subject": "Hi", "body": "Text"}
    assert held.fields == [Field_("cc", "c@x.org")]
    assert (held.request, held.action, held.raw) == (2, "chat.post", "")


def test_other_input_is_key_by_key_or_as_it_is() -> None:
    held = held_view(request(json.dumps({"channel": "#team", "n": 3, "tags": {"a": 1}})))
    assert held.mail is None
    assert held.fields == [Field_("channel", "#team"), Field_("n", "3"),
                           Field_("tags", '{\n  "a": 1\n}')]
    assert held_view(request("plain words")).raw == "plain words"
    assert held_view(request("[1, 2]")).raw == "[\n  1,\n  2\n]"
    interrupted = held_view(request("{}", interrupted_at="2026-12-01T10:01:00Z"))
    assert interrupted.interrupted_at == "2026-12-01T10:01:00Z"


def test_a_waiting_finish_shows_its_output_files_cut_at_the_limit(tmp_path: Path) -> None:
    out = tmp_path / "Send"
    (out / "sub").mkdir(parents=True)
    (out / "report.md").write_text("# Report\n")
    (out / "sub" / "big.txt").write_text("x" * (OUTPUT_BYTES + 10))
    shown = stage_output(f"output {out}")
    assert [f.key for f in shown] == ["report.md", "sub/big.txt"]
    assert shown[0].value == "# Report\n"
    assert shown[1].value == "x" * OUTPUT_BYTES + "\n… (cut; the whole file is in the run folder)"
    assert stage_output("to sam") == []
    assert stage_output(f"output {tmp_path / 'gone'}") == []


def test_buttons_offered() -> None:
    assert offered("waiting for approval", runs_here=True, held=True) == (
        "approve", "deny", "cancel", "relinquish")
    assert offered("waiting for approval", runs_here=True, held=False) == (
        "cancel", "relinquish")
    assert offered("waiting for a person", runs_here=True, held=False) == (
        "retry", "accept", "cancel", "relinquish")
    assert offered("done", runs_here=True, held=False) == ()
    assert offered("waiting for approval", runs_here=False, held=True) == ()
    assert offered("free", runs_here=False, held=False) == ("continue",)


def details(**more: object) -> ItemDetails:
    item = {"id": ITEM, "item_id": ITEM, "process": "weekly-report", "title": "Week 1",
            "workspace": "/ws", "run_folder": "/runs/x", "stage": "Review",
            "status": "waiting for approval", "status_text": "waiting for approval: x",
            "reason": "x", "wait": None, "agent": "reviewer",
            "since": "2026-12-01T10:00:00.000000Z", "created": "2026-12-01T09:00:00.000000Z",
            "created_on": "maya-laptop"}
    data: dict[str, object] = {
        "item": item, "since_human": "5m ago", "history": [], "logs": [], "engine_log": "/e",
        "journal": [], "approvals": [], **more}
    return ItemDetails.model_validate(data)


def test_the_story_pieces_and_models_of_an_item() -> None:
    history = [
        {"kind": "stage_finished", "at": "2026-12-01T09:10:00Z", "stage": "Review",
         "round": 1, "verdict": "changes", "comments": ["cite the numbers", "shorter"],
         "output_dir": "/runs/x/Review"},
        {"kind": "stage_started", "at": "2026-12-01T09:11:00Z", "stage": "Draft", "round": 2,
         "agent": "writer", "attempt": 1, "comments": ["cite the numbers", "shorter"]},
    ]
    pieces = [
        {"item_id": ITEM, "piece": "r1-a1-p1", "stage": "Draft", "seq": 1, "named": "alpha",
         "agent": "alpha", "pick_reason": "named by the caller", "task": "count notes",
         "ask_digest": "d", "status": "finished", "exit_code": 0, "workflow_id": "w1",
         "folder": "/f1"},
        {"item_id": ITEM, "piece": "r1-a1-p2", "stage": "Draft", "seq": 2, "named": "beta",
         "parent": "r1-a1-p1", "depth": 2, "task": "sum", "ask_digest": "e",
         "prompt_tokens": 120, "completion_tokens": 40, "status": "running",
         "workflow_id": "w2", "folder": "/f2"},
    ]
    models = [{"stage": "Draft", "model": "smol", "turns": 3, "tokens_in": 900,
               "tokens_out": 120, "seconds": 4.5, "cost": None}]
    approvals = [request(json.dumps({"to": "sam@x.org", "subject": "S", "body": "B"}),
                         action="mail.send", stage="Review")]
    page = item_page(details(history=history, pieces=pieces, models=models,
                             approvals=approvals,
                             logs=["/runs/x/.bees/logs/Draft-r1-a1.stdout"]),
                     here="maya-laptop")
    assert [(e.kind, e.text) for e in page.story] == [
        ("stage_finished", "Review round 1: finished, verdict changes, comments: cite the "
         "numbers | shorter; output /runs/x/Review"),
        ("stage_started", "Draft round 2: started writer (attempt 1), with review comments: "
         "cite the numbers | shorter")]
    [group] = page.pieces
    assert (group.stage, group.round) == ("Draft", 1)
    [top] = group.pieces
    assert (top.name, top.agent, top.why, top.status, top.usage) == (
        "r1-a1-p1", "alpha", "named by the caller", "finished", "exit 0")
    [child] = top.children
    assert (child.name, child.agent, child.why, child.usage) == (
        "r1-a1-p2", "beta", "not picked yet", "in 120 / out 40 tokens")
    assert [(m.model, m.tokens_in, m.tokens_out) for m in page.models] == [("smol", 900, 120)]
    assert [(log.index, log.name) for log in page.logs] == [(0, "Draft-r1-a1.stdout")]
    assert (page.status, page.detail, page.where) == (
        "waiting for approval", "mail.send", "maya-laptop")
    assert page.verbs == ("approve", "deny", "cancel", "relinquish")


def test_a_decision_queued_while_bees_run_is_down_is_said_as_the_cli_says_it() -> None:
    from bees_cli.record.states import WaitKind
    from bees_cli.record.views import ItemShow, QueuedDecision

    decision = {"decision": "denied", "request_id": None, "answer": None,
                "who": "maya@example.com", "at": "2026-12-01T10:03:00Z", "reason": "wrong to"}
    decided = request("{}", action="mail.send", status="denied", who="maya@example.com",
                      at="2026-12-01T10:03:00Z", reason="wrong to", delivered=False)
    shown = details(approvals=[decided])
    shown = shown.model_copy(update={"item": shown.item.model_copy(update={
        "queued_decisions": [QueuedDecision.model_validate(decision)],
        "wait": WaitKind.ENGINE_NOT_RUNNING})})
    page = item_page(shown, here="maya-laptop", now=NOW)
    said = 'denied by maya@example.com 2m ago ("wrong to"): delivered when bees run starts'
    assert (page.status, page.detail, page.held, page.verbs) == (
        "waiting for approval", said, [], ("cancel", "relinquish"))
    assert ItemShow.of(shown.to_json()).status_words(NOW) == said  # bees item show's line
    # under a minute the page says "just now", as every age of its live part
    soon = datetime(2026, 12, 1, 10, 3, 20, tzinfo=UTC)
    assert item_page(shown, here="maya-laptop", now=soon).detail == (
        'denied by maya@example.com just now ("wrong to"): delivered when bees run starts')
    assert ItemShow.of(shown.to_json()).status_words(soon) == (
        'denied by maya@example.com 20s ago ("wrong to"): delivered when bees run starts')


def test_the_detail_beside_a_status_word_does_not_repeat_it() -> None:
    from bees_cli.app.views import detail

    assert detail("failed", "failed: exit 1") == "exit 1"
    assert detail("free", "free, restarts at Send") == "restarts at Send"
    assert detail("done", "done") == ""
    assert detail("running", "Draft, running on maya-laptop") == "Draft, running on maya-laptop"


def test_the_list_says_a_queued_decision_as_bees_status_does_and_waits_no_more() -> None:
    from bees_cli.app.views import item_list
    from bees_cli.cli.status_view import status_cell
    from bees_cli.usecases.models import StatusView

    other = ITEM[:-1] + "W"
    decision = {"decision": "denied", "request_id": None, "answer": None,
                "who": "maya@example.com", "at": "2026-12-01T10:03:00Z", "reason": "x"}
    answered = {"id": ITEM, "status": "waiting for approval", "stage": "Send",
                "status_text": "waiting for approval: mail.send", "since": "2026-12-01T10:00:00Z",
                "wait": "engine_not_running", "queued_decisions": [decision]}
    # a decision on request 1 only: request 2 still waits for a person
    partly = {**answered, "id": other, "wait": None, "queued_decisions": [
        {**decision, "decision": "approved", "request_id": 1, "reason": None}]}
    view = StatusView(rows=[answered, partly], held={other: "finish Send"}, bees_run=False)
    said = 'denied by maya@example.com 2m ago ("x"): delivered when bees run starts'
    (row, still) = item_list(view, "all", here="maya-laptop", now=NOW).rows
    assert (row.status, row.detail) == ("waiting for approval", said)
    assert status_cell(answered, view.held, NOW).text == said  # bees status's cell
    assert (still.status, still.detail) == ("waiting for approval", "finish Send")
    assert [r.item_id for r in item_list(view, "waiting", here="maya-laptop",
                                         now=NOW).rows] == [other]
    # under a minute the live list says "just now", as every age of its live part
    soon = datetime(2026, 12, 1, 10, 3, 20, tzinfo=UTC)
    assert item_list(view, "all", here="maya-laptop", now=soon).rows[0].detail == (
        'denied by maya@example.com just now ("x"): delivered when bees run starts')
