"""Before a relinquish stops anything, the run folder is checked against the limits
(:func:`check_fits`); a retried handover finds the checkpoint it already wrote
(:func:`written_by_this_handover`), and never an older one (issue 12)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from bees_cli.handover.checkpoint import Limits
from bees_cli.handover.fits import DoesNotFit, check_fits
from bees_cli.handover.once import written_by_this_handover
from tests.handover.helpers import make_run, write

SMALL = Limits(max_files=4, max_file_bytes=10, max_total_bytes=25)
ADDS = {"snapshot.json": 5, "item.json": 5}


def refusal(folder: Path, adds: dict[str, int] = ADDS) -> str:
    with pytest.raises(DoesNotFit) as refused:
        check_fits(folder, adds=adds, limits=SMALL)
    return str(refused.value)


def test_a_folder_that_fits_passes_and_a_missing_one_is_empty(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", {"a.txt": b"12345", "b.txt": b"12345"})
    check_fits(folder, adds=ADDS, limits=SMALL)
    check_fits(tmp_path / "not-yet", adds=ADDS, limits=SMALL)


def test_the_files_the_handover_adds_count_and_replace_their_namesakes(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", {"a.txt": b"1", "b.txt": b"1", "c.txt": b"1"})
    assert refusal(folder) == "5 files to hand over; the limit is 4 files"
    (folder / "c.txt").unlink()
    (folder / "item.json").write_bytes(b"0123456789")  # replaced by the handover's 5 bytes
    check_fits(folder, adds=ADDS, limits=SMALL)


def test_each_limit_names_the_file(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", {"big.bin": b"x" * 11})
    assert refusal(folder) == "big.bin: is larger than the limit of 10 bytes per file"
    folder = make_run(tmp_path / "run2", {"a.bin": b"x" * 10, "b.bin": b"x" * 10})
    assert refusal(folder) == (
        "snapshot.json: brings the files past the limit of 25 bytes in all")


def test_what_cannot_travel_is_refused(tmp_path: Path) -> None:
    folder = make_run(tmp_path / "run", {"a.txt": b"1"})
    (folder / "link").symlink_to(folder / "a.txt")
    assert refusal(folder) == "link: is a symlink; a symlink cannot travel safely"
    (folder / "link").unlink()
    (folder / "A.TXT").write_bytes(b"2")
    assert refusal(folder) == "a.txt: collides with A.TXT under case folding"
    (folder / "A.TXT").unlink()
    (folder / "checkpoint.json").mkdir()
    assert refusal(folder) == "checkpoint.json: exists and is not a regular file"


def test_a_retry_reuses_this_handovers_checkpoint_and_not_an_older_one(run: Path) -> None:
    item, machine = "01JH2Q0000000000000000TEST", "m-1"
    facts = {"item_id": item, "machine_id": machine, "restart_stages": {"main": "Draft"},
             "process_digest": "p" * 64}
    info = write(run, **{k: v for k, v in facts.items() if k != "item_id"})
    written_at = "2026-01-05T09:30:00.000000Z"
    found = written_by_this_handover(run, **facts, asked_at=written_at)
    assert found is not None
    assert (found.sha256, found.files, found.total_bytes) == (
        info.sha256, info.files, info.total_bytes)
    assert found.sha256 == hashlib.sha256((run / "checkpoint.json").read_bytes()).hexdigest()
    # asked after it was written: an earlier handover's checkpoint
    assert written_by_this_handover(run, **facts, asked_at="2026-01-05T09:30:00.000001Z") \
        is None
    # another machine's, other restart stages, a changed file: not this handover's
    assert written_by_this_handover(run, **{**facts, "machine_id": "m-2"},
                                    asked_at=written_at) is None
    assert written_by_this_handover(run, **{**facts, "restart_stages": {"main": "Review"}},
                                    asked_at=written_at) is None
    (run / "logs" / "stage.log").write_bytes(b"changed\n")
    assert written_by_this_handover(run, **facts, asked_at=written_at) is None
