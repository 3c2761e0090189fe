"""``bees checkpoint verify`` through the CLI (``bees`` fixture): exit codes 0/1/2/3, text, JSON."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from pathlib import Path

from bees_cli.cli.checkpoint import progress_printer
from tests.conftest import BeesRunner
from tests.handover.helpers import make_run, write

WEIRD = {
    "with space.md": b"spaces\n",
    "\u00fcn\u00efcode/\u65e5\u672c.md": b"unicode\n",
}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_valid_folder_exits_0(bees: BeesRunner, tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run")
    info = write(folder)
    done = bees("checkpoint", "verify", str(folder))
    assert (done.returncode, done.stdout, done.stderr) == (
        0, f"valid: 3 files, 43 bytes, checkpoint sha256 {info.sha256}\n", "")
    done = bees("checkpoint", "verify", str(folder), "--digest", info.sha256, "--json")
    assert done.returncode == 0
    assert json.loads(done.stdout) == {
        "version": 1, "ok": True, "sha256": info.sha256, "files": 3, "total_bytes": 43}


def test_weird_names_and_one_changed_byte_exit_3(bees: BeesRunner, tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", WEIRD)
    write(folder)
    (folder / "with space.md").write_bytes(b"spaceS\n")
    (folder / "new\nline.md").write_bytes(b"")
    (folder / os.fsdecode(b"bad\xff.md")).write_bytes(b"")
    os.mkfifo(folder / "pipe")
    (folder / "loop").symlink_to("loop")
    done = bees("checkpoint", "verify", str(folder))
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr == (
        f"with space.md: content changed (sha256 {sha(b'spaceS' + bytes([10]))} "
        f"expected {sha(WEIRD['with space.md'])})\n"
        "bad\\xff.md: extra file not in the checkpoint\n"
        "loop: extra symlink not in the checkpoint\n"
        '"new\\nline.md": extra file not in the checkpoint\n'
        "pipe: extra special file (not a regular file) not in the checkpoint\n"
        "error: checkpoint invalid: 5 problems\n"
    )

    done = bees("checkpoint", "verify", str(folder), "--json")
    assert (done.returncode, done.stderr) == (3, "")
    report = json.loads(done.stdout)["error"]
    assert [(p["code"], p["path"]) for p in report["problems"]] == [
        ("content_changed", "with space.md"),
        ("extra_file", "bad\\xff.md"),
        ("extra_symlink", "loop"),
        ("extra_file", "new\nline.md"),
        ("extra_special", "pipe"),
    ]
    # an invalid checkpoint is an error like any other in JSON mode (issue 15, point 2)
    assert (report["code"], report["message"]) == ("checkpoint_invalid",
                                                    "checkpoint invalid: 5 problems")


def test_listed_paths_with_control_characters_print_safely(bees: BeesRunner,
                                                           tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    entries = [{"path": p, "size": 0, "sha256": sha(b"")} for p in ["a\nb", "\udcff", "\x1b[2J"]]
    document = {"format": 1, "item": "i", "workspace": "w", "process_digest": "d",
                "restart_stages": {"main": "Draft"}, "files": entries, "computer": "c",
                "machine_id": "m", "time": "2026-01-05T09:30:00Z", "journal": []}
    (folder / "checkpoint.json").write_text(json.dumps(document), encoding="ascii")
    done = bees("checkpoint", "verify", str(folder))
    assert done.returncode == 3
    assert done.stderr == (
        '"a\\nb": path has a control character\n'
        '"\\udcff": path is not valid Unicode (lone surrogate)\n'
        '"\\u001b[2J": path has a control character\n'
        "error: checkpoint invalid: 3 problems\n"
    )
    done = bees("checkpoint", "verify", str(folder), "--json")
    assert done.returncode == 3
    assert [p["path"] for p in json.loads(done.stdout)["error"]["problems"]] == [
        "a\nb", "\udcff", "\x1b[2J"]


def test_bad_usage_exits_2_and_a_missing_folder_1(bees: BeesRunner, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    done = bees("checkpoint", "verify", str(missing))
    assert (done.returncode, done.stdout, done.stderr) == (
        1, "", f"error: not a folder: {missing}\n")
    done = bees("checkpoint", "verify", str(missing), "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout) == {"version": 1, "error": {
        "code": "not_found", "message": f"not a folder: {missing}", "hint": None}}
    done = bees("checkpoint", "verify", str(tmp_path), "--digest", "xyz")
    assert (done.returncode, done.stderr) == (
        2, "error: not a SHA-256 digest (64 hex digits): 'xyz'\n")
    done = bees("checkpoint", "verify")
    assert done.returncode == 2
    assert "Missing argument 'DIR'" in done.stderr
    done = bees("checkpoint")
    assert "verify" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_missing_checkpoint_exits_3(bees: BeesRunner, tmp_path: Path) -> None:
    done = bees("checkpoint", "verify", str(tmp_path))
    assert (done.returncode, done.stderr) == (
        3, "checkpoint.json: no checkpoint in this folder\nerror: checkpoint invalid: 1 problem\n")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _amounts(drawn: str) -> list[str]:
    """The ``D/T MB`` of each frame rich drew (frames start with a carriage return)."""
    plain = ANSI.sub("", drawn)
    assert plain.endswith("\n") and plain.count("\n") == 1  # one line, ended
    frames = [frame for frame in plain.rstrip("\n").split("\r") if frame]
    assert all(frame.startswith("hashing ") for frame in frames)
    return [re.findall(r"[0-9.]+/[0-9.]+ MB", frame)[0] for frame in frames]


def test_progress_prints_only_on_a_terminal() -> None:
    assert progress_printer(io.StringIO()) is None
    screen = Terminal()
    show = progress_printer(screen, every=3600)
    assert show is not None
    show(1_000_000, 250_000_000)
    show(2_000_000, 250_000_000)  # within the redraw interval: skipped
    show(250_000_000, 250_000_000)
    show.close()  # nothing left open
    assert _amounts(screen.getvalue()) == ["0.0/250.0 MB", "1.0/250.0 MB", "250.0/250.0 MB"]
    stopped = Terminal()
    show = progress_printer(stopped)
    assert show is not None
    show(5_000_000, 250_000_000)
    show.close()  # hashing stopped early: the line still ends
    assert _amounts(stopped.getvalue()) == ["0.0/250.0 MB", "5.0/250.0 MB", "5.0/250.0 MB"]
