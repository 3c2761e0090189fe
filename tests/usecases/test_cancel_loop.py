"""``bees item cancel`` never reads or writes the local record on the event loop (issue 24, 5).

The record is SQLite: a call waits for the write lock up to its busy timeout (5 s), and made
on the loop it holds up everything else the loop runs (the app's other requests, the worker).
A spy on every public method of :class:`LocalRecord` notes the calls made while an event loop
runs in the calling thread.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bees_cli.machine.computer import Computer
from bees_cli.record.local import LocalRecord
from bees_cli.record.states import Status
from bees_cli.usecases import Bees

ITEM = "01JH2Q0000000000000000CANC"


def _on_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@pytest.fixture
def on_loop(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the record's methods called on the loop's thread, in order."""
    calls: list[str] = []
    for name in dir(LocalRecord):
        method = getattr(LocalRecord, name)
        if name.startswith("_") or not callable(method) or name in ("step", "close"):
            continue

        def spy(self: LocalRecord, *args: Any, _method: Any = method, _name: str = name,
                **kwargs: Any) -> Any:
            if _on_loop():
                calls.append(_name)
            return _method(self, *args, **kwargs)

        monkeypatch.setattr(LocalRecord, name, spy)
    return calls


class StandInEngine:
    """The engine gateway's ``cancel``: the run ends and writes ``cancelled``, as the
    workflow's activity does (from the worker's thread)."""

    def __init__(self, record: LocalRecord) -> None:
        self.record = record
        self.cancelled: list[str] = []

    async def cancel(self, item_id: str) -> None:
        self.cancelled.append(item_id)
        await asyncio.to_thread(self.record.set_state, item_id, status=Status.CANCELLED)


def _bees(bees_home: Path, status: Status) -> Bees:
    computer = Computer.load(bees_home)
    record = LocalRecord(computer.record_path)
    record.add_item(id=ITEM, process="report", title="Week 2", workspace="/ws",
                    run_folder="/runs/X", input="{}", stage="Draft")
    record.set_state(ITEM, status=status, stage="Draft")
    bees = Bees(computer)
    bees.use_engine(StandInEngine(bees.record))  # type: ignore[arg-type]
    return bees


def test_cancelling_a_pending_item_stays_off_the_loop(bees_home: Path,
                                                      on_loop: list[str]) -> None:
    bees = _bees(bees_home, Status.PENDING)
    done = asyncio.run(bees.cancel(ITEM))
    assert (done.item, done.requested, done.cancelled) == (ITEM, False, True)
    assert bees.record.item(ITEM).status == Status.CANCELLED
    assert on_loop == []


def test_cancelling_a_running_item_stays_off_the_loop(bees_home: Path,
                                                      on_loop: list[str]) -> None:
    bees = _bees(bees_home, Status.RUNNING)
    done = asyncio.run(bees.cancel(ITEM))
    assert (done.item, done.requested, done.cancelled) == (ITEM, True, True)
    assert [e.kind for e in bees.record.events(ITEM)] == ["created", "cancel_asked"]
    assert on_loop == []
