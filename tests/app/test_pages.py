"""The app's pages rendered from the use cases' results (APP_CONTRACT.md, Pages and
selectors): the item list and its live rows, an item page with its story and held action,
a team item run elsewhere, schedules and doctor."""

from __future__ import annotations

import json
import re
from html import unescape as html_unescape
from pathlib import Path
from typing import Any

import pytest

from bees_cli.app.security import Guard
from bees_cli.app.server import create_app
from bees_cli.machine.computer import Computer
from bees_cli.record.local import LocalRecord
from bees_cli.record.states import Status, WaitKind
from bees_cli.usecases import Bees
from bees_cli.utc import display_utc, parse_utc
from tests.app.conftest import ORIGIN, TestClient, buttons, version
from tests.conftest import EXAMPLE

ITEM = "01JH3QX5Z8KZ2W4M6N8P0R2T4V"
OTHER = "01JH3QX5Z8KZ2W4M6N8P0R2T4W"
MAIL = {"to": "sam@example.com", "subject": "Weekly report", "body": "Hi Sam,\n\nAll <green>."}


def add(record: LocalRecord, item_id: str, tmp_path: Path, *, status: Status,
        stage: str = "Draft", reason: str | None = None, agent: str | None = None) -> None:
    record.add_item(id=item_id, process="weekly-report", title=f"Week {item_id[-1]}",
                    workspace=str(tmp_path / "ws"), run_folder=str(tmp_path / item_id),
                    input="", stage=stage)
    record.set_state(item_id, status=status, stage=stage, reason=reason, agent=agent)


def cells(html: str, item_id: str) -> dict[str, str]:
    row = re.search(rf'<tr data-item-id="{item_id}".*?</tr>', html, re.S)
    assert row is not None, html
    return dict(re.findall(r'<td data-field="(\w+)">(.*?)</td>', row.group(0), re.S))


def test_the_list_has_one_row_per_item_with_the_contract_cells(
        client: TestClient, computer: Computer, tmp_path: Path) -> None:
    record = LocalRecord(computer.record_path)
    add(record, ITEM, tmp_path, status=Status.RUNNING, agent="writer")
    add(record, OTHER, tmp_path, status=Status.FAILED, reason="exit 1")
    html = client.get("/items").text
    since = f"{display_utc(parse_utc(record.item(ITEM).since))} (just now)"
    assert cells(html, ITEM) == {"process": "weekly-report", "stage": "Draft",
                                 "status": "running", "agent": "writer",
                                 "where": computer.computer, "since": since}
    assert cells(html, OTHER)["status"] == "failed"
    assert f'<a id="open-{ITEM}" href="/items/{ITEM}">Week V</a>' in html
    assert "exit 1" in html


def test_the_filters_keep_their_rows(client: TestClient, computer: Computer,
                                     tmp_path: Path) -> None:
    record = LocalRecord(computer.record_path)
    add(record, ITEM, tmp_path, status=Status.WAITING_FOR_APPROVAL, reason="mail.send")
    add(record, OTHER, tmp_path, status=Status.FAILED, reason="exit 1")
    ids = {show: re.findall(r'data-item-id="(\w+)"', client.get(f"/items?show={show}").text)
           for show in ("all", "mine", "waiting", "failed")}
    assert ids == {"all": [ITEM, OTHER], "mine": [ITEM, OTHER], "waiting": [ITEM],
                   "failed": [OTHER]}
    assert client.get("/items?show=nope").status_code == 400


def test_the_rows_poll_every_second_and_answer_204_while_unchanged(
        client: TestClient, computer: Computer, tmp_path: Path) -> None:
    record = LocalRecord(computer.record_path)
    add(record, ITEM, tmp_path, status=Status.RUNNING, agent="writer")
    page = client.get("/items?show=all").text
    assert ('<tbody id="rows" hx-get="/items/rows?show=all&amp;n=50" hx-trigger="every 1s" '
            'hx-swap="outerHTML"') in page
    seen = version(page.split('<tbody id="rows"')[1])  # the rows' (the notes' comes first)
    assert client.get(f"/items/rows?show=all&v={seen}").status_code == 204
    record.set_state(ITEM, status=Status.WAITING_FOR_APPROVAL, stage="Send",
                     reason="mail.send")
    news = client.get(f"/items/rows?show=all&v={seen}")
    assert news.status_code == 200
    assert news.text.startswith('<tbody id="rows"')
    assert cells(news.text, ITEM)["stage"] == "Send"
    assert version(news.text) != seen


