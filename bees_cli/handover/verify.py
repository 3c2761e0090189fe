"""Verifying a run folder's checkpoint on continue: the document, every listed file, the limits."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Generator
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from bees_cli.errors import NotFound
from bees_cli.handover.checkpoint_hashing import (
    ROOT_FLAGS,
    ChunksInOrder,
    FolderFds,
    ThreadFds,
    batches,
    hashing_threads,
    in_order,
)
from bees_cli.handover.checkpoint_model import CheckpointDocument
from bees_cli.handover.checkpoint_read import digest_given, read_document
from bees_cli.handover.folder import (
    NotRegular,
    Scan,
    disk_name,
    find_collisions,
    locate,
    nfc,
    path_problem,
    scan_folder,
    unicode_collision,
)
from bees_cli.handover.limits import DEFAULT_LIMITS, Limits
from bees_cli.handover.problems import (
    CheckpointInvalid,
    Problem,
    ProblemCode,
    plural,
)

MAX_EXTRA_REPORTED = 100  # extra files named one by one; the rest are counted

Progress = Callable[[int, int], None]
"""Called as ``progress(bytes_done, bytes_total)`` while hashing."""


class Located(NamedTuple):
    """A listed file found on disk as a regular file: its listed path, size and SHA-256,
    its name on disk (another spelling under NFC, or the same) and its size on disk."""

    path: str
    size: int
    sha256: str
    name: str
    disk_size: int


@dataclass
class Verification:
    """The verdict of :func:`verify_checkpoint`.

    Attributes:
        ok: True when there is no problem.
        problems: every problem found, in a stable order.
        checkpoint: the parsed JSON object as read (also when a field is wrong), or None
            when it could not be read or parsed.
        sha256: SHA-256 of the checkpoint file's bytes, or None when it could not be read.
        files: number of files the checkpoint lists (0 when unreadable).
        total_bytes: bytes actually read from the listed files.
        document: the checkpoint as a validated :class:`CheckpointDocument`, or None when
            it could not be read, parsed or validated.
        leftovers: files a continue sets aside after its claim (relative paths): only on
            an item offered back by a retire (:mod:`bees_cli.handover.takeover`), else empty.
    """

    ok: bool
    problems: list[Problem]
    checkpoint: dict[str, Any] | None
    sha256: str | None
    files: int
    total_bytes: int
    document: CheckpointDocument | None = None
    leftovers: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Return ``{"ok", "sha256", "files", "total_bytes", "problems"}`` (CLI ``--json``)."""
        return {
            "ok": self.ok,
            "sha256": self.sha256,
            "files": self.files,
            "total_bytes": self.total_bytes,
            "problems": [p.to_json() for p in self.problems],
        }

    def raise_if_invalid(self) -> None:
        """Raise :class:`CheckpointInvalid` (exit 3) when there is any problem."""
        if not self.ok:
            raise CheckpointInvalid(self.problems)


def _by_nfc(names: list[str]) -> dict[str, list[str]]:
    """Return the names found on disk grouped by their NFC form, each group sorted."""
    groups: dict[str, list[str]] = {}
    for name in sorted(names):
        groups.setdefault(nfc(name), []).append(name)
    return groups


