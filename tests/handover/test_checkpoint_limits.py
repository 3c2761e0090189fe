"""The limits of a handover: exactly at each limit passes, one past it fails (write and verify).

Sizes are real (sparse files cost no disk; hashing 250 MB of them takes a fraction of a
second), so a mutated constant or comparison in ``handover/limits.py``, ``write.py`` or
``verify.py`` fails here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bees_cli.errors import Refused
from bees_cli.handover.checkpoint import (
    CHUNK_BYTES,
    DEFAULT_LIMITS,
    MAX_CHECKPOINT_BYTES,
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_TOTAL_BYTES,
    Limits,
    verify_checkpoint,
)
from tests.handover.helpers import CAFE, MB20, found, rewrite, sha, sparse, write


def _keep_only(folder: Path, names: set[str]) -> None:
    """Remove whatever a test added at the top of a shared folder (its checkpoint.json…)."""
    for path in folder.iterdir():
        if path.name not in names:
            path.unlink()


THOUSAND = {f"{n:04}.md" for n in range(1_000)}


@pytest.fixture(scope="module")
def thousand_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``0000.md`` … ``0999.md``, empty, created once for this file (1,000 files cost the
    kernel about a second each time they are created)."""
    folder = tmp_path_factory.mktemp("thousand")
    for name in sorted(THOUSAND):
        (folder / name).write_bytes(b"")
    return folder


@pytest.fixture
def thousand(thousand_base: Path) -> Path:
    """A folder of exactly the 1,000 empty files ``0000.md`` … ``0999.md``."""
    _keep_only(thousand_base, THOUSAND)
    assert {(p.name, p.stat().st_size) for p in thousand_base.iterdir()} == {
        (name, 0) for name in THOUSAND}
    return thousand_base


