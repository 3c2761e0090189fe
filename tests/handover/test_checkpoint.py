"""The checkpoint library: what write_checkpoint writes, each problem verify_checkpoint names."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from bees_cli.errors import NotFound, Refused, UserError
from bees_cli.handover.checkpoint import (
    DEFAULT_LIMITS,
    MAX_CHECKPOINT_BYTES,
    CheckpointInfo,
    CheckpointInvalid,
    Limits,
    Problem,
    Verification,
    canonical_json,
    display_path,
    verify_checkpoint,
    write_checkpoint,
)

NOW = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
CAFE = "notes/caf\u00e9 menu.md"
FILES = {
    "draft/report.md": b"# Weekly report\n\nDraft.\n",
    "logs/stage.log": b"started Draft\n",
    CAFE: b"soup\n",
}
MB20 = 20_000_000
ZEROS_20MB = hashlib.sha256(bytes(MB20)).hexdigest()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_run(folder: Path, files: dict[str, bytes] = FILES) -> Path:
    for rel, data in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return folder


def write(folder: Path, **overrides: Any) -> CheckpointInfo:
    args: dict[str, Any] = {
        "item_id": "01JH2Q0000000000000000TEST",
        "workspace": "maya",
        "process_digest": "sha256:abc",
        "restart_stages": {"main": "Draft"},
        "computer": "maya-laptop",
        "machine_id": "m" * 32,
        "journal": [{"action": "mail.send", "to": "sam@example.com"}],
        "now": NOW,
    }
    args.update(overrides)
    return write_checkpoint(folder, **args)


def rewrite(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Hand-edit checkpoint.json: load it, apply ``change``, save it (ASCII-escaped JSON)."""
    path = folder / "checkpoint.json"
    doc = json.loads(path.read_bytes())
    change(doc)
    path.write_text(json.dumps(doc, indent=1), encoding="ascii")


def listing(*entries: tuple[str, int, str]) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["files"] = [{"path": p, "size": s, "sha256": h} for p, s, h in entries]

    return change


def found(verification: Verification) -> list[tuple[str, str | None, str]]:
    return [(p.code, p.path, p.message) for p in verification.problems]


def sparse(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.truncate(size)


@pytest.fixture
def run(tmp_path: Path) -> Path:
    folder = make_run(tmp_path / "run")
    write(folder)
    return folder


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


def test_write_refuses_past_each_limit(tmp_path: Path) -> None:
    many = tmp_path / "many"
    many.mkdir()
    for n in range(1_001):
        (many / f"{n:04}.md").write_bytes(b"")
    with pytest.raises(Refused) as caught:
        write(many)
    assert caught.value.message == (
        "cannot write the checkpoint: the run folder holds 1,001 files; the limit is 1,000 files"
    )

    big = tmp_path / "big"
    sparse(big / "video.bin", MB20 + 1)
    with pytest.raises(Refused) as caught:
        write(big)
    assert caught.value.message == (
        "cannot write the checkpoint: video.bin: is larger than the limit of "
        "20 MB (20,000,000 bytes) per file"
    )

    heavy = tmp_path / "heavy"
    for n in range(13):
        sparse(heavy / f"part{n:02}.bin", MB20)
    with pytest.raises(Refused) as caught:
        write(heavy)
    assert caught.value.message == (
        "cannot write the checkpoint: part12.bin: brings the files past the limit of "
        "250 MB (250,000,000 bytes) in all"
    )
    assert not (heavy / "checkpoint.json").exists()


def test_write_accepts_exactly_the_limits(tmp_path: Path) -> None:
    assert DEFAULT_LIMITS == Limits(max_files=1_000, max_file_bytes=20_000_000,
                                    max_total_bytes=250_000_000)
    folder = tmp_path / "full"
    for n in range(12):
        sparse(folder / f"part{n:02}.bin", MB20)
    sparse(folder / "rest.bin", 10_000_000)
    for n in range(987):
        (folder / "small" / f"{n:03}.md").parent.mkdir(exist_ok=True)
        (folder / "small" / f"{n:03}.md").write_bytes(b"")
    info = write(folder)
    assert (info.files, info.total_bytes) == (1_000, 250_000_000)
    verification = verify_checkpoint(folder, expected_sha256=info.sha256)
    assert (verification.ok, verification.files, verification.total_bytes) == (
        True, 1_000, 250_000_000)


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
        ("path_collision_unicode", nfd,
         f"collides with {CAFE} under Unicode normalization (NFC)"),
    ]


def test_duplicate_listing(run: Path) -> None:
    rewrite(run, lambda doc: doc["files"].append(dict(doc["files"][0])))
    assert found(verify_checkpoint(run)) == [("path_duplicate", "draft/report.md", "listed twice")]


# ------------------------------------------------------------------------------ limits


def test_one_thousand_and_one_files(tmp_path: Path) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    for n in range(1_000):
        (folder / f"{n:04}.md").write_bytes(b"")
    write(folder)
    (folder / "1000.md").write_bytes(b"")
    rewrite(folder, lambda doc: doc["files"].append(
        {"path": "1000.md", "size": 0, "sha256": sha(b"")}))
    verification = verify_checkpoint(folder)
    assert found(verification) == [
        ("too_many_files", None, "the checkpoint lists 1,001 files; the limit is 1,000 files"),
    ]
    assert verification.files == 1_001


