"""``bees item watch``'s use case (issue 28, point 4): each new fact once, in order, as the record
gets it, model turns and status changes between, then the outcome and its exit code."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bees_cli.cli.boundary import ExitCode
from bees_cli.machine.computer import Computer
from bees_cli.record.events import parse_event
from bees_cli.record.local import LocalRecord
from bees_cli.usecases import Bees
from bees_cli.usecases.watch import EXIT_OF, outcome_of
from tests.record.test_events import SAMPLES

ITEM = "01JH2Q0000000000000000WATC"


def _fact(record: LocalRecord, kind: str, **data: Any) -> None:
    sample, stage, round_, _ = SAMPLES[kind]
    record.add_fact(ITEM, parse_event(kind, {**sample, **data}, at="", stage=stage,
                                      round=round_), key=f"test:{kind}")


def _turn(run_folder: Path, tokens_in: int, tokens_out: int) -> None:
    logs = run_folder / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with (logs / "Draft.transcript.jsonl").open("a") as out:
        out.write(json.dumps({"kind": "reply", "model": "smollm2", "prompt_tokens": tokens_in,
                              "completion_tokens": tokens_out, "seconds": 0.5}) + "\n")


def _line(seen: Any) -> tuple[Any, ...]:
    if seen.kind == "fact":
        return ("fact", seen.text)
    if seen.kind == "status":
        return ("status", seen.text)
    if seen.kind == "model":
        return ("model", seen.usage.stage, seen.usage.turns, seen.usage.tokens_in)
    return ("end", seen.outcome, seen.stage, seen.exit_code)


@pytest.fixture
def item(bees_home: Path, tmp_path: Path) -> tuple[Bees, LocalRecord, Path]:
    computer = Computer.load(bees_home)
    record = LocalRecord(computer.record_path)
    run_folder = tmp_path / "run"
    record.add_item(id=ITEM, process="weekly-report", title="Week 2", workspace="/ws",
                    run_folder=str(run_folder), input="{}", stage="Draft")
    return Bees(computer), record, run_folder


async def _take(watch: AsyncIterator[Any], count: int) -> list[tuple[Any, ...]]:
    return [_line(await anext(watch)) for _ in range(count)]


def test_each_new_fact_is_seen_once_in_order_then_the_outcome(
        item: tuple[Bees, LocalRecord, Path]) -> None:
    bees, record, run_folder = item

    async def watch_it() -> list[list[tuple[Any, ...]]]:
        watch = bees.watch_item(ITEM[:12], poll=0)
        seen = [await _take(watch, 2)]
        _fact(record, "pick")
        _fact(record, "stage_started")
        record.set_state(ITEM, status="running", stage="Draft", agent="writer")
        seen.append(await _take(watch, 3))
        _turn(run_folder, 100, 10)
        seen.append(await _take(watch, 1))
        _turn(run_folder, 150, 20)
        _fact(record, "approval_asked")
        record.set_state(ITEM, status="waiting for approval", stage="Send", agent="sender",
                         reason="finish (output /r/Send)")
        seen.append(await _take(watch, 3))
        _fact(record, "approved")
        record.set_state(ITEM, status="done", stage="Done")
        seen.append([_line(s) async for s in watch])
        return seen

    assert asyncio.run(watch_it()) == [
        [("fact", "created"), ("status", "Draft: waiting: the engine is not running (bees run)")],
        [("fact", "Draft round 1: picked writer: named on the item; skipped editor (disabled)"),
         ("fact", "Draft round 2: started writer (attempt 1), with review comments: shorter"),
         ("status", "Draft: running (writer)")],
        [("model", "Draft", 1, 100)],
        [("fact", "Send round 1: waiting for approval (request 1): finish (output /r/Send)"),
         ("model", "Draft", 2, 250),
         ("status", "Send: waiting for approval: finish (output /r/Send)")],
        [("fact", "Send round 1: request 3 approved by maya at 2025-01-06T10:00:00Z — "
                  "mail.send to bob"),
         ("end", "done", "Done", 0)],
    ]


@pytest.mark.parametrize(("status", "until_waiting", "end"), [
    ("waiting for approval", True, ("end", "waiting", "Send", 3)),
    ("waiting for a person", True, ("end", "waiting", "Send", 3)),
    ("failed", False, ("end", "failed", "Send", 1)),
    ("cancelled", False, ("end", "cancelled", "Send", 1)),
])
def test_the_watch_ends_with_the_outcome_exit_code(
        item: tuple[Bees, LocalRecord, Path], status: str, until_waiting: bool,
        end: tuple[Any, ...]) -> None:
    bees, record, _ = item
    record.set_state(ITEM, status=status, stage="Send")

    async def watch_it() -> list[tuple[Any, ...]]:
        return [_line(s) async for s in bees.watch_item(ITEM, until_waiting=until_waiting,
                                                          poll=0)]

    assert asyncio.run(watch_it())[-1] == end


def test_each_outcome_ends_with_the_exit_code_of_the_table() -> None:
    assert EXIT_OF == {"done": ExitCode.OK, "failed": ExitCode.FAILURE,
                       "cancelled": ExitCode.FAILURE, "lost": ExitCode.FAILURE,
                       "waiting": ExitCode.REFUSED}  # bees help exit-codes: 3 and --until-waiting


def test_only_until_waiting_ends_a_watch_at_a_person() -> None:
    assert [outcome_of(s, until_waiting=False) for s in (
        "pending", "starting", "waiting", "running", "waiting for approval",
        "waiting for a person", "free", "done", "failed", "cancelled", "lost", "nonsense")] == [
        None, None, None, None, None, None, None, "done", "failed", "cancelled", "lost", None]
    assert [outcome_of(s, until_waiting=True) for s in (
        "waiting", "waiting for approval", "waiting for a person", "free")] == [
        None, "waiting", "waiting", None]


def test_an_item_another_computer_runs_is_followed_in_the_shared_record(
        bees_home: Path) -> None:
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from bees_cli.record.shared import SharedRecord

    computer = Computer.load(bees_home)
    LocalRecord(computer.record_path)  # this computer's record, without the item
    shared = SharedRecord(computer.record_path)
    team_item = "01JH2Q0000000000000000TEAM"

    def change(seq: int, stage: str, status: str) -> None:
        entry = SimpleNamespace(item_id=team_item, fields={"title": "Theirs", "stage": stage,
                                                           "status": status, "agent": "writer"},
                                origin_time=datetime(2026, 12, 1, 9, seq, tzinfo=UTC),
                                machine_id="m-2", person="ana@example.com", seq=seq)
        shared.apply([entry], seq)  # type: ignore[list-item]

    change(1, "Draft", "running")

    async def watch_it() -> list[tuple[Any, ...]]:
        watch = Bees(computer).watch_item(team_item, poll=0)
        seen = [await anext(watch)]
        change(2, "Review", "running")
        seen.append(await anext(watch))
        change(3, "Done", "done")
        seen += [s async for s in watch]
        return [(s.kind, s.stage, s.status, getattr(s, "computer", None),
                 getattr(s, "exit_code", None)) for s in seen]

    assert asyncio.run(watch_it()) == [
        ("status", "Draft", "running", "m-2", None),
        ("status", "Review", "running", "m-2", None),
        ("end", "Done", "done", None, 0)]


@pytest.mark.parametrize(("status", "code"), [
    ("done", ExitCode.OK), ("failed", ExitCode.FAILURE), ("cancelled", ExitCode.FAILURE),
    ("lost", ExitCode.FAILURE), ("waiting for approval", ExitCode.REFUSED),
    ("waiting for a person", ExitCode.REFUSED)])
async def test_item_create_wait_ends_with_the_code_watch_until_waiting_ends_with(
        item: tuple[Bees, LocalRecord, Path], status: str, code: ExitCode) -> None:
    bees, record, _ = item
    record.set_state(ITEM, status=status, stage="Send")
    assert await bees.wait_for_item(ITEM) == code
    assert EXIT_OF[outcome_of(status, until_waiting=True)] == code  # type: ignore[index]
