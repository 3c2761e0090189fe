"""The rule of a takeover after a retire (bees_cli/handover/takeover.py): what a retired
runner's run folder may hold beyond its checkpoint, and what is still refused."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from bees_cli.cloud import wire
from bees_cli.handover.checkpoint import ProblemCode, verify_checkpoint
from bees_cli.handover.takeover import Takeover, judge, retired_release, set_aside
from tests.handover.helpers import make_run, sha, write

RETIRED = datetime(2026, 12, 2, 8, 30, 12, 345678, tzinfo=UTC)
TAKEOVER = Takeover("runner-1", RETIRED)
JOURNAL = b'{"type": "intent", "stage": "Draft", "action": "mail.send"}\n'
FILES = {"draft/report.md": b"# Weekly report\n", "journal/actions.jsonl": JOURNAL}


def _died_mid_stage(folder: Path) -> None:
    """What a runner killed mid-stage leaves: its logs, a partial output, a grown journal."""
    make_run(folder, {"logs/Draft-r1-a2.stdout": b"half\n", "Draft/notes.txt": b"partial\n"})
    with open(folder / "journal" / "actions.jsonl", "ab") as journal:
        journal.write(b'{"type": "intent", "stage": "Draft", "action": "mail.post"}\n')


def test_the_retired_runners_unfinished_work_is_set_aside_and_its_journal_kept(
        tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", FILES)
    write(folder)
    _died_mid_stage(folder)
    verified = verify_checkpoint(folder)
    # any other continue refuses it all, as before
    assert [(p.code, p.path) for p in verified.problems] == [
        (ProblemCode.SIZE_CHANGED, "journal/actions.jsonl"),
        (ProblemCode.EXTRA_FILE, "Draft/notes.txt"),
        (ProblemCode.EXTRA_FILE, "logs/Draft-r1-a2.stdout")]
    judged = judge(folder, verified, TAKEOVER)
    assert (judged.problems, judged.leftovers) == (
        [], ["Draft/notes.txt", "logs/Draft-r1-a2.stdout"])
    aside = set_aside(folder, judged.leftovers, TAKEOVER)
    assert aside == folder / "retired" / "runner-1-20261202T083012Z"
    assert {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in folder.rglob("*") if p.is_file() and p.name != "checkpoint.json"} == {
        "draft/report.md": b"# Weekly report\n",
        "journal/actions.jsonl": JOURNAL + b'{"type": "intent", "stage": "Draft", '
                                          b'"action": "mail.post"}\n',
        "retired/runner-1-20261202T083012Z/Draft/notes.txt": b"partial\n",
        "retired/runner-1-20261202T083012Z/logs/Draft-r1-a2.stdout": b"half\n"}
    # a continue that stopped after the move and runs again leaves what it moved in place
    again = judge(folder, verify_checkpoint(folder), TAKEOVER)
    assert (again.problems, again.leftovers) == ([], [])
    # and a file of the same path moved there before is never overwritten
    make_run(folder, {"logs/Draft-r1-a2.stdout": b"second\n"})
    set_aside(folder, ["logs/Draft-r1-a2.stdout"], TAKEOVER)
    assert {p.name: p.read_bytes() for p in (aside / "logs").iterdir()} == {
        "Draft-r1-a2.stdout": b"half\n", "Draft-r1-a2.stdout.1": b"second\n"}


def test_a_changed_listed_file_a_rewritten_journal_or_an_extra_symlink_still_refuses(
        tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", FILES)
    write(folder)
    (folder / "draft" / "report.md").write_bytes(b"# Weekly rep0rt\n")  # same size
    (folder / "journal" / "actions.jsonl").write_bytes(b"{}\n" + JOURNAL)  # not a prefix
    (folder / "link").symlink_to("/etc/passwd")
    (folder / "stray.txt").write_bytes(b"x")
    judged = judge(folder, verify_checkpoint(folder), TAKEOVER)
    assert [(p.code, p.path, p.message) for p in judged.problems] == [
        (ProblemCode.CONTENT_CHANGED, "draft/report.md",
         f"content changed (sha256 {sha(b'# Weekly rep0rt' + bytes([10]))} expected "
         f"{sha(FILES['draft/report.md'])})"),
        (ProblemCode.SIZE_CHANGED, "journal/actions.jsonl",
         f"size changed ({len(JOURNAL) + 3:,} bytes, expected {len(JOURNAL):,})"),
        (ProblemCode.EXTRA_SYMLINK, "link", "extra symlink not in the checkpoint")]
    assert judged.leftovers == ["stray.txt"]


def test_only_a_release_made_by_retiring_a_runner_is_a_takeover() -> None:
    def owner(machine: str, released: datetime | None) -> wire.Owner:
        release = None if released is None else wire.Release(
            released_at=released, restart_stages={"main": "Draft"}, checkpoint_sha256="a" * 64)
        return wire.Owner(item_id="I", epoch=2, machine_id=machine, computer_name="runner-1",
                          person="pool-build@runners.invalid", since=RETIRED, release=release)

    runners = [wire.RunnerView(name="runner-1", pool="build", machine_id="m1",
                               retired_at=RETIRED),
               wire.RunnerView(name="runner-2", pool="build", machine_id="m2")]
    assert retired_release(owner("m1", RETIRED), runners) == TAKEOVER
    later = datetime(2026, 12, 2, 8, 31, tzinfo=UTC)  # it released it itself, before
    assert retired_release(owner("m1", later), runners) is None
    assert retired_release(owner("m2", RETIRED), runners) is None  # not retired
    assert retired_release(owner("m1", None), runners) is None  # held
