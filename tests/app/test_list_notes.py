"""The item list's notes ("bees run is not running", the sync's warnings) are live like its
rows, and a list read looks at ``worker.json`` once (issue 17, the app trial's leftovers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bees_cli.app.views import BEES_RUN_DOWN
from bees_cli.machine.computer import Computer
from bees_cli.usecases import liveness
from bees_cli.usecases.liveness import forget_worker, note_worker
from tests.app.conftest import TestClient, version

SHOWN = f'<p class="warning" role="status">{BEES_RUN_DOWN}</p>'


def test_the_notes_poll_every_second_and_follow_bees_run(
        client: TestClient, computer: Computer) -> None:
    page = client.get("/items").text
    assert ('<div id="notes" hx-get="/items/notes" hx-trigger="every 1s" '
            'hx-swap="outerHTML"') in page
    assert page.count(SHOWN) == 1
    down = version(page.split('<div id="notes"')[1])
    assert client.get(f"/items/notes?v={down}").status_code == 204
    note_worker(computer.data_dir, "127.0.0.1:7233", "bees")  # bees run starts: this process
    started = client.get(f"/items/notes?v={down}")
    assert started.status_code == 200
    assert started.text.startswith('<div id="notes" hx-get="/items/notes"')
    assert "bees run is not running" not in started.text
    up = version(started.text)
    assert client.get(f"/items/notes?v={up}").status_code == 204
    forget_worker(computer.data_dir)  # bees run stops
    stopped = client.get(f"/items/notes?v={up}")
    assert stopped.status_code == 200
    assert stopped.text.count(SHOWN) == 1
    assert version(stopped.text) == down


def test_the_notes_need_the_session(anonymous: TestClient) -> None:
    assert anonymous.get("/items/notes").status_code == 403


@pytest.mark.parametrize("path", ["/items", "/items?show=mine", "/items/rows",
                                  "/items/notes"])
def test_a_list_request_reads_worker_json_once(
        client: TestClient, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    read: list[str] = []
    real = liveness.read_json

    def counted(file: Path, default: Any, **kwargs: Any) -> Any:
        read.append(file.name)
        return real(file, default, **kwargs)

    monkeypatch.setattr(liveness, "read_json", counted)
    assert client.get(path).status_code == 200
    assert read == ["worker.json"]


def test_an_unchanged_notes_poll_reads_nothing_but_the_versions(
        client: TestClient, computer: Computer, monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 29, point 1: the notes' poll, every second too, answers "unchanged" from the
    # record's version and worker.json's, before bees status is asked
    page = client.get("/items").text
    seen = version(page.split('<div id="notes"')[1])
    bees = client.app.state.bees_app.bees  # type: ignore[attr-defined]
    asked: list[dict[str, Any]] = []
    real = bees.status

    async def counted(**kwargs: Any) -> Any:
        asked.append(kwargs)
        return await real(**kwargs)

    monkeypatch.setattr(bees, "status", counted)
    unchanged = client.get(f"/items/notes?v={seen}")
    assert (unchanged.status_code, unchanged.content, asked) == (204, b"", [])
    note_worker(computer.data_dir, "127.0.0.1:7233", "bees")  # bees run starts
    started = client.get(f"/items/notes?v={seen}")
    assert (started.status_code, len(asked)) == (200, 1)
    assert "bees run is not running" not in started.text
