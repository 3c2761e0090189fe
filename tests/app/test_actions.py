"""The app's actions (issue 17, point 3): each POST calls the same :class:`Bees` use case as
its CLI command, answers 303 to the item page, and a refusal is shown in the use case's words
(with its hint, and a failed checkpoint's files)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from bees_cli.app.security import Guard
from bees_cli.errors import Refused
from bees_cli.handover.continue_ import Continued
from bees_cli.handover.problems import CheckpointInvalid, Problem, ProblemCode
from bees_cli.handover.relinquish import Relinquished
from bees_cli.machine.computer import Computer
from bees_cli.record.local import LocalRecord
from bees_cli.record.states import Status
from bees_cli.usecases import Bees
from bees_cli.usecases.models import CancelDone, DecideDone, PersonDone, TeamItemDetails
from tests.app.conftest import buttons

ITEM = "01JH3QX5Z8KZ2W4M6N8P0R2T4V"
AT = "2026-12-01T10:00:00.000000Z"
CONTINUED = Continued(item=ITEM, run_folder="/runs/x", stage="Draft",
                      checkpoint_sha256="ab" * 32, journal=0, run=2, started=True)
RELINQUISHED = Relinquished(item=ITEM, stage="Draft", restart_stages={"main": "Draft"},
                            checkpoint="/runs/x/checkpoint.json", checkpoint_sha256="cd" * 32,
                            files=3, total_bytes=30, released=False)

# verb -> (Bees method, its canned result, the note the page shows)
CASES: dict[str, tuple[str, Any, str]] = {
    "approve": ("decide", DecideDone(item=ITEM, who="maya", at=AT, decided=[1], queued=False),
                "approve: request 1 approved by maya"),
    "deny": ("decide", DecideDone(item=ITEM, who="maya", at=AT, decided=[1], queued=False),
             "deny: request 1 denied by maya"),
    "retry": ("retry", PersonDone(item=ITEM, stage="Draft", who="maya", at=AT),
              "retry: Draft starts again (asked by maya)"),
    "accept": ("accept", PersonDone(item=ITEM, stage="Review", who="maya", at=AT),
               "accept: the work under review at Review is accepted (by maya)"),
    "cancel": ("cancel", CancelDone(item=ITEM, requested=True, cancelled=True),
               "cancel: cancel requested; cancelled"),
    "relinquish": ("relinquish", RELINQUISHED,
                   "relinquish: relinquished at Draft; free, restarts at Draft (no Bees "
                   f"Cloud: digest kept here); checkpoint {'cd' * 32}"),
    "continue": ("continue_item", CONTINUED,
                 "continue: claimed here; Draft restarts from the top (started); run folder "
                 "/runs/x"),
}


def canned(monkeypatch: pytest.MonkeyPatch, method: str, result: Any,
           calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> None:
    """Make ``Bees.<method>`` record its call and answer ``result`` (or raise it)."""

    async def answer(self: Bees, *args: Any, **kwargs: Any) -> Any:
        calls.append((method, args, kwargs))
        if isinstance(result, BaseException):
            raise result
        return result

    monkeypatch.setattr(Bees, method, answer)


def note_of(client: TestClient, answer: Any) -> str:
    assert answer.status_code == 303
    location = answer.headers["location"]
    assert re.fullmatch(rf"/items/{ITEM}\?note=[\w-]+", location), location
    page = client.get(location)
    found = re.search(r'<div role="(?:status|alert)" data-testid="(\w+)".*?<p>(.*?)</p>',
                      page.text, re.S)
    assert found is not None, page.text
    return f"{found.group(1)}|{found.group(2)}"


@pytest.mark.parametrize("verb", list(CASES))
def test_each_verb_calls_its_use_case_and_says_what_it_did(
        client: TestClient, guard: Guard, monkeypatch: pytest.MonkeyPatch, verb: str,
        tmp_path: Path) -> None:
    method, result, said = CASES[verb]
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    canned(monkeypatch, method, result, calls)
    form = {"csrf": guard.csrf, "reason": "wrong recipients", "confirm": verb}
    answer = client.post(f"/items/{ITEM}/{verb}", data=form)
    assert calls[0][:2] == (method, (ITEM,))
    assert len(calls) == 1
    kwargs = calls[0][2]
    if verb in ("approve", "deny"):
        assert kwargs == {"approve": verb == "approve", "request_id": None,
                          "reason": "wrong recipients" if verb == "deny" else None,
                          "answer": None, "input_text": None}
    elif verb == "continue":
        assert kwargs == {"workspace_path": tmp_path / "ws"}
    else:
        assert kwargs == {}
    assert note_of(client, answer) == f"done|{said}"


def test_a_denial_without_a_reason_is_refused_before_any_use_case(
        client: TestClient, guard: Guard, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    canned(monkeypatch, "decide", None, calls)
    answer = client.post(f"/items/{ITEM}/deny", data={"csrf": guard.csrf, "reason": "  "})
    assert note_of(client, answer) == (
        "refusal|deny refused: a denial needs a reason: the agent is told")
    assert calls == []


def test_a_refusal_shows_the_use_case_words_and_hint(
        client: TestClient, guard: Guard, computer: Computer, tmp_path: Path) -> None:
    record = LocalRecord(computer.record_path)
    record.add_item(id=ITEM, process="weekly-report", title="Week 1",
                    workspace=str(tmp_path / "ws"), run_folder=str(tmp_path / "run"),
                    input="", stage="Draft")
    record.set_state(ITEM, status=Status.FREE, stage="Draft", reason="restarts at Draft")
    answer = client.post(f"/items/{ITEM}/retry", data={"csrf": guard.csrf})
    page = client.get(answer.headers["location"]).text
    alert = re.search(r'<div role="alert" data-testid="refusal".*?</div>', page, re.S)
    assert alert is not None
    try:  # the very refusal bees retry prints
        import asyncio

        asyncio.run(Bees(computer).retry(ITEM))
    except Refused as refused:
        assert f"<p>retry refused: {refused.message}</p>" in alert.group(0)
        assert refused.message.startswith(f"item {ITEM} is not running here")
        assert ("hint:" in alert.group(0)) is (refused.hint is not None)
    else:
        pytest.fail("bees retry of a free item was not refused")


def test_a_failed_checkpoint_lists_each_file(
        client: TestClient, guard: Guard, monkeypatch: pytest.MonkeyPatch) -> None:
    invalid = CheckpointInvalid([
        Problem(ProblemCode.CONTENT_CHANGED, "report.md", "its content changed"),
        Problem(ProblemCode.FILE_MISSING, "data/a.csv", "listed but missing")])
    canned(monkeypatch, "continue_item", invalid, [])
    answer = client.post(f"/items/{ITEM}/continue", data={"csrf": guard.csrf})
    assert note_of(client, answer) == "refusal|continue refused: checkpoint invalid: 2 problems"
    page = client.get(answer.headers["location"]).text
    verification = re.search(r'<ul data-testid="verification">(.*?)</ul>', page, re.S)
    assert verification is not None
    assert re.findall(r"<code>(.*?)</code>", verification.group(1)) == [
        "report.md: its content changed", "data/a.csv: listed but missing"]


def test_an_unknown_verb_is_404(client: TestClient, guard: Guard) -> None:
    assert client.post(f"/items/{ITEM}/explode", data={"csrf": guard.csrf}).status_code == 404


def test_an_item_run_elsewhere_names_the_computer_and_offers_no_approval(
        client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    team = TeamItemDetails(id=ITEM, process="weekly-report", title="Week 1", stage="Send",
                           status="waiting for approval",
                           status_text="Send, waiting for approval on maya-desktop",
                           computer="maya-desktop", person="maya@example.com", agent="sender",
                           since="2026-12-01 10:00:00")
    canned(monkeypatch, "item_details", team, [])
    page = client.get(f"/items/{ITEM}").text
    assert '<dd data-testid="item-where">maya-desktop</dd>' in page
    assert re.search(r'<p data-testid="runs-elsewhere".*?<strong>maya-desktop</strong>', page)
    assert 'data-testid="approve"' not in page and 'data-testid="deny"' not in page
    assert 'data-testid="actions"' not in page
    free = team.model_copy(update={"status": "free"})
    canned(monkeypatch, "item_details", free, [])
    page = client.get(f"/items/{ITEM}").text
    assert buttons(page) == ["continue"]


def test_an_action_connects_to_the_engine_running_now_unless_one_was_given(
        computer: Computer, guard: Guard) -> None:
    from bees_cli.app.server import create_app

    app = create_app(Bees(computer), guard)
    state = app.state.bees_app
    first, second = state.acting(), state.acting()
    assert first is not state.bees and first is not second
    assert first.computer is computer and not first.has_engine

    class Given(Bees):
        @property
        def has_engine(self) -> bool:
            return True

    given = Given(computer)
    assert create_app(given, guard).state.bees_app.acting() is given


def test_edit_and_approve_sends_the_corrected_input_to_the_use_case(
        client: TestClient, guard: Guard, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    done = DecideDone(item=ITEM, who="maya", at=AT, decided=[1], queued=False,
                      input={"to": "board@example.com"})
    canned(monkeypatch, "decide", done, calls)
    form = {"csrf": guard.csrf, "request": "1", "input": '{\n  "to": "board@example.com"\n}'}
    answer = client.post(f"/items/{ITEM}/approve", data=form)
    assert calls == [("decide", (ITEM,), {
        "approve": True, "request_id": 1, "reason": None, "answer": None,
        "input_text": '{"to": "board@example.com"}'})]
    assert note_of(client, answer) == (
        "done|approve: request 1 approved by maya with your corrected input (the agent is "
        "told what changed)")


def test_edit_and_approve_refuses_text_that_is_not_json_before_any_use_case(
        client: TestClient, guard: Guard, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    canned(monkeypatch, "decide", None, calls)
    for text in ("@/etc/passwd", "{to: b}"):
        answer = client.post(f"/items/{ITEM}/approve",
                             data={"csrf": guard.csrf, "request": "1", "input": text})
        assert note_of(client, answer).startswith(
            "refusal|approve refused: the corrected input is not valid JSON: "), text
    assert calls == []
    # without the csrf nothing is decided either
    assert client.post(f"/items/{ITEM}/approve",
                       data={"request": "1", "input": "{}"}).status_code == 403
    assert calls == []
