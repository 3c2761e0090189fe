"""``bees run --exit-when-idle`` waits for the runs of ended items to close in the engine."""

from __future__ import annotations

from pathlib import Path

from bees_cli.record.local import LocalRecord
from bees_cli.record.states import Status, WaitKind
from bees_cli.usecases.run import closing_runs, is_idle

IDS = ["01JH3QX5Z8KZ2W4M6N8P0R2T4" + c for c in "ABCDE"]


def test_an_ended_item_whose_run_is_still_open_is_closing(tmp_path: Path) -> None:
    record = LocalRecord(tmp_path / "record.db")
    statuses = [Status.DONE, Status.CANCELLED, Status.FREE, Status.WAITING_FOR_APPROVAL,
                Status.DONE]
    for item_id, status in zip(IDS, statuses, strict=True):
        record.add_item(id=item_id, process="p", title="t", workspace="/ws",
                        run_folder=str(tmp_path / item_id), input="{}", stage="Draft")
        record.set_state(item_id, status=status)
    assert is_idle(record)
    # the last done item's run has closed; the approval's run is open and stays so
    assert closing_runs(record, set(IDS[:4])) == IDS[:3]
    assert closing_runs(record, {IDS[3]}) == []


def test_an_item_whose_model_call_waits_for_its_next_try_is_not_idle(tmp_path: Path) -> None:
    # issue 23, point 7: a Retry-After of an hour keeps `bees run --exit-when-idle` up
    record = LocalRecord(tmp_path / "record.db")
    record.add_item(id=IDS[0], process="p", title="t", workspace="/ws",
                    run_folder=str(tmp_path / IDS[0]), input="{}", stage="Draft")
    record.set_state(IDS[0], status=Status.WAITING, reason="rate limited by x until 14:05",
                     wait=WaitKind.MODEL)
    assert not is_idle(record)
    record.set_state(IDS[0], status=Status.DONE)
    assert is_idle(record)
