"""The handover limits decided in one place, :meth:`Limits.problems` (issue 24, point 4),
tested directly: each limit below, at and above its bound, with exact values and wording;
then relinquish, verify and continue refusing the same over-limit checkpoint alike.

The post: a handover takes at most 1,000 files, 20 MB each and 250 MB in all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from bees_cli.errors import Refused
from bees_cli.handover.checkpoint import CheckpointInvalid, verify_checkpoint
from bees_cli.handover.continue_ import prepare_continue
from bees_cli.handover.fits import DoesNotFit, check_fits
from bees_cli.handover.limits import DEFAULT_LIMITS, MAX_CHECKPOINT_BYTES, Limits
from bees_cli.handover.problems import Problem, ProblemCode
from bees_cli.machine.computer import Computer
from tests.handover.helpers import MB20, sparse, write

SMALL = Limits(max_files=3, max_file_bytes=10, max_total_bytes=25)
TOO_MANY = ProblemCode.TOO_MANY_FILES
TOO_LARGE = ProblemCode.FILE_TOO_LARGE
TOTAL = ProblemCode.TOTAL_TOO_LARGE


def found(problems: list[Problem]) -> list[tuple[str, str | None, str]]:
    return [(str(p.code), p.path, p.message) for p in problems]


def test_the_limits_are_the_posts_and_the_checkpoint_bound_is_16_mib() -> None:
    assert DEFAULT_LIMITS == Limits(max_files=1_000, max_file_bytes=20_000_000,
                                    max_total_bytes=250_000_000)
    assert MAX_CHECKPOINT_BYTES == 16_777_216
    assert DEFAULT_LIMITS.describe() == "at most 1,000 files, 20 MB each, 250 MB in all"
    assert SMALL.describe() == "at most 3 files, 10 bytes each, 25 bytes in all"
    assert Limits(max_files=1, max_file_bytes=0, max_total_bytes=10**12).describe() == (
        "at most 1 file, 0 bytes each, 1,000,000 MB in all")


def test_the_limits_cannot_be_changed_in_place_and_count_is_named() -> None:
    # DEFAULT_LIMITS is every caller's default: changed in place, it would change for all
    with pytest.raises(FrozenInstanceError):
        DEFAULT_LIMITS.max_files = 2_000  # type: ignore[misc]
    with pytest.raises(TypeError):
        SMALL.problems([], 4)  # type: ignore[misc]


def test_nothing_and_files_within_every_limit_are_no_problem() -> None:
    assert SMALL.problems([]) == []
    assert SMALL.problems([("a", 0), ("b", 5), ("c", 9)]) == []


@pytest.mark.parametrize(("count", "problems"), [
    (2, []),
    (3, []),
    (4, [("too_many_files", None, "4 files to hand over; the limit is 3 files")]),
])
def test_the_file_count_below_at_and_above_its_bound(
        count: int, problems: list[tuple[str, str | None, str]]) -> None:
    files = [(f"f{n}", 0) for n in range(count)]
    assert found(SMALL.problems(files)) == problems


def test_the_count_given_is_the_count_judged() -> None:
    assert found(SMALL.problems([], count=4)) == [
        ("too_many_files", None, "4 files to hand over; the limit is 3 files")]
    assert SMALL.problems([("a", 0)] * 4, count=3) == []
    assert found(Limits(max_files=1).problems([("a", 0), ("b", 0)])) == [
        ("too_many_files", None, "2 files to hand over; the limit is 1 file")]


@pytest.mark.parametrize(("size", "problems"), [
    (9, []),
    (10, []),
    (11, [("file_too_large", "big.bin",
           "is larger than the limit of 10 bytes per file")]),
])
def test_one_files_size_below_at_and_above_its_bound(
        size: int, problems: list[tuple[str, str | None, str]]) -> None:
    assert found(SMALL.problems([("big.bin", size)])) == problems


@pytest.mark.parametrize(("last", "problems"), [
    (4, []),
    (5, []),
    (6, [("total_too_large", "c.bin",
          "brings the files past the limit of 25 bytes in all")]),
])
def test_the_total_below_at_and_above_its_bound(
        last: int, problems: list[tuple[str, str | None, str]]) -> None:
    files = [("a.bin", 10), ("b.bin", 10), ("c.bin", last)]
    assert found(SMALL.problems(files)) == problems


def test_every_problem_in_order_and_nothing_judged_past_the_total() -> None:
    files = [("a.bin", 11), ("b.bin", 3), ("c.bin", 12), ("d.bin", 1), ("e.bin", 99)]
    assert found(SMALL.problems(files)) == [
        ("too_many_files", None, "5 files to hand over; the limit is 3 files"),
        ("file_too_large", "a.bin", "is larger than the limit of 10 bytes per file"),
        ("file_too_large", "c.bin", "is larger than the limit of 10 bytes per file"),
        ("total_too_large", "c.bin", "brings the files past the limit of 25 bytes in all"),
    ]


def test_files_are_read_no_further_than_the_file_past_the_total() -> None:
    read: list[str] = []

    def sizes() -> Iterator[tuple[str, int]]:
        for path in ("a.bin", "b.bin", "c.bin", "d.bin"):
            read.append(path)
            yield path, 10

    assert found(SMALL.problems(sizes(), count=4)) == [
        ("too_many_files", None, "4 files to hand over; the limit is 3 files"),
        ("total_too_large", "c.bin", "brings the files past the limit of 25 bytes in all"),
    ]
    assert read == ["a.bin", "b.bin", "c.bin"]


def test_the_posts_bounds_in_bytes_with_exact_wording() -> None:
    at = [(f"part{n:02}.bin", MB20) for n in range(12)] + [("rest.bin", 10_000_000)]
    assert DEFAULT_LIMITS.problems(at + [(f"{n:03}.md", 0) for n in range(987)]) == []
    assert found(DEFAULT_LIMITS.problems([("video.bin", MB20 + 1)])) == [
        ("file_too_large", "video.bin",
         "is larger than the limit of 20 MB (20,000,000 bytes) per file")]
    assert found(DEFAULT_LIMITS.problems(at[:-1] + [("rest.bin", 10_000_001)])) == [
        ("total_too_large", "rest.bin",
         "brings the files past the limit of 250 MB (250,000,000 bytes) in all")]
    assert found(DEFAULT_LIMITS.problems([], count=1_001)) == [
        ("too_many_files", None, "1,001 files to hand over; the limit is 1,000 files")]


# Relinquish, verify and continue on the same over-limit checkpoint (written with a larger
# limit, as another Bees or a hand edit could): each refuses with the same sentence.

ITEM = "01JH2Q0000000000000000TEST"


def _over_the_count(folder: Path) -> None:
    folder.mkdir()
    for n in range(1_001):
        (folder / f"{n:04}.md").write_bytes(b"")


def _over_one_file(folder: Path) -> None:
    sparse(folder / "video.bin", MB20 + 1)


def _over_the_total(folder: Path) -> None:
    for n in range(13):
        sparse(folder / f"part{n:02}.bin", MB20)


@pytest.mark.parametrize(("make", "larger", "sentence"), [
    (_over_the_count, Limits(max_files=1_001),
     "1,001 files to hand over; the limit is 1,000 files"),
    (_over_one_file, Limits(max_file_bytes=MB20 + 1),
     "video.bin: is larger than the limit of 20 MB (20,000,000 bytes) per file"),
    (_over_the_total, Limits(max_total_bytes=13 * MB20),
     "part12.bin: brings the files past the limit of 250 MB (250,000,000 bytes) in all"),
], ids=["files", "file_bytes", "total_bytes"])
def test_relinquish_verify_and_continue_refuse_alike(
        make: Callable[[Path], None], larger: Limits, sentence: str, tmp_path: Path,
        bees_home: Path) -> None:
    folder = tmp_path / "run"
    make(folder)
    info = write(folder, item_id=ITEM, limits=larger)

    # relinquish: before the stage stops, then when the run writes the checkpoint
    with pytest.raises(DoesNotFit) as fits:
        check_fits(folder, adds={})
    assert str(fits.value) == sentence
    with pytest.raises(Refused) as written:
        write(folder, item_id=ITEM)
    assert written.value.message == f"cannot write the checkpoint: {sentence}"

    # verify (bees checkpoint verify)
    verification = verify_checkpoint(folder, expected_sha256=info.sha256)
    assert [p.format() for p in verification.problems] == [sentence]

    # continue (bees continue ITEM --from DIR --digest SHA): refused at verification
    with pytest.raises(CheckpointInvalid) as invalid:
        prepare_continue(ITEM, from_dir=folder, digest=info.sha256, computer=Computer.load())
    assert [p.format() for p in invalid.value.problems] == [sentence]
