"""A read-only or full disk (issue 12, point 7): ``bees status`` still works, a command that
writes says so in one line naming the file, never with a traceback.

The home is made read-only (or full) for the one command only, in a mount namespace of its
own (``unshare``): a read-only bind mount of the home, or a small full tmpfs holding a copy
of it. Unlike ``chmod``, both hold for root too.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import typer

from bees_cli.cli.errors import error_boundary
from bees_cli.errors import DiskError
from tests.conftest import EXAMPLE, BeesRunner

Runner = Callable[..., subprocess.CompletedProcess[str]]

READ_ONLY = 'mount --bind -o ro "$0" "$0"'
FULL = ('mount -t tmpfs -o size=2m tmpfs "$0" && cp -a "$1/." "$0/" && '
        '(dd if=/dev/zero of="$0/fill" bs=16k 2>/dev/null || true)')
HINT_READ_ONLY = ("hint: make it writable (or run Bees as the user that owns it); "
                  "`bees status` works read-only")
HINT_FULL = "hint: free some space on that disk, then run the command again"


def _namespace(setup: str, *args: str) -> list[str]:
    """argv prefix running a command in a mount namespace of its own, after shell ``setup``
    (its ``$0``, ``$1``… are ``args``)."""
    flags = "-m" if os.geteuid() == 0 else "-rm"  # a user namespace gives the right to mount
    shift = f"shift {len(args) - 1} && " if len(args) > 1 else ""
    return ["unshare", flags, "sh", "-c", f'{setup} && {shift}exec "$@"', *args]


def _runner(home: Path, setup: str, *args: str) -> Runner:
    """Return a runner of ``bees ARGS`` on computer ``home`` in a namespace made by
    ``setup``; where no mount namespace can be made, skips the test (with the reason) on a
    developer's machine and fails it under CI (``CI`` set, as ``.ci/run`` does)."""
    probe = subprocess.run([*_namespace(setup, *args), "true"], capture_output=True,
                           text=True, check=False)
    if probe.returncode != 0:
        why = f"cannot make a mount namespace here: {probe.stderr.strip()}"
        if os.environ.get("CI"):  # CI runs as root on Linux: a skip there would hide a gap
            pytest.fail(why)
        pytest.skip(why)

    def run(*command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*_namespace(setup, *args), sys.executable, "-m", "bees_cli", *command],
            env=dict(os.environ, BEES_HOME=str(home)), capture_output=True, text=True,
            timeout=120, check=False)

    return run


@pytest.fixture
def item(bees: BeesRunner) -> str:
    """A pending item of the example on this computer (its home written as usual)."""
    made = bees("item", "create", "weekly-report", "-w", str(EXAMPLE))
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def test_status_works_in_a_read_only_home(bees: BeesRunner, bees_home: Path,
                                          item: str) -> None:
    before = json.loads(bees("status", "--json").stdout)["items"]
    run = _runner(bees_home, READ_ONLY, str(bees_home))
    shown = run("status", "--json")
    assert shown.returncode == 0, shown.stderr
    now = json.loads(shown.stdout)["items"]
    assert [(r["item_id"], r["status"], r["wait"]) for r in now] == [
        (item, "pending", "engine_not_running")]
    assert now == before  # no display text in the rows, so nothing moves with the clock
    table = run("status")
    assert table.returncode == 0 and f"{item}  weekly-report" in table.stdout
    assert run("item", "show", item).returncode == 0
    waiting = run("approvals")
    assert (waiting.returncode, waiting.stdout, waiting.stderr) == (
        0, "", "nothing waits for approval on this computer\n")


def test_a_write_in_a_read_only_home_is_one_line_naming_the_file(
        bees: BeesRunner, bees_home: Path, item: str) -> None:
    run = _runner(bees_home, READ_ONLY, str(bees_home))
    cancel = run("item", "cancel", item)
    assert cancel.returncode == 1
    assert cancel.stderr == (f"error: cannot write {bees_home}/data/record.db: it is "
                             f"read-only here\n{HINT_READ_ONLY}\n")
    started = run("run", "--exit-when-idle")
    assert started.returncode == 1
    assert started.stderr == (f"error: cannot write {bees_home}/data/worker.lock: the file "
                              f"system is read-only\n{HINT_READ_ONLY}\n")
    made = run("item", "create", "weekly-report", "-w", str(EXAMPLE))
    assert made.returncode == 1
    first, hint = made.stderr.splitlines()
    assert first.startswith(f"error: cannot write {bees_home}/data/")
    assert first.endswith(": the file system is read-only") and hint == HINT_READ_ONLY
    # nothing changed
    listed = json.loads(bees("status", "--json").stdout)["items"]
    assert [r["status"] for r in listed] == ["pending"]


