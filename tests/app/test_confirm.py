"""Cancel and relinquish lose work: their button leads to a confirmation page, and only
the confirming POST (``confirm=<verb>`` with the csrf) calls the use case."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bees_cli.app.actions import CONFIRMED
from bees_cli.app.security import Guard
from bees_cli.app.views import Verb
from bees_cli.machine.computer import Computer
from bees_cli.record.local import LocalRecord
from bees_cli.record.states import Status
from bees_cli.usecases.models import CancelDone
from tests.app.conftest import TestClient, buttons
from tests.app.test_actions import ITEM, RELINQUISHED, canned, note_of

RESULTS: dict[str, Any] = {"cancel": CancelDone(item=ITEM, requested=True, cancelled=True),
                           "relinquish": RELINQUISHED}


@pytest.fixture
def running(computer: Computer, tmp_path: Path) -> LocalRecord:
    """This computer's record with item ITEM running its Draft."""
    record = LocalRecord(computer.record_path)
    record.add_item(id=ITEM, process="weekly-report", title="Week 1",
                    workspace=str(tmp_path / "ws"), run_folder=str(tmp_path / "run"),
                    input="", stage="Draft")
    record.set_state(ITEM, status=Status.RUNNING, stage="Draft", agent="writer")
    return record


@pytest.mark.parametrize("verb", ["cancel", "relinquish"])
def test_the_button_leads_to_a_confirmation_and_only_its_post_acts(
        client: TestClient, guard: Guard, computer: Computer, running: LocalRecord,
        monkeypatch: pytest.MonkeyPatch, verb: Verb) -> None:
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    canned(monkeypatch, verb, RESULTS[verb], calls)
    item_page = client.get(f"/items/{ITEM}").text
    assert buttons(item_page) == ["relinquish", "cancel"]
    pressed = client.post(f"/items/{ITEM}/{verb}", data={"csrf": guard.csrf})
    assert (pressed.status_code, pressed.headers["location"]) == (303, f"/items/{ITEM}/{verb}")
    assert calls == []
    asked = client.get(pressed.headers["location"])
    assert asked.status_code == 200
    section = re.search(r'<section data-testid="confirm" data-verb="(\w+)".*?</section>',
                        asked.text, re.S)
    assert section is not None, asked.text
    assert section.group(1) == verb
    assert f"Week 1 is running at Draft on {computer.computer}</h2>" in section.group(0)
    assert f'<p data-testid="confirm-words">{CONFIRMED[verb]}</p>' in section.group(0)
    form = re.search(r'<form method="post" action="([^"]+)">(.*?)</form>', section.group(0),
                     re.S)
    assert form is not None
    assert form.group(1) == f"/items/{ITEM}/{verb}"
    assert dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">',
                           form.group(2))) == {"csrf": guard.csrf, "confirm": verb}
    assert re.findall(r'data-testid="(\w+)"', form.group(2)) == ["confirm"]
    assert f'<a id="keep" data-testid="keep" href="/items/{ITEM}">' in section.group(0)
    assert calls == []  # showing the confirmation changed nothing
    done = client.post(f"/items/{ITEM}/{verb}", data={"csrf": guard.csrf, "confirm": verb})
    assert calls == [(verb, (ITEM,), {})]
    assert note_of(client, done).startswith(f"done|{verb}: ")


@pytest.mark.parametrize("verb", ["cancel", "relinquish"])
def test_a_confirmation_without_csrf_or_for_another_verb_does_nothing(
        client: TestClient, guard: Guard, running: LocalRecord,
        monkeypatch: pytest.MonkeyPatch, verb: str) -> None:
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    canned(monkeypatch, verb, RESULTS[verb], calls)
    assert client.post(f"/items/{ITEM}/{verb}", data={"confirm": verb}).status_code == 403
    other = "relinquish" if verb == "cancel" else "cancel"
    moved = client.post(f"/items/{ITEM}/{verb}", data={"csrf": guard.csrf, "confirm": other})
    assert (moved.status_code, moved.headers["location"]) == (303, f"/items/{ITEM}/{verb}")
    assert calls == []
    assert running.item(ITEM).status == Status.RUNNING


def test_cancel_is_asked_before_the_real_use_case_cancels(
        client: TestClient, guard: Guard, running: LocalRecord) -> None:
    running.set_state(ITEM, status=Status.PENDING, stage="Draft")  # cancelled in the record
    client.post(f"/items/{ITEM}/cancel", data={"csrf": guard.csrf})
    assert running.item(ITEM).status == Status.PENDING
    done = client.post(f"/items/{ITEM}/cancel", data={"csrf": guard.csrf, "confirm": "cancel"})
    assert note_of(client, done) == "done|cancel: cancelled"
    assert running.item(ITEM).status == Status.CANCELLED


def test_only_cancel_and_relinquish_have_a_confirmation_page(
        client: TestClient, running: LocalRecord) -> None:
    assert sorted(CONFIRMED) == ["cancel", "relinquish"]
    assert client.get(f"/items/{ITEM}/approve").status_code == 405
    assert client.get(f"/items/{ITEM}/explode").status_code == 404
    unknown = client.get("/items/01JH3QX5Z8KZ2W4M6N8P0R2T4W/cancel")
    assert unknown.status_code == 404
    assert 'role="alert"' in unknown.text


def test_the_confirmation_page_needs_the_session(anonymous: TestClient) -> None:
    assert anonymous.get(f"/items/{ITEM}/cancel").status_code == 403