def test_the_item_page_shows_status_stage_where_story_and_the_held_mail(
        client: TestClient, computer: Computer, tmp_path: Path) -> None:
    record = LocalRecord(computer.record_path)
    add(record, ITEM, tmp_path, status=Status.WAITING_FOR_APPROVAL, stage="Send",
        reason="mail.send", agent="sender")
    record._add_event(ITEM, key="p1", kind="pick", stage="Send", round=1,
                     data={"pick": {"agent": "sender", "reason": "first eligible"}})
    record._add_event(ITEM, key="a1", kind="approval_asked", stage="Send", round=1,
                     data={"request": 1, "action": "mail.send", "summary": "to sam"})
    record.put_approval(ITEM, {"id": 1, "item_id": ITEM, "stage": "Send", "round": 1,
                               "action": "mail.send", "kind": "send", "summary": "to sam",
                               "input": json.dumps(MAIL), "status": "waiting",
                               "asked_at": "2026-12-01T10:00:00.000000Z"})
    html = client.get(f"/items/{ITEM}").text
    assert '<span data-testid="item-status" class="status-waiting-for-approval">waiting for ' \
           'approval</span>' in html
    assert '<dd data-testid="item-stage">Send</dd>' in html
    assert f'<dd data-testid="item-where">{computer.computer}</dd>' in html
    assert re.findall(r'<li data-event="(\w+)"', html) == ["created", "pick",
                                                                 "approval_asked"]
    assert "Send round 1: picked sender: first eligible" in html
    assert '<dd data-field="to" class="recipient">sam@example.com</dd>' in html
    assert '<dd data-field="subject">Weekly report</dd>' in html
    assert '<pre data-field="body">Hi Sam,\n\nAll &lt;green&gt;.</pre>' in html
    assert buttons(html) == ["edit", "approve", "deny", "relinquish", "cancel"]
    assert html.count('<input type="hidden" name="csrf"') == 5
    assert '<textarea id="deny-reason" name="reason"' in html
    # the held action's card: Edit and approve, with the agent's input as JSON to correct
    edit = re.search(r'<form method="post" action="/items/(\w+)/approve" '
                     r'data-testid="edit-form">(.*?)</form>', html, re.S)
    assert edit is not None and edit.group(1) == ITEM
    assert '<input type="hidden" name="request" value="1">' in edit.group(2)
    assert '<input type="hidden" name="csrf"' in edit.group(2)
    text = re.search(r'<textarea id="edit-input-1" name="input"[^>]*>(.*?)</textarea>',
                     edit.group(2), re.S)
    assert text is not None and json.loads(html_unescape(text.group(1))) == MAIL
    assert '>Edit and approve</button>' in edit.group(2)
    assert 'data-testid="runs-elsewhere"' not in html


def test_a_decision_queued_while_bees_run_is_down_is_not_offered_again(
        client: TestClient, computer: Computer, bees: Bees, tmp_path: Path) -> None:
    import asyncio

    record = LocalRecord(computer.record_path)
    add(record, ITEM, tmp_path, status=Status.WAITING_FOR_APPROVAL, stage="Send",
        reason="mail.send", agent="sender")
    record.put_approval(ITEM, {"id": 1, "item_id": ITEM, "stage": "Send", "round": 1,
                               "action": "mail.send", "kind": "send", "summary": "to sam",
                               "input": json.dumps(MAIL), "status": "waiting",
                               "asked_at": "2026-12-01T10:00:00.000000Z"})
    assert [a.item_id for a in asyncio.run(bees.approvals())] == [ITEM]
    # answered in the shell while bees run is down: queued for bees run to deliver
    done = asyncio.run(bees.decide(ITEM, approve=True))
    assert (done.queued, done.decided) == (True, None)
    html = client.get(f"/items/{ITEM}").text
    assert buttons(html) == ["relinquish", "cancel"]
    assert 'data-testid="approval"' not in html
    # said as bees status and bees item show say it (issue 23, point 2)
    assert ('<span data-testid="item-status-detail" class="detail"> — approved by '
            f"{done.who} just now: delivered when bees run starts</span>") in html
    assert asyncio.run(bees.approvals()) == []
    # the list says it too, and the item waits for nobody here (issue 23, point 2)
    listed = client.get("/items").text
    assert (f'<small class="detail" data-field="detail">approved by {done.who} just now: '
            "delivered when bees run starts</small>") in listed
    assert cells(listed, ITEM)["status"] == "waiting for approval"
    assert f'data-item-id="{ITEM}"' not in client.get("/items?show=waiting").text


def test_the_item_page_part_polls_and_answers_204_while_unchanged(
        client: TestClient, computer: Computer, tmp_path: Path) -> None:
    record = LocalRecord(computer.record_path)
    add(record, ITEM, tmp_path, status=Status.RUNNING, agent="writer")
    page = client.get(f"/items/{ITEM}").text
    assert f'<div id="live" hx-get="/items/{ITEM}/live" hx-trigger="every 1s"' in page
    seen = version(page)
    assert client.get(f"/items/{ITEM}/live?v={seen}").status_code == 204
    record.set_state(ITEM, status=Status.DONE, stage="done")
    news = client.get(f"/items/{ITEM}/live?v={seen}").text
    assert '<span data-testid="item-status" class="status-done">done</span>' in news
    assert 'data-testid="actions"' not in news