def test_a_full_disk_is_one_line_and_status_still_works(
        bees: BeesRunner, bees_home: Path, item: str, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(bees_home, copy)
    run = _runner(bees_home, FULL, str(bees_home), str(copy))
    cancel = run("item", "cancel", item)
    assert cancel.returncode == 1
    assert cancel.stderr == (f"error: cannot write {bees_home}/data/record.db: the disk is "
                             f"full\n{HINT_FULL}\n")
    shown = run("status", "--json")
    assert shown.returncode == 0, shown.stderr
    assert [(r["item_id"], r["status"]) for r in json.loads(shown.stdout)["items"]] == [
        (item, "pending")]


def test_the_boundary_names_the_file_of_a_disk_error_and_a_bug_keeps_its_traceback(
        capsys: pytest.CaptureFixture[str]) -> None:
    @error_boundary
    def full(as_json: bool = False) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "/home/maya/.bees/data/x.json")

    @error_boundary
    def missing(as_json: bool = False) -> None:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", "/nowhere")

    with pytest.raises(typer.Exit) as leaving:
        full()
    assert leaving.value.exit_code == 1
    assert capsys.readouterr().err == ("error: cannot write /home/maya/.bees/data/x.json: the "
                                       f"disk is full\n{HINT_FULL}\n")
    # any other I/O error on a named file is one line too, exit 1 (issue 15, point 3)
    with pytest.raises(typer.Exit) as io_error:
        missing()
    assert io_error.value.exit_code == 1
    assert capsys.readouterr().err == ("error: cannot use /nowhere: No such file or directory\n"
                                       "hint: check that path (and BEES_HOME, if set)\n")

    @error_boundary
    def forbidden(as_json: bool = False) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", "/srv/other/record.db")

    with pytest.raises(typer.Exit):
        forbidden(as_json=True)
    assert json.loads(capsys.readouterr().out) == {"version": 1, "error": {
        "code": "disk", "message": "cannot use /srv/other/record.db: permission denied",
        "hint": HINT_READ_ONLY.removeprefix("hint: ")}}
    error = DiskError("/r/record.db", "it is read-only here")
    assert (error.exit_code, error.code, error.path) == (1, "disk", "/r/record.db")


def test_a_read_only_home_is_read_with_the_changes_still_in_its_wal(
        bees: BeesRunner, bees_home: Path, item: str) -> None:
    import sqlite3

    writer = sqlite3.connect(bees_home / "data" / "record.db", isolation_level=None)
    try:
        writer.execute("PRAGMA wal_autocheckpoint=0")  # the change stays in record.db-wal
        writer.execute("UPDATE items SET title = 'Week 2' WHERE id = ?", (item,))
        assert (bees_home / "data" / "record.db-wal").stat().st_size > 0
        shown = _runner(bees_home, READ_ONLY, str(bees_home))("status", "--json")
    finally:
        writer.close()
    assert shown.returncode == 0, shown.stderr
    assert [(r["item_id"], r["title"]) for r in json.loads(shown.stdout)["items"]] == [
        (item, "Week 2")]


def test_a_record_moved_aside_while_in_use_starts_again_with_its_tables(tmp_path: Path) -> None:
    from bees_cli.record.local import LocalRecord

    path = tmp_path / "data" / "record.db"
    record = LocalRecord(path)
    record.add_item(id="01JH3QX5Z8KZ2W4M6N8P0R2T4V", process="p", title="t", workspace="/ws",
                    run_folder=str(tmp_path / "run"), input="{}", stage="Draft")
    path.rename(tmp_path / "record.db.bad")
    assert (record.items(), record.replaced) == ([], 1)  # not "no such table: items"
    record.add_item(id="01JH3QX5Z8KZ2W4M6N8P0R2T4W", process="p", title="t", workspace="/ws",
                    run_folder=str(tmp_path / "run"), input="{}", stage="Draft")
    assert ([row.id for row in record.items()], record.replaced) == (
        ["01JH3QX5Z8KZ2W4M6N8P0R2T4W"], 1)
