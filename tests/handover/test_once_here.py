"""One ``bees continue`` of an item per computer, and requests to a free item, through the CLI
(the ``bees`` fixture): a continue under way, an item continued here already or running here, and
cancel, retry or accept of a relinquished item are refused with exit 3, nothing changed."""

from __future__ import annotations

import pytest

from bees_cli.handover.lock import LOCKS_DIR, continue_lock
from bees_cli.machine.computer import Computer
from bees_cli.record.local import LocalRecord
from bees_cli.record.states import Status
from tests.conftest import BeesRunner

ITEM = "01JH3QX5Z8KZ2W4M6N8P0R2T4V"
DIGEST = "ab" * 32


def _record() -> LocalRecord:
    record = LocalRecord(Computer.load().record_path)
    record.add_item(id=ITEM, process="report", title="Week 1", workspace="/nowhere",
                    run_folder="/nowhere/run", input="", stage="Draft")
    return record


def test_a_continue_while_another_is_under_way_here_is_refused_at_once(
        bees: BeesRunner) -> None:
    data = Computer.load().record_path.parent
    with continue_lock(data, ITEM.lower()):
        done = bees("continue", ITEM, "--digest", DIGEST)
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr.splitlines() == [
        f"error: a continue of item {ITEM} is under way here",
        f"hint: when it ends, bees item show {ITEM} shows the run it started"]
    assert [p.name for p in (data / LOCKS_DIR).iterdir()] == [f"{ITEM}.lock"]


def test_the_lock_is_free_again_once_a_continue_ended(bees_home: object) -> None:
    data = Computer.load().record_path.parent
    with continue_lock(data, ITEM):
        pass
    with continue_lock(data, ITEM):  # not refused: the first one let it go
        pass


def test_an_item_continued_here_already_is_refused_with_its_run(bees: BeesRunner) -> None:
    record = _record()
    record._add_event(ITEM, key="continued:x", kind="continued", stage="Draft",
                     data={"from": "maya-laptop", "run": 2})
    done = bees("continue", ITEM, "--digest", DIGEST)
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr.splitlines() == [
        f"error: item {ITEM} was already continued here (run 2)",
        f"hint: bees item show {ITEM} shows it"]


def test_an_item_that_runs_here_and_was_never_relinquished_says_so(
        bees: BeesRunner) -> None:
    _record().set_state(ITEM, status=Status.RUNNING, stage="Draft")
    done = bees("continue", ITEM, "--digest", DIGEST)
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr.splitlines() == [
        f"error: item {ITEM} runs here already (status: running): only a relinquished item "
        "can be continued",
        f"hint: bees item show {ITEM} shows it"]


def test_an_item_that_ended_here_says_it_ended(bees: BeesRunner) -> None:
    _record().set_state(ITEM, status=Status.CANCELLED, stage="Draft")
    done = bees("continue", ITEM, "--digest", DIGEST)
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr.splitlines() == [
        f"error: item {ITEM} ended here (status: cancelled): only a relinquished item "
        "can be continued",
        f"hint: bees item show {ITEM} shows it"]


@pytest.mark.parametrize(("argv", "what"), [
    (("item", "cancel"), "cancel"), (("retry",), "retry"), (("item", "accept"), "accept")])
def test_a_request_to_a_relinquished_item_is_refused_where_it_is_free(
        bees: BeesRunner, argv: tuple[str, ...], what: str) -> None:
    record = _record()
    record.set_state(ITEM, status=Status.FREE, stage="Draft", reason="restarts at Draft")
    before = record.events(ITEM)
    done = bees(*argv, ITEM)
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr.splitlines() == [
        f"error: item {ITEM} is not running here: it was relinquished (restarts at Draft); "
        f"{what} it where it continues"]
    row = record.item(ITEM)
    assert (row.status, row.stage, record.events(ITEM)) == (Status.FREE, "Draft", before)