def test_buttons_follow_the_status(client: TestClient, computer: Computer,
                                  tmp_path: Path) -> None:
    record = LocalRecord(computer.record_path)
    add(record, ITEM, tmp_path, status=Status.FAILED, reason="exit 1")
    html = client.get(f"/items/{ITEM}").text
    assert re.findall(r'data-testid="(\w+)">', html.split('data-testid="actions"')[1]) == [
        "retry", "relinquish", "cancel"]
    record.set_state(ITEM, status=Status.FREE, reason="restarts at Draft")
    html = client.get(f"/items/{ITEM}").text
    assert buttons(html) == ["continue"]
    assert '<dd data-testid="item-where">-</dd>' in html


def test_an_unknown_item_is_404_in_words(client: TestClient) -> None:
    answer = client.get(f"/items/{ITEM}")
    assert answer.status_code == 404
    assert 'role="alert"' in answer.text
    assert client.get("/items/not-an-id!").status_code == 404


def test_doctor_and_schedules_say_what_the_commands_say(client: TestClient,
                                                         tmp_path: Path) -> None:
    doctor = client.get("/doctor")
    assert doctor.status_code == 200
    assert '<section data-testid="doctor" data-ok="false">' in doctor.text
    assert '<li data-check="workspace" class="bad">' in doctor.text
    schedules = client.get("/schedules")
    assert schedules.status_code == 400  # no workspace at -w: the command's words
    assert f"<p>{tmp_path / 'ws'}: no such folder</p>" in schedules.text
    assert "hint: check the path, or create a workspace with `bees init DIR`" in (
        schedules.text)


def test_a_log_is_shown_as_text_by_its_index_never_by_a_path(
        client: TestClient, computer: Computer, tmp_path: Path) -> None:
    record = LocalRecord(computer.record_path)
    add(record, ITEM, tmp_path, status=Status.RUNNING, agent="writer")
    logs = tmp_path / ITEM / "logs"
    logs.mkdir(parents=True)
    (logs / "Draft-r1-a1.stdout").write_text("wrote report.md\n")
    page = client.get(f"/items/{ITEM}").text
    assert f'<a id="log-0" href="/items/{ITEM}/logs/0">Draft-r1-a1.stdout</a>' in page
    shown = client.get(f"/items/{ITEM}/logs/0")
    assert (shown.status_code, shown.text) == (200, "wrote report.md\n")
    assert shown.headers["content-type"] == "text/plain; charset=utf-8"
    assert client.get(f"/items/{ITEM}/logs/1").status_code == 404
    assert client.get(f"/items/{ITEM}/logs/..%2F..%2Fetc").status_code == 404


def test_an_action_that_may_have_run_asks_ran_or_again(
        client: TestClient, computer: Computer, tmp_path: Path) -> None:
    record = LocalRecord(computer.record_path)
    add(record, ITEM, tmp_path, status=Status.WAITING_FOR_APPROVAL, stage="Send",
        reason="mail.send")
    record.put_approval(ITEM, {"id": 1, "item_id": ITEM, "stage": "Send", "round": 1,
                               "action": "mail.send", "kind": "send", "summary": "to sam",
                               "input": json.dumps(MAIL), "status": "waiting",
                               "asked_at": "2026-12-01T10:00:00.000000Z",
                               "interrupted_at": "2026-12-01T10:01:00.000000Z"})
    html = client.get(f"/items/{ITEM}").text
    radios = r'<input type="radio" id="answer-\w+" name="answer" value="(\w+)"'
    assert re.findall(radios, html) == ["ran", "again"]
    assert 'data-testid="edit-form"' not in html  # it may have run: nothing to correct


def test_schedules_list_each_schedule_of_the_workspace(bees: Bees, guard: Guard) -> None:
    app = create_app(bees, guard, workspace=EXAMPLE)
    with TestClient(app, base_url=ORIGIN, follow_redirects=False) as web:
        web.get(f"/?secret={guard.secret}")
        html = web.get("/schedules").text
    row = re.search(r'<tr data-schedule="monday-report">.*?</tr>', html, re.S)
    assert row is not None, html
    cells = dict(re.findall(r'<t[dh][^>]* data-field="(\w+)">(.*?)</t[dh]>', row.group(0),
                            re.S))
    assert cells["process"] == "weekly-report"
    assert cells["last"] == "-" and cells["outcome"] == "-"
    assert cells["fires_here"].startswith("no")


