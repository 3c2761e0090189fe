"""The post's small decisions in bees_cli.rules, at and around each boundary."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bees_cli.machine.computer import Computer
from bees_cli.record.sync import Syncer
from bees_cli.rules import (
    busy_fails,
    busy_reason,
    is_late,
    needs_approval,
    review_stops,
    waited_for_slot,
)

AT = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("kind", "held"),
    [("read", False), ("write", False), ("send", True), ("post", True), ("delete", True),
     ("pay", True)],
)
def test_only_send_post_delete_and_pay_wait_for_approval(kind: str, held: bool) -> None:
    assert needs_approval(kind, "required") is held
    assert needs_approval(kind, None) is False
    assert needs_approval(kind, "none") is False


def test_approval_is_compared_by_value() -> None:
    """A stage's ``approval`` read from JSON is an equal string, not the interned constant."""
    required = json.loads('"required"')
    assert needs_approval("pay", required) is True
    assert needs_approval("read", required) is False


@pytest.mark.parametrize(("attempt", "waited"), [(1, timedelta(0)), (2, timedelta(seconds=15)),
                                                 (41, timedelta(minutes=10))])
def test_the_slot_is_checked_every_15_seconds(attempt: int, waited: timedelta) -> None:
    assert waited_for_slot(attempt) == waited


@pytest.mark.parametrize(
    ("waited", "fails"),
    [(timedelta(0), False), (timedelta(minutes=9, seconds=45), False),
     (timedelta(minutes=10) - timedelta(microseconds=1), False), (timedelta(minutes=10), True),
     (timedelta(minutes=10, seconds=15), True)],
)
def test_a_busy_wait_fails_after_10_minutes(waited: timedelta, fails: bool) -> None:
    assert busy_fails(waited) is fails


def test_a_busy_wait_fails_with_its_last_reason_for_10_minutes() -> None:
    assert busy_reason("waiting for agent alpha: 1 of 1 busy (items 01OTHER)") == (
        "waiting for agent alpha: 1 of 1 busy (items 01OTHER) for 10 minutes")


@pytest.mark.parametrize(
    ("after", "late"),
    [(timedelta(seconds=-2), False), (timedelta(0), False), (timedelta(seconds=59), False),
     (timedelta(seconds=60), False), (timedelta(seconds=60, microseconds=1), True),
     (timedelta(seconds=61), True), (timedelta(seconds=90), True), (timedelta(hours=3), True)],
)
def test_a_fire_asked_more_than_a_minute_late_is_skipped(after: timedelta, late: bool) -> None:
    assert is_late(AT, AT + after) is late


def test_lateness_needs_aware_times() -> None:
    with pytest.raises(ValueError, match="aware"):
        is_late(AT, datetime(2026, 12, 7, 8, 1))
    with pytest.raises(ValueError, match="aware"):
        is_late(datetime(2026, 12, 7, 8, 0), AT)


@pytest.mark.parametrize(("requests", "stops"), [(1, False), (2, False), (3, True), (4, True)])
def test_the_third_request_for_changes_stops_the_item(requests: int, stops: bool) -> None:
    assert review_stops(requests) is stops


def test_the_shared_record_syncs_every_15_seconds(tmp_path: Path) -> None:
    computer = Computer(machine_id="0" * 32, computer="laptop", person=None, login=None,
                        record_path=tmp_path / "record.db", runs_dir=tmp_path / "runs")
    assert Syncer(computer).interval == 15.0