def verify_checkpoint(
    folder: Path,
    *,
    expected_sha256: str | None = None,
    progress: Progress | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Verification:
    """Verify the checkpoint of a run folder and every file it lists; collect every problem.

    Checks (the post's "Handing a run over"): ``checkpoint.json`` exists, is a regular file
    of at most 16 MiB, is strict JSON of format 1 that passes :class:`CheckpointDocument`
    (each wrong field named, see :func:`check_document`); its SHA-256
    equals ``expected_sha256`` when given; every listed path is well formed (relative, no
    ``..``, no empty or ``.`` part, no backslash, no control character, no collision with
    another under NFC or case folding); every listed file exists as a regular file inside
    the folder, reached without any symlink, with the listed size and SHA-256; the limits
    hold (:meth:`~bees_cli.handover.limits.Limits.problems`, as for relinquish: the number
    of files the checkpoint lists, and the sizes counted from the bytes read; a file is
    read at most one byte past its limit, and
    once the total passes its limit the remaining files are not reported: no more are
    started, and only the few batches already being hashed ahead are read to their end).
    The limits' problems follow those of the paths and of files missing or not regular.

    Files present but not listed are problems too, not warnings. Why: the restarted stage
    runs "from the top, using the saved files"; a file that was not there at relinquish
    (added by a sync conflict, a stray copy, or someone else) could change what that stage
    reads or does, and nothing vouches for its content.

    Names are compared by Unicode NFC, the form
    :func:`~bees_cli.handover.write.write_checkpoint` lists: a file whose name on disk is
    another spelling of a listed name (decomposed by macOS, or by a sync tool) is that
    listed file. Two or more names on disk with one NFC form are one problem
    that spells each in code points (``"caf\\u00e9"`` vs ``"cafe\\u0301"``), never a
    missing file and an extra one that print the same.

    Args:
        folder: the run folder (holding ``checkpoint.json`` at its top).
        expected_sha256: the checkpoint's SHA-256 as released to Bees Cloud, kept on this
            computer or given with ``--digest`` (64 hex digits), or None to skip that check.
        progress: called as ``progress(bytes_done, bytes_total)`` while hashing (bytes;
            the total is from the files' sizes on disk, capped at the per-file limit).
        limits: the handover limits (default: 1,000 files, 20 MB each, 250 MB in all).

    Returns:
        A :class:`Verification`; ``ok`` is True only when ``problems`` is empty.

    Raises:
        NotFound: ``folder`` does not exist or is not a folder (exit 2).
        UserError: ``expected_sha256`` is not 64 hex digits (exit 2).
    """
    expected_sha256 = digest_given(expected_sha256)
    if not folder.is_dir():
        raise NotFound(f"not a folder: {folder}")
    problems: list[Problem] = []
    doc, sha, checked = read_document(folder, expected_sha256, problems)
    if doc is None or checked is None:  # unreadable, not JSON, or of another format
        return Verification(ok=not problems, problems=problems, checkpoint=doc, sha256=sha,
                            files=0, total_bytes=0)
    listed_count = len(doc["files"]) if isinstance(doc.get("files"), list) else 0
    scan = scan_folder(folder)
    entries = [(e.path, e.size, e.sha256) for e in checked.entries]
    matched, total = _check_listed(folder, entries, scan, problems, _Hashing(
        limits=limits, count=listed_count, progress=progress))
    listed = {e[0] for e in entries}  # plus paths of malformed entries, already reported
    if isinstance(doc.get("files"), list):
        listed.update(e["path"] for e in doc["files"]
                      if isinstance(e, dict) and isinstance(e.get("path"), str))
    problems.extend(_not_listed(scan, listed | matched))
    return Verification(ok=not problems, problems=problems, checkpoint=doc, sha256=sha,
                        files=listed_count, total_bytes=total, document=checked.document)


@dataclass(frozen=True)
class _Hashing:
    """How the listed files are hashed and judged: the limits, how many files the
    checkpoint lists (for the limit on files), and the progress callback."""

    limits: Limits
    count: int
    progress: Progress | None


def _check_listed(folder: Path, entries: list[tuple[str, int, str]], scan: Scan,
                  problems: list[Problem], hashing: _Hashing) -> tuple[set[str], int]:
    """Check every listed file (path, size, SHA-256): its path as a string, then against
    the other listed paths, then on disk, then its bytes and the limits; append each
    problem.

    Returns:
        (the names on disk the listed paths account for, the bytes read).

    Raises:
        NotFound: ``folder`` is gone or was replaced since it was checked.
    """
    well_formed: list[tuple[str, int, str]] = []
    for entry in entries:
        listed_problem = path_problem(entry[0])
        if listed_problem is None:
            well_formed.append(entry)
        else:
            problems.append(listed_problem)
    collisions = find_collisions([e[0] for e in well_formed])
    problems.extend(collisions)
    # Every listed file is reached through folder descriptors opened without following a
    # symlink, to check it, then afresh to hash it (see FolderFds): whatever was swapped
    # in between, no symlink is followed.
    try:
        root_fd = os.open(folder, ROOT_FLAGS)
    except OSError as error:  # gone or replaced since the check above
        raise NotFound(f"not a folder: {folder}") from error
    checker, threads = FolderFds(root_fd), ThreadFds(root_fd)
    try:
        located, matched = _located(folder, checker, well_formed, scan, collisions, problems)
        checker.close()
        total = _hash_located(folder, located, threads, hashing, problems)
    finally:
        checker.close()
        threads.close()
        os.close(root_fd)
    return matched, total


def _located(folder: Path, checker: FolderFds, well_formed: list[tuple[str, int, str]],
             scan: Scan, collisions: list[Problem], problems: list[Problem]
             ) -> tuple[list[Located], set[str]]:
    """Find each well-formed listed file on disk by its NFC name (issue 12, point 5: a
    listed name matches its other spelling); append each problem.

    Returns:
        (the listed files found as regular files, the names on disk the listed paths
        account for, found or not).
    """
    on_disk = _by_nfc(scan.files + scan.symlinks + scan.special)
    colliding = {p.path for p in collisions}
    said_once = {nfc(p.path) for p in collisions
                 if p.code == ProblemCode.PATH_COLLISION_UNICODE and p.path is not None}
    matched: set[str] = set()
    located: list[Located] = []
    for path, size, digest in well_formed:
        names = on_disk.get(nfc(path), [])
        if nfc(path) in said_once:
            matched.update(names)
            continue
        if path in colliding:
            continue
        if len(names) > 1:
            problems.append(unicode_collision(path, names, on_disk=True))
            matched.update(names)
            continue
        matched.update(names)
        name = names[0] if names else path
        found = _locate(folder, checker, (path, size, digest, name))
        if isinstance(found, Problem):
            problems.append(found)
        else:
            located.append(found)
    return located, matched


def _not_listed(scan: Scan, accounted: set[str]) -> list[Problem]:
    """The problems of what is on disk but neither listed nor matched by a listed path
    (``accounted``): each extra file, symlink or special file by path, the first
    :data:`MAX_EXTRA_REPORTED` named and the rest counted; unreadable entries first."""
    problems = [Problem(ProblemCode.FOLDER_UNREADABLE, disk_name(rel), f"cannot read: {reason}")
                for rel, reason in scan.unreadable]
    extras: list[Problem] = []
    for rel in scan.files:
        if rel not in accounted:
            extras.append(Problem(ProblemCode.EXTRA_FILE, disk_name(rel),
                                  "extra file not in the checkpoint"))
    for rel in scan.symlinks:
        if rel not in accounted:
            extras.append(Problem(ProblemCode.EXTRA_SYMLINK, disk_name(rel),
                                  "extra symlink not in the checkpoint"))
    for rel in scan.special:
        if rel not in accounted:
            extras.append(Problem(ProblemCode.EXTRA_SPECIAL, disk_name(rel),
                                  "extra special file (not a regular file) not in the checkpoint"))
    extras.sort(key=lambda p: p.path or "")
    problems.extend(extras[:MAX_EXTRA_REPORTED])
    if len(extras) > MAX_EXTRA_REPORTED:
        more = len(extras) - MAX_EXTRA_REPORTED
        problems.append(Problem(ProblemCode.EXTRA_MORE, None,
                                f"and {plural(more, 'more extra file')} not in the checkpoint"))
    return problems


def _described(folder: Path, path: str, name: str, error: OSError | None) -> Problem:
    """The problem of a listed file that could not be checked or opened (from ``locate``)."""
    _, problem = locate(folder, folder.resolve(), name)
    if problem is not None:
        return replace(problem, path=path)
    if error is not None:  # it changed back meanwhile; say what happened when we looked
        return Problem(ProblemCode.FILE_UNREADABLE, path,
                       f"cannot read: {error.strerror or error}")
    return Problem(ProblemCode.FILE_NOT_REGULAR, path, "is not a regular file")


def _locate(folder: Path, fds: FolderFds, listed: tuple[str, int, str, str]
            ) -> Located | Problem:
    """Check one listed file (path, size, SHA-256, name on disk) is a regular file reached
    without a symlink (one ``lstat`` through folder descriptors): it with its size on disk,
    or its problem."""
    path, _, _, name = listed
    try:
        info = fds.lstat(name)
    except OSError as error:
        return _described(folder, path, name, error)
    if not stat.S_ISREG(info.st_mode):
        return _described(folder, path, name, None)
    return Located(*listed, info.st_size)


Outcome = tuple[int, str] | OSError | NotRegular
"""What hashing one located file gave: (bytes read, SHA-256), or why it could not be read."""


def _hash_located(folder: Path, located: list[Located], threads: ThreadFds,
                  hashing: _Hashing, problems: list[Problem]) -> int:
    """Hash ``located`` (each opened with ``O_NOFOLLOW`` through folder descriptors: a
    symlink swapped in after :func:`_locate` is refused) on :func:`hashing_threads`
    threads, in batches of a few MB (one hand-over between threads per batch, not per
    file), judging the sizes read with :meth:`Limits.problems` as they come, in the listed
    order; once the total passes its limit no more are read (at most the batches under way
    are) nor reported. Appends each problem; returns the bytes read."""
    limits, progress = hashing.limits, hashing.progress
    expected_total = sum(min(entry.disk_size, limits.max_file_bytes + 1) for entry in located)
    done = 0

    def report(count: int) -> None:
        nonlocal done
        done += count
        if progress is not None:
            progress(done, max(expected_total, done))

    chunks = ChunksInOrder(report)

    def work(batch: tuple[int, list[Located]]) -> list[Outcome]:
        number, entries = batch
        fds = threads.get()
        on_chunk = None if progress is None else lambda count: chunks.chunk(number, count)
        outcomes: list[Outcome] = []
        for entry in entries:
            try:
                outcomes.append(fds.hash(entry.name, limits.max_file_bytes, on_chunk))
            except (OSError, NotRegular) as error:
                outcomes.append(error)
        return outcomes

    hashed: list[tuple[Located, Outcome]] = []

    def sizes_read() -> Generator[tuple[str, int], None, None]:
        numbered = list(enumerate(batches(located, lambda entry: entry.disk_size)))
        done_batches = in_order(numbered, work, hashing_threads(), chunks.turn)
        with closing(done_batches):
            for (_, entries), outcomes in done_batches:
                if isinstance(outcomes, BaseException):
                    raise outcomes
                for entry, outcome in zip(entries, outcomes, strict=True):
                    hashed.append((entry, outcome))
                    if isinstance(outcome, tuple):
                        yield entry.path, outcome[0]

    with closing(sizes_read()) as sizes:
        over = limits.problems(sizes, count=hashing.count)
    problems.extend(_judged(folder, hashed, over, len(located)))
    return sum(outcome[0] for _, outcome in hashed if isinstance(outcome, tuple))


def _judged(folder: Path, hashed: list[tuple[Located, Outcome]], over: list[Problem],
            located: int) -> list[Problem]:
    """The problems of the files hashed, in the listed order: the limits broken first
    (``over``, from :meth:`Limits.problems`), then, file by file, why it could not be read,
    or that it is over the per-file limit, else that its size or content changed; the file
    that brings the total past its limit last, saying how many of the ``located`` files
    after it were not hashed."""
    found = [p for p in over if p.code == ProblemCode.TOO_MANY_FILES]
    too_large = {p.path: p for p in over if p.code == ProblemCode.FILE_TOO_LARGE}
    past = next((p for p in over if p.code == ProblemCode.TOTAL_TOO_LARGE), None)
    for index, (entry, outcome) in enumerate(hashed):
        if not isinstance(outcome, tuple):
            error = outcome if isinstance(outcome, OSError) else None
            found.append(_described(folder, entry.path, entry.name, error))
            continue
        real_size, real_digest = outcome
        if entry.path in too_large:
            found.append(too_large[entry.path])
        elif real_size != entry.size:
            found.append(Problem(ProblemCode.SIZE_CHANGED, entry.path,
                                 f"size changed ({real_size:,} bytes, expected {entry.size:,})"))
        elif real_digest != entry.sha256:
            found.append(Problem(
                ProblemCode.CONTENT_CHANGED, entry.path,
                f"content changed (sha256 {real_digest} expected {entry.sha256})"))
        if past is not None and past.path == entry.path:
            rest = located - index - 1
            found.append(replace(past, message=f"{past.message}; {plural(rest, 'file')} after "
                                               "it not hashed") if rest else past)
    return found
