"""An owner claim's answer is shown on the item only while the item is as it was when the
claim was asked: a claim answered after a person cancelled the item never makes it waiting or
pending again (``bees run`` would otherwise try it again forever, or start it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bees_cli.record.fires import ClaimStatus
from bees_cli.record.local import LocalRecord
from bees_cli.record.states import Status, WaitKind
from bees_cli.schedules.owners import UNREACHABLE_REASON, ClaimOutcome, show_claim

ITEM = "01JCLAIMSHOWN0000000000000"

UNREACHABLE = ClaimOutcome(ClaimStatus.UNREACHABLE)
OWNER = ClaimOutcome(ClaimStatus.OWNER, computer="maya-laptop", epoch=1)


def a_record(tmp_path: Path, status: Status) -> LocalRecord:
    record = LocalRecord(tmp_path / "record.db")
    record.add_item(id=ITEM, process="p", title="t", workspace="/ws", run_folder="/runs",
                    input="{}", stage="Draft")
    if status == Status.WAITING:
        show_claim(record, record.item(ITEM), UNREACHABLE)
    return record


def test_an_unanswered_claim_shows_the_pending_item_waiting_for_it(tmp_path: Path) -> None:
    record = a_record(tmp_path, Status.PENDING)
    fresh = record.item(ITEM)
    assert (fresh.status, fresh.wait) == (Status.PENDING, WaitKind.ENGINE_NOT_RUNNING)
    show_claim(record, fresh, UNREACHABLE)
    row = record.item(ITEM)
    assert (row.status, row.wait, row.reason, row.stage) == (
        Status.WAITING, WaitKind.CLAIM_PENDING, UNREACHABLE_REASON, "Draft")
    show_claim(record, row, OWNER)
    row = record.item(ITEM)
    assert (row.status, row.wait, row.reason) == (
        Status.PENDING, WaitKind.ENGINE_NOT_RUNNING, None)  # as before the claim was asked


@pytest.mark.parametrize("read_as", [Status.PENDING, Status.WAITING])
@pytest.mark.parametrize("outcome", [UNREACHABLE, OWNER], ids=["unreachable", "owner"])
def test_a_claim_answered_after_a_cancel_leaves_the_item_cancelled(
        tmp_path: Path, read_as: Status, outcome: ClaimOutcome) -> None:
    record = a_record(tmp_path, read_as)
    asked = record.item(ITEM)  # bees run read the item, then asked for its claim
    assert asked.status == read_as
    record.set_state(ITEM, status=Status.CANCELLED, stage="Draft")  # bees item cancel
    show_claim(record, asked, outcome)
    row = record.item(ITEM)
    assert (row.status, row.wait, row.reason) == (Status.CANCELLED, None, None)