def test_write_refuses_past_each_limit(tmp_path: Path, thousand: Path) -> None:
    many = thousand
    (many / "1000.md").write_bytes(b"")  # 1,001 empty files: 0000.md … 1000.md
    with pytest.raises(Refused) as caught:
        write(many)
    assert caught.value.message == (
        "cannot write the checkpoint: 1,001 files to hand over; the limit is 1,000 files"
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


PARTS = [f"part{n:02}.bin" for n in range(12)]
SMALL = {f"{n:03}.md" for n in range(987)}


@pytest.fixture(scope="module")
def full_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 987 empty files of :func:`full_folder`'s ``small/``, created once for this file."""
    folder = tmp_path_factory.mktemp("full")
    (folder / "small").mkdir()
    for name in sorted(SMALL):
        (folder / "small" / name).write_bytes(b"")
    return folder


@pytest.fixture
def full_folder(full_base: Path) -> Callable[[int], Path]:
    """1,000 files: twelve of exactly 20 MB, ``rest.bin`` of ``rest_bytes``, 987 empty ones
    in ``small/`` (nothing else: what an earlier test wrote is removed, sizes set again)."""

    def make(rest_bytes: int) -> Path:
        _keep_only(full_base, {*PARTS, "rest.bin", "small"})
        for name in PARTS:
            sparse(full_base / name, MB20)
        sparse(full_base / "rest.bin", rest_bytes)
        small = full_base / "small"
        assert {(p.name, p.stat().st_size) for p in small.iterdir()} == {
            (name, 0) for name in SMALL}
        return full_base

    return make


def test_the_limits_are_the_posts() -> None:
    assert (MAX_FILES, MAX_FILE_BYTES, MAX_TOTAL_BYTES) == (1_000, 20_000_000, 250_000_000)
    assert DEFAULT_LIMITS == Limits(max_files=1_000, max_file_bytes=20_000_000,
                                    max_total_bytes=250_000_000)


def test_write_accepts_exactly_the_limits(full_folder: Callable[[int], Path]) -> None:
    folder = full_folder(10_000_000)
    info = write(folder)
    assert (info.files, info.total_bytes) == (1_000, 250_000_000)
    verification = verify_checkpoint(folder, expected_sha256=info.sha256)
    assert (verification.ok, verification.files, verification.total_bytes) == (
        True, 1_000, 250_000_000)


def test_write_refuses_one_byte_over_250_mb_in_all(full_folder: Callable[[int], Path]) -> None:
    folder = full_folder(10_000_001)
    with pytest.raises(Refused) as caught:
        write(folder)
    assert caught.value.message == (
        "cannot write the checkpoint: rest.bin: brings the files past the limit of "
        "250 MB (250,000,000 bytes) in all"
    )
    assert not (folder / "checkpoint.json").exists()


def test_verify_refuses_one_byte_over_250_mb_in_all(full_folder: Callable[[int], Path]) -> None:
    folder = full_folder(10_000_001)
    write(folder, limits=Limits(max_total_bytes=250_000_001))
    verification = verify_checkpoint(folder)
    assert found(verification) == [
        ("total_too_large", "rest.bin",
         "brings the files past the limit of 250 MB (250,000,000 bytes) in all; "
         "987 files after it not hashed"),
    ]
    assert (verification.files, verification.total_bytes) == (1_000, 250_000_001)


def test_a_checkpoint_of_exactly_16_mib_is_read(run: Path) -> None:
    path = run / "checkpoint.json"
    path.write_bytes(b" " * (MAX_CHECKPOINT_BYTES - 2) + b"[]")
    assert found(verify_checkpoint(run)) == [
        ("checkpoint_schema", "checkpoint.json", "must be a JSON object"),
    ]
    path.write_bytes(b" " * (MAX_CHECKPOINT_BYTES - 1) + b"[]")
    assert found(verify_checkpoint(run)) == [
        ("checkpoint_too_large", "checkpoint.json",
         "is larger than the limit of 16,777,216 bytes (16 MiB)"),
    ]


def test_write_refuses_a_checkpoint_over_16_mib(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    base = write(folder, journal=[{"pad": ""}]).path.stat().st_size
    pad = "x" * (MAX_CHECKPOINT_BYTES - base)
    info = write(folder, journal=[{"pad": pad}])
    assert info.path.stat().st_size == MAX_CHECKPOINT_BYTES
    with pytest.raises(Refused) as caught:
        write(folder, journal=[{"pad": pad + "x"}])
    assert caught.value.message == (
        "cannot write the checkpoint: checkpoint.json: would be 16,777,217 bytes; "
        "the limit is 16,777,216 bytes (16 MiB)"
    )


def test_one_thousand_and_one_files(thousand: Path) -> None:
    folder = thousand
    write(folder)
    (folder / "1000.md").write_bytes(b"")
    rewrite(folder, lambda doc: doc["files"].append(
        {"path": "1000.md", "size": 0, "sha256": sha(b"")}))
    verification = verify_checkpoint(folder)
    assert found(verification) == [
        ("too_many_files", None, "1,001 files to hand over; the limit is 1,000 files"),
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


def test_one_byte_over_a_limit_of_whole_read_chunks(tmp_path: Path) -> None:
    # Hashing reads CHUNK_BYTES at a time; a limit that is a whole number of chunks must
    # still read the byte past it.
    limits = Limits(max_file_bytes=2 * CHUNK_BYTES, max_total_bytes=4 * CHUNK_BYTES)
    folder = tmp_path / "run"
    sparse(folder / "video.bin", 2 * CHUNK_BYTES)
    write(folder, limits=limits)
    sparse(folder / "video.bin", 2 * CHUNK_BYTES + 1)
    with pytest.raises(Refused) as caught:
        write(folder, limits=limits)
    assert caught.value.message == (
        "cannot write the checkpoint: video.bin: is larger than the limit of "
        "2,097,152 bytes per file"
    )
    verification = verify_checkpoint(folder, limits=limits)
    assert found(verification) == [
        ("file_too_large", "video.bin", "is larger than the limit of 2,097,152 bytes per file"),
    ]
    assert verification.total_bytes == 2 * CHUNK_BYTES + 1
