"""A runner's two small rules in bees_cli.rules, at their boundaries: the room it has to
claim offers, and when it is shown silent (issue 27)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bees_cli.rules import runner_room, runner_silent

AT = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("slots", "statuses", "room"),
    [(1, [], 1),
     (1, ["running"], 0),
     (1, ["pending"], 0),
     (1, ["starting"], 0),
     (1, ["waiting"], 0),
     # parked for a person, finished or handed on: no slot held
     (1, ["waiting for approval", "failed", "waiting for a person", "done", "cancelled",
          "free", "lost"], 1),
     (3, ["running", "done", "waiting"], 1),
     (2, ["running", "running", "running"], 0)],
)
def test_a_runner_has_room_for_its_slots_less_the_items_under_way(
        slots: int, statuses: list[str], room: int) -> None:
    assert runner_room(slots, statuses) == room


@pytest.mark.parametrize(("ago", "silent"), [(None, True), (0, False), (45, False),
                                             (45.001, True), (720, True)])
def test_a_runner_is_silent_after_45_seconds_unheard(ago: float | None, silent: bool) -> None:
    heard = None if ago is None else AT - timedelta(seconds=ago)
    assert runner_silent(heard, AT) is silent