def test_a_file_one_byte_over_twenty_mb(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    sparse(folder / "video.bin", MB20)
    write(folder)
    sparse(folder / "video.bin", MB20 + 1)
    verification = verify_checkpoint(folder)
    assert found(verification) == [
        ("file_too_large", "video.bin",
         "is larger than the limit of 20 MB (20,000,000 bytes) per file"),
    ]
    assert verification.total_bytes == MB20 + 1  # counting stopped one byte past the limit


def test_listed_sizes_are_not_trusted(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    sparse(folder / "video.bin", 30_000_000)
    write(folder, limits=Limits(max_file_bytes=40_000_000, max_total_bytes=40_000_000))
    rewrite(folder, lambda doc: doc["files"][0].update(size=10))
    assert found(verify_checkpoint(folder)) == [
        ("file_too_large", "video.bin",
         "is larger than the limit of 20 MB (20,000,000 bytes) per file"),
    ]


def test_more_than_250_mb_in_all(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    names = [f"part{n:02}.bin" for n in range(13)]
    for name in names:
        sparse(folder / name, MB20)
    write(folder, limits=Limits(max_total_bytes=260_000_000))
    verification = verify_checkpoint(folder)
    assert found(verification) == [
        ("total_too_large", "part12.bin",
         "brings the files past the limit of 250 MB (250,000,000 bytes) in all"),
    ]
    assert verification.total_bytes == 260_000_000


def test_past_the_total_the_rest_is_not_hashed(run: Path) -> None:
    (run / CAFE).write_bytes(b"changed, not hashed")
    small = Limits(max_files=10, max_file_bytes=30, max_total_bytes=30)
    verification = verify_checkpoint(run, limits=small)
    assert found(verification) == [
        ("total_too_large", "logs/stage.log",
         "brings the files past the limit of 30 bytes in all; 1 file after it not hashed"),
    ]
    assert verification.total_bytes == 38


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


def listing_format(value: object) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["format"] = value

    return change


def test_unknown_format(run: Path) -> None:
    values: list[tuple[object, str]] = [(2, "2"), ("1", '"1"'), (True, "true"), (None, "null")]
    for value, shown in values:
        rewrite(run, listing_format(value))
        verification = verify_checkpoint(run)
        assert found(verification) == [
            ("checkpoint_format", "checkpoint.json",
             f"unknown checkpoint format {shown} (this Bees reads format 1)"),
        ]
        assert verification.files == 0


def test_malformed_checkpoints(run: Path) -> None:
    path = run / "checkpoint.json"
    cases = [
        (b"{not json", "Expecting property name enclosed in double quotes at line 1 column 2"),
        (b'{"format": 1}\n{}', "Extra data at line 2 column 1"),
        (b'{"format": 1, "format": 1}', "duplicate key 'format'"),
        (b'{"format": NaN}', "NaN is not allowed"),
        (b'{"format": 1, "item": "\xff"}', "not UTF-8 at byte 23"),
        (b"[" * 100_000, "nested too deeply"),
    ]
    for data, detail in cases:
        path.write_bytes(data)
        verification = verify_checkpoint(run)
        assert found(verification) == [
            ("checkpoint_malformed", "checkpoint.json", f"not valid JSON: {detail}"),
        ]
        assert (verification.checkpoint, verification.sha256) == (None, sha(data))
    path.write_bytes(b"[1]")
    assert found(verify_checkpoint(run)) == [
        ("checkpoint_schema", "checkpoint.json", "must be a JSON object"),
    ]


def test_schema_problems_name_the_field(run: Path) -> None:
    def damage(doc: dict[str, Any]) -> None:
        del doc["machine_id"]
        doc["extra"] = 1
        doc["item"] = ""
        doc["restart_stages"] = {}
        doc["time"] = "2026-01-05 09:30"
        doc["journal"] = [1]
        doc["files"][0]["size"] = -1
        doc["files"][1]["sha256"] = "XYZ"
        doc["files"][2] = {"path": 3, "size": 5, "sha256": "0" * 64}
        doc["files"].append({"path": "x"})
        doc["files"].append("x")

    rewrite(run, damage)
    assert found(verify_checkpoint(run)) == [
        ("checkpoint_schema", "checkpoint.json", message) for message in [
            "missing field 'machine_id'",
            "unknown field 'extra'",
            "'item' must be a non-empty string",
            "'restart_stages' must map each piece to a stage name",
            "'time' must be a UTC time like 2026-01-05T09:30:00Z",
            "'journal' must be a list of objects",
            "files[0].size must be a whole number of bytes, 0 or more",
            "files[1].sha256 must be 64 lowercase hex digits",
            "files[2].path must be a string",
            "files[3] must have exactly 'path', 'size' and 'sha256'",
            "files[4] must be an object",
        ]
    ] + [
        ("extra_file", CAFE, "extra file not in the checkpoint"),
    ]


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
    assert caught.value.exit_code == 2


def test_display_path_quotes_unusual_names() -> None:
    assert display_path("notes/caf\u00e9 menu.md") == "notes/caf\u00e9 menu.md"
    assert display_path("") == '""'
    assert display_path(" lead.md") == '" lead.md"'
    assert display_path("a\nb\t\x00\"\\\udcff.md") == '"a\\nb\\t\\u0000\\"\\\\\\udcff.md"'
    assert Problem("extra_file", "x\n", "m").format() == '"x\\n": m'
    assert Problem("too_many_files", None, "m").format() == "m"