def test_the_list_says_when_bees_run_is_not_running(
        client: TestClient, computer: Computer) -> None:
    from bees_cli.app.views import BEES_RUN_DOWN
    from bees_cli.usecases.liveness import note_worker

    shown = f'<p class="warning" role="status">{BEES_RUN_DOWN}</p>'
    assert client.get("/items").text.count(shown) == 1
    note_worker(computer.data_dir, "127.0.0.1:7233", "bees")  # this process: alive
    assert "bees run is not running" not in client.get("/items").text


def test_a_model_call_that_waits_shows_why_in_the_list_and_on_the_item_page(
        client: TestClient, computer: Computer, tmp_path: Path) -> None:
    # issue 23, point 7: as the model call's activity writes it (tests/engine/test_model_waits)
    record = LocalRecord(computer.record_path)
    add(record, ITEM, tmp_path, status=Status.RUNNING, agent="writer")
    record.set_state(ITEM, status=Status.WAITING, stage="Draft", agent="writer",
                     reason="rate limited by 127.0.0.1:8080 until 14:05", wait=WaitKind.MODEL,
                     model_retry={"why": "rate_limited", "server": "127.0.0.1:8080",
                                  "try_number": 2, "tries": 5, "until": "2026-12-01T14:05:00Z",
                                  "error": "HTTP 429"})
    html = client.get("/items").text
    assert cells(html, ITEM)["status"] == "waiting"
    assert ('<small class="detail" data-field="detail">rate limited by 127.0.0.1:8080 until '
            '14:05</small>') in html
    page = client.get(f"/items/{ITEM}").text
    assert ('<span data-testid="item-status-detail" class="detail"> — rate limited by '
            '127.0.0.1:8080 until 14:05</span>') in page
    record.set_state(ITEM, status=Status.RUNNING, stage="Draft", agent="writer",
                     reason="retrying model call, try 2 of 5")
    page = client.get(f"/items/{ITEM}").text
    assert '<span data-testid="item-status" class="status-running">running</span>' in page
    assert ('<span data-testid="item-status-detail" class="detail"> — retrying model call, '
            'try 2 of 5</span>') in page
    assert buttons(page) == ["relinquish", "cancel"]


def test_an_unchanged_poll_answers_from_the_version_and_reads_no_row(
        client: TestClient, computer: Computer, bees: Bees, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 29, point 1: "unchanged" is answered from the record's version, before any row
    # is read or rendered
    record = LocalRecord(computer.record_path)
    add(record, ITEM, tmp_path, status=Status.RUNNING, agent="writer")
    page = client.get("/items?show=all").text
    seen = version(page.split('<tbody id="rows"')[1])
    reads: list[dict[str, object]] = []
    real = bees.status

    async def counted(**kwargs: Any) -> Any:
        reads.append(kwargs)
        return await real(**kwargs)

    monkeypatch.setattr(bees, "status", counted)
    unchanged = client.get(f"/items/rows?show=all&v={seen}")
    assert (unchanged.status_code, unchanged.content, reads) == (204, b"", [])
    record.set_state(ITEM, status=Status.WAITING_FOR_APPROVAL, stage="Send",
                     reason="mail.send")
    news = client.get(f"/items/rows?show=all&v={seen}")
    assert (news.status_code, len(reads)) == (200, 1)
    assert cells(news.text, ITEM)["stage"] == "Send"
    again = client.get(f"/items/rows?show=all&v={version(news.text)}")
    assert (again.status_code, len(reads)) == (204, 1)


def _many(record: LocalRecord, tmp_path: Path, count: int, status: Status) -> list[str]:
    from ulid import ULID

    made = [str(ULID()) for _ in range(count)]
    for item_id in made:
        add(record, item_id, tmp_path, status=status)
    return made


def test_the_list_shows_50_rows_and_50_more_on_asking(
        client: TestClient, computer: Computer, tmp_path: Path) -> None:
    record = LocalRecord(computer.record_path)
    failed = _many(record, tmp_path, 1, Status.FAILED)
    running = _many(record, tmp_path, 59, Status.RUNNING)
    first = client.get("/items").text
    assert len(re.findall(r'<tr data-item-id="', first)) == 50
    assert ('<p class="more"><a id="more" data-testid="more" href="/items?show=all&amp;n=100">'
            'Show 50 more</a></p>') in first
    assert 'hx-get="/items/rows?show=all&amp;n=50"' in first
    both = client.get("/items?show=all&n=100").text
    assert set(re.findall(r'<tr data-item-id="(\w+)"', both)) == {*failed, *running}
    assert 'id="more"' not in both
    # a filter is applied before the page is cut: the failed item is the oldest of 60
    only = client.get("/items?show=failed").text
    assert re.findall(r'<tr data-item-id="(\w+)"', only) == failed
    assert client.get("/items?n=0").status_code == 400
