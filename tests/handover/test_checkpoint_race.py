"""Verify reaches each listed file through folder descriptors without following a symlink, so
a symlink swapped in after the check is refused (issue 16, point 5), on one thread or two."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from bees_cli.handover import checkpoint_hashing
from bees_cli.handover import verify as verify_module
from bees_cli.handover.checkpoint import Progress, verify_checkpoint
from tests.handover.helpers import FILES, found, make_run, sha, write


def _one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_module, "hashing_threads", lambda: 1)


def _after_first_file(swap: Callable[[], None]) -> Progress:
    """A progress callback that runs ``swap`` once, after the first file was hashed (the
    others were checked, not yet opened)."""
    calls: list[int] = []

    def progress(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 1:
            swap()

    return progress


def test_a_file_swapped_for_a_symlink_after_the_check_is_refused(
        run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _one_thread(monkeypatch)
    outside = tmp_path / "outside.log"
    outside.write_bytes(FILES["logs/stage.log"])  # same bytes: only the symlink can tell

    def swap() -> None:
        (run / "logs" / "stage.log").unlink()
        (run / "logs" / "stage.log").symlink_to(outside)

    verification = verify_checkpoint(run, progress=_after_first_file(swap))
    assert found(verification) == [
        ("path_escapes", "logs/stage.log",
         f"goes outside the folder through the symlink logs/stage.log (to {outside.resolve()})"),
    ]
    assert verification.total_bytes == 24 + 5


def test_a_folder_swapped_for_a_symlink_after_the_check_is_refused(
        run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _one_thread(monkeypatch)
    elsewhere = tmp_path / "elsewhere"

    def swap() -> None:  # the same files, moved out, and a symlink to them in their place
        shutil.move(run / "logs", elsewhere)
        (run / "logs").symlink_to(elsewhere)

    verification = verify_checkpoint(run, progress=_after_first_file(swap))
    assert found(verification)[0] == (
        "path_escapes", "logs/stage.log",
        f"goes outside the folder through the symlink logs (to {elsewhere.resolve()})")
    assert verification.ok is False


@pytest.mark.parametrize("threads", [1, 2])
def test_one_or_two_threads_report_alike_in_listed_order(
        threads: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_module, "hashing_threads", lambda: threads)
    monkeypatch.setattr(checkpoint_hashing, "BATCH_BYTES", 3_000)  # batches of 2 files
    files = {f"part{n % 3}/file{n:02}.bin": bytes([n]) * (1000 + n) for n in range(40)}
    folder = make_run(tmp_path / "run", files)
    write(folder)
    (folder / "part1" / "file07.bin").write_bytes(bytes([9]) * 1007)  # same size, changed
    (folder / "part2" / "file08.bin").write_bytes(b"short")
    calls: list[tuple[int, int]] = []
    verification = verify_checkpoint(folder, progress=lambda d, t: calls.append((d, t)))
    assert found(verification) == [
        ("content_changed", "part1/file07.bin",
         f"content changed (sha256 {sha(bytes([9]) * 1007)} expected {sha(bytes([7]) * 1007)})"),
        ("size_changed", "part2/file08.bin", "size changed (5 bytes, expected 1,008)"),
    ]
    sizes = [len(files[p]) if p != "part2/file08.bin" else 5 for p in sorted(files)]
    total = sum(sizes)
    assert calls == [(sum(sizes[: n + 1]), total) for n in range(40)]
    assert verification.total_bytes == total


def test_batches_keep_order_and_hold_a_larger_item_alone() -> None:
    sizes = [1, 2, 3, 10, 1, 1]
    assert checkpoint_hashing.batches(sizes, lambda n: n, 4) == [[1, 2], [3], [10], [1, 1]]
    assert checkpoint_hashing.batches([], lambda n: n, 4) == []
