"""The checkpoint library: what write_checkpoint writes, each problem verify_checkpoint names."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from bees_cli.errors import NotFound, Refused, UserError
from bees_cli.handover.checkpoint import (
    MAX_CHECKPOINT_BYTES,
    CheckpointInfo,
    CheckpointInvalid,
    Problem,
    canonical_json,
    display_path,
    verify_checkpoint,
)
from tests.handover.helpers import (
    CAFE,
    FILES,
    found,
    listing,
    make_run,
    rewrite,
    sha,
    sparse,
    write,
)

# ------------------------------------------------------------------------------ write


def test_write_lists_every_file_in_canonical_json(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run")
    info = write(folder)
    data = (folder / "checkpoint.json").read_bytes()
    expected = (
        '{"computer":"maya-laptop","files":['
        f'{{"path":"draft/report.md","sha256":"{sha(FILES["draft/report.md"])}","size":24}},'
        f'{{"path":"logs/stage.log","sha256":"{sha(FILES["logs/stage.log"])}","size":14}},'
        f'{{"path":"{CAFE}","sha256":"{sha(FILES[CAFE])}","size":5}}],'
        '"format":1,"item":"01JH2Q0000000000000000TEST",'
        '"journal":[{"action":"mail.send","to":"sam@example.com"}],'
        f'"machine_id":"{"m" * 32}","process_digest":"sha256:abc",'
        '"restart_stages":{"main":"Draft"},"time":"2026-01-05T09:30:00.000000Z",'
        '"workspace":"maya"}\n'
    ).encode()
    assert data == expected
    assert canonical_json(json.loads(data)) == data
    assert info == CheckpointInfo(path=folder / "checkpoint.json", sha256=sha(expected), files=3,
                                  total_bytes=43)


def test_write_is_reproducible_and_time_is_utc(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run")
    first = write(folder)
    again = write(folder)  # the old checkpoint.json is not listed
    assert again.sha256 == first.sha256
    paris = timezone(timedelta(hours=1))
    shifted = write(folder, now=datetime(2026, 1, 5, 10, 30, 0, 250, tzinfo=paris))
    assert json.loads(shifted.path.read_bytes())["time"] == "2026-01-05T09:30:00.000250Z"
    with pytest.raises(ValueError, match="aware datetime"):
        write(folder, now=datetime(2026, 1, 5, 9, 30))


def test_write_refuses_a_symlink(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run")
    (folder / "draft" / "latest.md").symlink_to("report.md")
    with pytest.raises(Refused) as caught:
        write(folder)
    assert caught.value.message == (
        "cannot write the checkpoint: draft/latest.md: is a symlink; a symlink cannot travel safely"
    )
    assert caught.value.hint == "replace it with a copy of the file or folder it points to"
    assert not (folder / "checkpoint.json").exists()


def upper_draft(folder: Path) -> None:
    (folder / "Draft").mkdir()
    (folder / "Draft" / "report.md").write_bytes(b"")


def test_write_refuses_special_files_bad_names_and_collisions(tmp_path: Path) -> None:
    cases: list[tuple[Callable[[Path], object], str]] = [
        (lambda f: os.mkfifo(f / "pipe"), "pipe: is not a regular file"),
        (lambda f: (f / "a\nb.md").write_bytes(b""), '"a\\nb.md": path has a control character'),
        (lambda f: (f / "a\\b.md").write_bytes(b""), "a\\b.md: path has a backslash (paths use /)"),
        (lambda f: (f / os.fsdecode(b"bad\xff.md")).write_bytes(b""),
         "bad\\xff.md: file name is not valid UTF-8"),
        (upper_draft, "draft/report.md: collides with Draft/report.md under case folding"),
    ]
    for index, (make, message) in enumerate(cases):
        folder = make_run(tmp_path / f"run{index}")
        make(folder)
        with pytest.raises(Refused) as caught:
            write(folder)
        assert caught.value.message == f"cannot write the checkpoint: {message}"


# ------------------------------------------------------------------------------ round trip


def test_copytree_round_trip_verifies(run: Path, tmp_path: Path) -> None:
    digest = sha((run / "checkpoint.json").read_bytes())
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    verification = verify_checkpoint(copy, expected_sha256=digest.upper())
    assert found(verification) == []
    assert (verification.ok, verification.sha256, verification.files,
            verification.total_bytes) == (True, digest, 3, 43)
    assert verification.checkpoint is not None
    assert verification.checkpoint["restart_stages"] == {"main": "Draft"}
    verification.raise_if_invalid()


def test_cp_r_with_other_mtimes_and_modes_verifies(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(run), str(copy)], check=True)
    for path in copy.rglob("*"):
        os.utime(path, (0, 0))
        if path.is_file():
            path.chmod(0o600)
    assert verify_checkpoint(copy).ok is True
    (copy / "logs" / "stage.log").write_bytes(b"started Draft!")  # one byte changed, same size
    before, after = sha(FILES["logs/stage.log"]), sha(b"started Draft!")
    assert found(verify_checkpoint(copy)) == [
        ("content_changed", "logs/stage.log",
         f"content changed (sha256 {after} expected {before})"),
    ]


def test_progress_reports_bytes_done_and_total(run: Path) -> None:
    calls: list[tuple[int, int]] = []
    verify_checkpoint(run, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(24, 43), (38, 43), (43, 43)]


# ------------------------------------------------------------------------------ files


def test_size_changed_names_the_file(run: Path) -> None:
    (run / "draft" / "report.md").write_bytes(FILES["draft/report.md"] + b"x")
    assert found(verify_checkpoint(run)) == [
        ("size_changed", "draft/report.md", "size changed (25 bytes, expected 24)"),
    ]


def test_deleted_file_is_missing(run: Path) -> None:
    (run / CAFE).unlink()
    verification = verify_checkpoint(run)
    assert found(verification) == [("file_missing", CAFE, "listed file is missing")]
    assert (verification.ok, verification.total_bytes) == (False, 38)
    with pytest.raises(CheckpointInvalid) as caught:
        verification.raise_if_invalid()
    assert caught.value.message == "checkpoint invalid: 1 problem"
    assert caught.value.exit_code == 3
    assert caught.value.to_json()["problems"] == [
        {"code": "file_missing", "path": CAFE, "message": "listed file is missing"},
    ]


def test_extra_files_are_problems(run: Path) -> None:
    (run / "notes" / "x.md").write_bytes(b"added later\n")
    (run / ".checkpoint.json.tmp").write_bytes(b"")
    os.mkfifo(run / "notes" / "pipe")
    assert found(verify_checkpoint(run)) == [
        ("extra_file", ".checkpoint.json.tmp", "extra file not in the checkpoint"),
        ("extra_special", "notes/pipe",
         "extra special file (not a regular file) not in the checkpoint"),
        ("extra_file", "notes/x.md", "extra file not in the checkpoint"),
    ]


def test_extra_files_past_one_hundred_are_counted(run: Path) -> None:
    for n in range(102):
        (run / "logs" / f"extra{n:03}.log").write_bytes(b"")
    problems = verify_checkpoint(run).problems
    assert len(problems) == 101
    assert problems[99] == Problem("extra_file", "logs/extra099.log",
                                   "extra file not in the checkpoint")
    assert problems[100] == Problem("extra_more", None,
                                    "and 2 more extra files not in the checkpoint")


def test_symlinks_inside_are_named(run: Path, tmp_path: Path) -> None:
    (run / "draft" / "latest.md").symlink_to("report.md")
    report = run / "logs" / "stage.log"
    report.unlink()
    report.symlink_to("../draft/report.md")
    assert found(verify_checkpoint(run)) == [
        ("path_symlink", "logs/stage.log", "is a symlink; a symlink cannot travel safely"),
        ("extra_symlink", "draft/latest.md", "extra symlink not in the checkpoint"),
    ]


def test_a_symlinked_folder_inside_and_outside(run: Path, tmp_path: Path) -> None:
    elsewhere = make_run(tmp_path / "elsewhere")
    shutil.rmtree(run / "draft")
    (run / "draft").symlink_to(elsewhere / "draft")
    shutil.move(run / "notes", run / "real-notes")
    (run / "notes").symlink_to("real-notes")
    assert found(verify_checkpoint(run)) == [
        ("path_escapes", "draft/report.md",
         "goes outside the folder through the symlink draft "
         f"(to {(elsewhere / 'draft').resolve()})"),
        ("path_symlink", CAFE, "goes through the symlink notes"),
        ("extra_symlink", "draft", "extra symlink not in the checkpoint"),
        ("extra_symlink", "notes", "extra symlink not in the checkpoint"),
        ("extra_file", "real-notes/caf\u00e9 menu.md", "extra file not in the checkpoint"),
    ]


def test_parent_that_is_a_file_and_listed_folder(run: Path) -> None:
    rewrite(run, listing(
        ("draft/report.md/inner.md", 1, "0" * 64),
        ("logs", 14, sha(FILES["logs/stage.log"])),
        ("draft/report.md", 24, sha(FILES["draft/report.md"])),
        (CAFE, 5, sha(FILES[CAFE])),
        ("logs/stage.log", 14, sha(FILES["logs/stage.log"])),
    ))
    assert found(verify_checkpoint(run)) == [
        ("file_missing", "draft/report.md/inner.md",
         "listed file is missing (draft/report.md is not a folder)"),
        ("file_not_regular", "logs", "is not a regular file"),
    ]


# ------------------------------------------------------------------------------ listed paths


def test_each_bad_listed_path_is_named(run: Path) -> None:
    digest = sha(FILES["draft/report.md"])
    bad = ["../outside.md", "/etc/passwd", "C:/report.md", "", "draft\\report.md",
           "draft/\x00.md", "draft/\nreport.md", "draft//report.md", "./draft/report.md",
           "draft/", "checkpoint.json", "draft/\udcff.md"]
    good = [("draft/report.md", 24, digest), (CAFE, 5, sha(FILES[CAFE])),
            ("logs/stage.log", 14, sha(FILES["logs/stage.log"]))]
    rewrite(run, listing(*good, *[(p, 24, digest) for p in bad]))
    assert found(verify_checkpoint(run)) == [
        ("path_dotdot", "../outside.md", "path goes up with '..'"),
        ("path_absolute", "/etc/passwd", "absolute path (paths are relative to the folder)"),
        ("path_absolute", "C:/report.md", "absolute path (paths are relative to the folder)"),
        ("path_empty", "", "empty path"),
        ("path_backslash", "draft\\report.md", "path has a backslash (paths use /)"),
        ("path_control", "draft/\x00.md", "path has a control character"),
        ("path_control", "draft/\nreport.md", "path has a control character"),
        ("path_not_normal", "draft//report.md", "path has an empty or '.' part"),
        ("path_not_normal", "./draft/report.md", "path has an empty or '.' part"),
        ("path_not_normal", "draft/", "path has an empty or '.' part"),
        ("path_reserved", "checkpoint.json", "the checkpoint cannot list itself"),
        ("path_control", "draft/\udcff.md", "path is not valid Unicode (lone surrogate)"),
    ]


def test_case_fold_collision(run: Path) -> None:
    (run / "A.md").write_bytes(b"upper\n")
    (run / "a.md").write_bytes(b"lower\n")
    rewrite(run, lambda doc: doc["files"].extend([
        {"path": "A.md", "size": 6, "sha256": sha(b"upper\n")},
        {"path": "a.md", "size": 6, "sha256": sha(b"lower\n")},
    ]))
    assert found(verify_checkpoint(run)) == [
        ("path_collision_case", "a.md", "collides with A.md under case folding"),
    ]


def test_unicode_normalization_collision(run: Path) -> None:
    nfd = "notes/cafe\u0301 menu.md"
    (run / nfd).write_bytes(b"soup\n")
    rewrite(run, lambda doc: doc["files"].append(
        {"path": nfd, "size": 5, "sha256": sha(b"soup\n")}))
    assert found(verify_checkpoint(run)) == [
        ("path_collision_unicode", nfd, "collides under Unicode normalization (NFC): "
         '"notes/caf\\u00e9 menu.md" vs "notes/cafe\\u0301 menu.md"'),
    ]


def test_duplicate_listing(run: Path) -> None:
    rewrite(run, lambda doc: doc["files"].append(dict(doc["files"][0])))
    assert found(verify_checkpoint(run)) == [("path_duplicate", "draft/report.md", "listed twice")]


# ------------------------------------------------------------------------------ the checkpoint


def test_expected_sha256_mismatch(run: Path) -> None:
    actual = sha((run / "checkpoint.json").read_bytes())
    verification = verify_checkpoint(run, expected_sha256="ab" * 32)
    assert found(verification) == [
        ("checkpoint_digest", "checkpoint.json",
         f"sha256 {actual} does not match the expected {'ab' * 32}"),
    ]
    assert verification.sha256 == actual
    with pytest.raises(UserError) as caught:
        verify_checkpoint(run, expected_sha256="abc")
    assert caught.value.message == "not a SHA-256 digest (64 hex digits): 'abc'"


def test_a_reformatted_checkpoint_fails_the_expected_digest(run: Path) -> None:
    released = sha((run / "checkpoint.json").read_bytes())
    rewrite(run, lambda doc: doc.update())  # same content, other bytes
    assert [p.code for p in verify_checkpoint(run, expected_sha256=released).problems] == [
        "checkpoint_digest"]
    assert verify_checkpoint(run).ok is True


def test_missing_huge_symlinked_or_folder_checkpoint(run: Path, tmp_path: Path) -> None:
    path = run / "checkpoint.json"
    kept = tmp_path / "kept.json"
    path.rename(kept)
    assert found(verify_checkpoint(run)) == [
        ("checkpoint_missing", "checkpoint.json", "no checkpoint in this folder")]
    path.symlink_to(kept)
    assert found(verify_checkpoint(run)) == [
        ("checkpoint_not_regular", "checkpoint.json", "is a symlink")]
    path.unlink()
    path.mkdir()
    assert found(verify_checkpoint(run)) == [
        ("checkpoint_not_regular", "checkpoint.json", "is not a regular file")]
    path.rmdir()
    sparse(path, MAX_CHECKPOINT_BYTES + 1)
    verification = verify_checkpoint(run)
    assert found(verification) == [
        ("checkpoint_too_large", "checkpoint.json",
         "is larger than the limit of 16,777,216 bytes (16 MiB)")]
    assert (verification.ok, verification.sha256) == (False, None)


def test_folder_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(NotFound) as caught:
        verify_checkpoint(tmp_path / "nowhere")
    assert caught.value.message == f"not a folder: {tmp_path / 'nowhere'}"
    assert caught.value.exit_code == 1  # not found (issue 15, point 3)


def test_display_path_quotes_unusual_names() -> None:
    assert display_path("notes/caf\u00e9 menu.md") == "notes/caf\u00e9 menu.md"
    assert display_path("") == '""'
    assert display_path(" lead.md") == '" lead.md"'
    assert display_path("a\nb\t\x00\"\\\udcff.md") == '"a\\nb\\t\\u0000\\"\\\\\\udcff.md"'
    assert Problem("extra_file", "x\n", "m").format() == '"x\\n": m'
    assert Problem("too_many_files", None, "m").format() == "m"
