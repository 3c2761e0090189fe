"""Names that survive other file systems (issue 12, point 5): paths listed in NFC, matched
by NFC on disk, and a real collision said once with the code points of each spelling."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bees_cli.errors import Refused
from bees_cli.handover.checkpoint import verify_checkpoint
from tests.conftest import BeesRunner
from tests.handover.helpers import CAFE, FILES, found, listing, make_run, rewrite, sha, write

NFD_CAFE = "notes/cafe\u0301 menu.md"  # CAFE as macOS has stored it: e + combining acute
NFD_FOLDER = {"re\u0301sume\u0301/draft.md": b"cv\n", "plain.md": b"plain\n"}


def to_nfd(folder: Path) -> None:
    """Rename the NFC café file to its NFD spelling, as a copy through macOS may."""
    (folder / CAFE).rename(folder / NFD_CAFE)


def test_write_lists_a_decomposed_name_composed(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", NFD_FOLDER)
    write(folder)
    listed = json.loads((folder / "checkpoint.json").read_bytes())["files"]
    assert [entry["path"] for entry in listed] == ["plain.md", "r\u00e9sum\u00e9/draft.md"]
    assert found(verify_checkpoint(folder)) == []  # the folder as it was, still NFD


def test_an_nfd_copy_verifies(run: Path, tmp_path: Path) -> None:
    digest = sha((run / "checkpoint.json").read_bytes())
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    to_nfd(copy)
    verification = verify_checkpoint(copy, expected_sha256=digest)
    assert found(verification) == []
    assert (verification.ok, verification.files, verification.total_bytes) == (True, 3, 43)


def test_an_nfd_folder_name_verifies(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", {"r\u00e9sum\u00e9/draft.md": b"cv\n"})
    write(folder)
    (folder / "r\u00e9sum\u00e9").rename(folder / "re\u0301sume\u0301")
    assert found(verify_checkpoint(folder)) == []


def test_an_old_nfd_listing_matches_an_nfc_name(run: Path) -> None:
    good = [("draft/report.md", 24, sha(FILES["draft/report.md"])),
            (NFD_CAFE, 5, sha(FILES[CAFE])),
            ("logs/stage.log", 14, sha(FILES["logs/stage.log"]))]
    rewrite(run, listing(*good))
    assert found(verify_checkpoint(run)) == []


def test_the_matched_file_is_still_hashed(run: Path) -> None:
    to_nfd(run)
    (run / NFD_CAFE).write_bytes(b"stew\n")
    assert found(verify_checkpoint(run)) == [
        ("content_changed", CAFE,
         f"content changed (sha256 {sha(b'stew' + bytes([10]))} expected {sha(FILES[CAFE])})"),
    ]


COLLISION = ('2 files on disk have this name under Unicode normalization (NFC): '
             '"notes/cafe\\u0301 menu.md" vs "notes/caf\\u00e9 menu.md"; keep one')


def test_a_collision_on_disk_is_one_problem_with_code_points(run: Path) -> None:
    (run / NFD_CAFE).write_bytes(b"stray\n")
    assert found(verify_checkpoint(run)) == [("path_collision_unicode", CAFE, COLLISION)]


def test_write_refuses_a_collision_on_disk_with_code_points(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run")
    (folder / NFD_CAFE).write_bytes(b"stray\n")
    with pytest.raises(Refused) as caught:
        write(folder)
    assert caught.value.message == (
        "cannot write the checkpoint: notes/caf\u00e9 menu.md: collides under Unicode "
        'normalization (NFC): "notes/cafe\\u0301 menu.md" vs "notes/caf\\u00e9 menu.md"')


def test_the_cli_says_a_collision_once(bees: BeesRunner, run: Path) -> None:
    (run / NFD_CAFE).write_bytes(b"stray\n")
    done = bees("checkpoint", "verify", str(run))
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr == (f"{CAFE}: {COLLISION}\n"
                           "error: checkpoint invalid: 1 problem\n")
    as_json = bees("checkpoint", "verify", str(run), "--json")
    assert json.loads(as_json.stdout)["error"]["problems"] == [
        {"code": "path_collision_unicode", "path": CAFE, "message": COLLISION}]
