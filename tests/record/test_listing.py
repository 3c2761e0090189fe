"""What ``bees status`` reads: the most relevant rows up to a limit, without the items' input,
what an approval waits for, and the team's rows not held here (issue 16, point 3)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from bees_cli.record.listing import held_what, local_page, team_page
from bees_cli.record.local import LocalRecord
from bees_cli.record.schema import ENDED_FIRST
from bees_cli.record.sync import SharedRecord
from bees_cli.usecases.items import local_status
from tests.conftest import BeesRunner


def item_id(n: int) -> str:
    return f"01LIST{n:020d}"


def fill(path: Path, statuses: list[str]) -> LocalRecord:
    """Items 0… with these statuses; item n changed at minute n (a later one is newer)."""
    record = LocalRecord(path)
    SharedRecord(path)
    for n, status in enumerate(statuses):
        record.add_item(id=item_id(n), process="p", title=f"T{n}", workspace="/ws",
                        run_folder=f"/runs/{n}", input='{"big": "' + "x" * 1000 + '"}',
                        stage="Draft")
        record.set_state(item_id(n), status=status, reason="why" if status == "failed" else None)
    db = sqlite3.connect(path)
    with db:
        for n in range(len(statuses)):
            db.execute("UPDATE items SET since = ? WHERE id = ?",
                       (f"2026-12-01T10:{n:02d}:00.000000Z", item_id(n)))
    db.close()
    return record


def test_the_page_lists_items_not_ended_first_then_the_latest_changed(tmp_path: Path) -> None:
    path = tmp_path / "record.db"
    fill(path, ["running", "done", "failed", "done", "cancelled", "done"])
    page = local_page(path, limit=3)
    # not ended: 0 and 2; then the latest changed of the ended: 5; shown by id
    assert [(r.id, r.status, r.input) for r in page.rows] == [
        (item_id(0), "running", ""), (item_id(2), "failed", ""), (item_id(5), "done", "")]
    assert page.more == 3
    every = local_page(path, limit=None)
    assert [r.id for r in every.rows] == [item_id(n) for n in range(6)] and every.more == 0
    assert local_page(path, limit=6).more == 0
    hidden = local_page(path, limit=None, hide=[item_id(0), item_id(5)])
    assert [r.id for r in hidden.rows] == [item_id(n) for n in (1, 2, 3, 4)]


def test_what_an_approval_waits_for_has_no_input(tmp_path: Path) -> None:
    path = tmp_path / "record.db"
    record = fill(path, ["waiting for approval", "waiting for approval", "running"])
    record.put_approval(item_id(0), {"id": 1, "stage": "Send", "status": "waiting",
                                     "action": "mail.send", "summary": '{"to": "x"}'})
    record.put_approval(item_id(0), {"id": 2, "stage": "Send", "status": "waiting",
                                     "action": "chat.post", "summary": "{}"})
    record.put_approval(item_id(1), {"id": 1, "stage": "Send", "status": "approved",
                                     "action": "mail.send", "summary": "{}"})
    record.put_approval(item_id(1), {"id": 2, "stage": "Send", "status": "waiting",
                                     "action": None, "summary": "output /r"})
    assert local_page(path, limit=None).held == {item_id(0): "mail.send",
                                                 item_id(1): "finish Send"}
    assert held_what({"action": "mail.send", "interrupted_at": "2026-12-01T10:00:00Z"}) == (
        "mail.send may already have run")


def team_item(path: Path, item: str, origin_us: int, status: str = "running") -> None:
    db = sqlite3.connect(path)
    with db:
        db.execute("INSERT INTO team_items (item_id, fields, origin_us, machine_id, digest,"
                   " person, seq) VALUES (?, ?, ?, 'm2', 'd', 'maya@example.com', 1)",
                   (item, json.dumps({"stage": "Draft", "status": status, "process": "p",
                                      "title": item[-2:], "computer": "maya-desktop"}),
                    origin_us))
    db.close()


def test_team_rows_skip_items_held_here_and_are_limited(tmp_path: Path) -> None:
    path = tmp_path / "record.db"
    fill(path, ["running"])
    for n in range(1, 5):
        team_item(path, item_id(n), origin_us=1_000_000 * n)
    team_item(path, item_id(0), origin_us=9_000_000)  # held here: the local row wins
    page = team_page(path, limit=2)
    assert [(r["id"], r["status_text"]) for r in page.rows] == [
        (item_id(3), "Draft, running on maya-desktop"),
        (item_id(4), "Draft, running on maya-desktop")]
    assert page.more == 2
    assert [r["id"] for r in team_page(path, limit=None).rows] == [
        item_id(n) for n in range(1, 5)]
    assert [r["id"] for r in team_page(path, limit=None, show=[item_id(0)]).rows] == [
        item_id(n) for n in range(5)]
    assert team_page(path, limit=0).rows == [] and team_page(path, limit=0).more == 4


def test_one_limit_covers_this_computers_rows_then_the_teams(tmp_path: Path) -> None:
    path = tmp_path / "record.db"
    record = fill(path, ["running", "done", "failed"])
    for n in range(3, 6):
        team_item(path, item_id(n), origin_us=1_000_000 * n)
    view = local_status(record, "m1", limit=4, team=True)
    assert [r["id"] for r in view.rows] == [item_id(n) for n in (0, 1, 2, 5)]
    assert view.more == 2
    mine = local_status(record, "m1", limit=2, team=False)
    assert ([r["id"] for r in mine.rows], mine.more) == ([item_id(0), item_id(2)], 1)
    assert len(local_status(record, "m1", limit=None, team=True).rows) == 6


def test_bees_status_lists_fifty_with_a_footer_and_all_with_all(
        bees: BeesRunner, bees_home: Path) -> None:
    fill(bees_home / "data" / "record.db", ["done"] * 52 + ["failed"])
    shown = bees("status", env={"COLUMNS": "80"})
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    head = "item                        process  title  stage  status       agent  since"
    rule = "--------------------------  -------  -----  -----  -----------  -----  "
    assert lines[0] == head
    # the since column is as wide as its longest age ("9s ago", "10s ago"): it depends on time
    assert lines[1][:len(rule)] == rule
    # the 50 most relevant, by id: the failed item, then the 49 latest changed (since: ages)
    assert [line[:71] for line in lines[2:]] == [
        f"{item_id(n)}  p        T{n:<4}  Draft  {'done':<11}  -      "
        for n in range(3, 52)] + [f"{item_id(52)}  p        T52    Draft  failed: why  -      "]
    assert shown.stderr == "3 more; --all to show all\n"
    every = bees("status", "--all")
    assert (len(every.stdout.splitlines()), every.stderr) == (2 + 53, "")
    page = json.loads(bees("status", "--json").stdout)
    assert (len(page["items"]), page["more"]) == (50, 3)
    every_row = json.loads(bees("status", "--json", "--all", "--mine").stdout)
    assert (len(every_row["items"]), every_row["more"]) == (53, 0)


def test_the_page_and_the_free_rows_are_read_by_index_not_by_a_scan(tmp_path: Path) -> None:
    path = tmp_path / "record.db"
    fill(path, ["running"])
    db = sqlite3.connect(path)
    page = db.execute(f"EXPLAIN QUERY PLAN SELECT id FROM items ORDER BY {ENDED_FIRST},"
                      " since DESC, id DESC LIMIT 50").fetchall()
    free = db.execute("EXPLAIN QUERY PLAN SELECT id FROM items WHERE status = 'free'"
                      ).fetchall()
    db.close()
    assert [r[3] for r in page] == ["SCAN items USING INDEX items_listing"]
    assert [r[3] for r in free] == ["SEARCH items USING INDEX items_status (status=?)"]


def test_an_item_shown_is_read_without_its_input(tmp_path: Path) -> None:
    record = fill(tmp_path / "record.db", ["running"])
    shown = record.item(item_id(0)[:8].lower(), with_input=False)
    assert (shown.id, shown.status, shown.input) == (item_id(0), "running", "")
    assert record.item(item_id(0)).input == '{"big": "' + "x" * 1000 + '"}'


def test_watch_has_no_json(bees: BeesRunner) -> None:
    done = bees("status", "--watch", "--json")
    assert (done.returncode, json.loads(done.stdout)["error"]["message"]) == (
        2, "--watch redraws the table; it has no --json")


def test_a_page_not_exact_says_whether_more_are_left_without_counting(tmp_path: Path) -> None:
    # issue 29, point 1: the app's list reads one row past its page instead of a count
    path = tmp_path / "record.db"
    fill(path, ["running"] * 5)
    assert local_page(path, limit=3, exact=False).more == 1
    assert len(local_page(path, limit=3, exact=False).rows) == 3
    assert local_page(path, limit=5, exact=False).more == 0
    assert local_page(path, limit=3).more == 2
    for n in range(10, 14):
        team_item(path, item_id(n), origin_us=1_000_000 * n)
    assert (team_page(path, limit=2, exact=False).more,
            len(team_page(path, limit=2, exact=False).rows)) == (1, 2)
    assert team_page(path, limit=0, exact=False).more == 1
    assert team_page(path, limit=4, exact=False).more == 0
