"""Verifying a run folder's checkpoint on continue: the document, every listed file, the limits."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from bees_cli.errors import NotFound, UserError
from bees_cli.handover.checkpoint_hashing import (
    ROOT_FLAGS,
    ChunksInOrder,
    FolderFds,
    ThreadFds,
    batches,
    hashing_threads,
    in_order,
)
from bees_cli.handover.checkpoint_model import (
    CHECKPOINT_NAME,
    CheckpointDocument,
    check_document,
    parse_json,
)
from bees_cli.handover.folder import (
    CHUNK_BYTES,
    NotRegular,
    disk_name,
    find_collisions,
    locate,
    nfc,
    path_problem,
    scan_folder,
    unicode_collision,
)
from bees_cli.handover.limits import DEFAULT_LIMITS, MAX_CHECKPOINT_BYTES, Limits
from bees_cli.handover.problems import (
    CheckpointInvalid,
    Problem,
    ProblemCode,
    format_bytes,
    plural,
)

MAX_EXTRA_REPORTED = 100  # extra files named one by one; the rest are counted
_SHA256_RE = re.compile(r"[0-9a-f]{64}")

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
    """

    ok: bool
    problems: list[Problem]
    checkpoint: dict[str, Any] | None
    sha256: str | None
    files: int
    total_bytes: int
    document: CheckpointDocument | None = None

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


def read_checkpoint_bytes(root: Path) -> tuple[bytes | None, Problem | None]:
    """Read ``ROOT/checkpoint.json`` without following a symlink, at most 16 MiB.

    Returns:
        (its bytes, None), or (None, the problem: missing, not regular, unreadable, too large).
    """
    path = root / CHECKPOINT_NAME
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None, Problem(ProblemCode.CHECKPOINT_MISSING, CHECKPOINT_NAME,
                             "no checkpoint in this folder")
    except OSError as error:
        return None, Problem(ProblemCode.CHECKPOINT_UNREADABLE, CHECKPOINT_NAME,
                             f"cannot read: {error.strerror or error}")
    if stat.S_ISLNK(info.st_mode):
        return None, Problem(ProblemCode.CHECKPOINT_NOT_REGULAR, CHECKPOINT_NAME, "is a symlink")
    if not stat.S_ISREG(info.st_mode):
        return None, Problem(ProblemCode.CHECKPOINT_NOT_REGULAR, CHECKPOINT_NAME,
                             "is not a regular file")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb", buffering=0) as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None, Problem(ProblemCode.CHECKPOINT_NOT_REGULAR, CHECKPOINT_NAME,
                                     "is not a regular file")
            chunks = []
            size = 0
            while size <= MAX_CHECKPOINT_BYTES:
                chunk = handle.read(min(CHUNK_BYTES, MAX_CHECKPOINT_BYTES + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
    except OSError as error:
        return None, Problem(ProblemCode.CHECKPOINT_UNREADABLE, CHECKPOINT_NAME,
                             f"cannot read: {error.strerror or error}")
    if size > MAX_CHECKPOINT_BYTES:
        return None, Problem(ProblemCode.CHECKPOINT_TOO_LARGE, CHECKPOINT_NAME,
                             f"is larger than the limit of {MAX_CHECKPOINT_BYTES:,} bytes (16 MiB)")
    data = b"".join(chunks)
    return data, None


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
    hold, counted from the bytes read (a file is read at most one byte past its limit, and
    once the total passes its limit the remaining files are not reported: no more are
    started, and only the few batches already being hashed ahead are read to their end).

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
    if expected_sha256 is not None:
        expected_sha256 = expected_sha256.strip().lower()
        if not _SHA256_RE.fullmatch(expected_sha256):
            raise UserError(f"not a SHA-256 digest (64 hex digits): {expected_sha256!r}")
    if not folder.is_dir():
        raise NotFound(f"not a folder: {folder}")
    problems: list[Problem] = []

    document: CheckpointDocument | None = None

    def verdict(checkpoint: dict[str, Any] | None, sha: str | None, files: int,
                total: int) -> Verification:
        return Verification(ok=not problems, problems=problems, checkpoint=checkpoint,
                            sha256=sha, files=files, total_bytes=total, document=document)

    data, problem = read_checkpoint_bytes(folder)
    if data is None:
        assert problem is not None
        problems.append(problem)
        return verdict(None, None, 0, 0)
    sha = hashlib.sha256(data).hexdigest()
    if expected_sha256 is not None and sha != expected_sha256:
        problems.append(Problem(ProblemCode.CHECKPOINT_DIGEST, CHECKPOINT_NAME,
                                f"sha256 {sha} does not match the expected {expected_sha256}"))
    doc, problem = parse_json(data)
    if problem is not None:
        problems.append(problem)
        return verdict(None, sha, 0, 0)
    if not isinstance(doc, dict):
        problems.append(Problem(ProblemCode.CHECKPOINT_SCHEMA, CHECKPOINT_NAME,
                                "must be a JSON object"))
        return verdict(None, sha, 0, 0)
    checked = check_document(doc)
    problems.extend(checked.problems)
    if checked.problems and checked.problems[0].code == ProblemCode.CHECKPOINT_FORMAT:
        return verdict(doc, sha, 0, 0)
    document = checked.document
    entries = [(e.path, e.size, e.sha256) for e in checked.entries]
    listed_count = len(doc["files"]) if isinstance(doc.get("files"), list) else 0
    if listed_count > limits.max_files:
        problems.append(Problem(
            ProblemCode.TOO_MANY_FILES, None,
            f"the checkpoint lists {plural(listed_count, 'file')}; "
            f"the limit is {plural(limits.max_files, 'file')}",
        ))

    # Paths as strings, then collisions, then on disk.
    well_formed: list[tuple[str, int, str]] = []
    for entry in entries:
        listed_problem = path_problem(entry[0])
        if listed_problem is None:
            well_formed.append(entry)
        else:
            problems.append(listed_problem)
    collisions = find_collisions([e[0] for e in well_formed])
    problems.extend(collisions)
    colliding = {p.path for p in collisions}
    # Names on disk by NFC (issue 12, point 5): a listed name matches its other spelling.
    scan = scan_folder(folder)
    on_disk = _by_nfc(scan.files + scan.symlinks + scan.special)
    said_once = {nfc(p.path) for p in collisions
                 if p.code == ProblemCode.PATH_COLLISION_UNICODE and p.path is not None}
    matched: set[str] = set()  # names on disk a listed path accounts for
    located: list[Located] = []
    # Every listed file is reached through folder descriptors opened without following a
    # symlink, to check it, then afresh to hash it (see FolderFds): whatever was swapped
    # in between, no symlink is followed.
    try:
        root_fd = os.open(folder, ROOT_FLAGS)
    except OSError as error:  # gone or replaced since the check above
        raise NotFound(f"not a folder: {folder}") from error
    checker, threads = FolderFds(root_fd), ThreadFds(root_fd)
    try:
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
        checker.close()
        total = _hash_located(folder, located, threads, limits, progress, problems)
    finally:
        checker.close()
        threads.close()
        os.close(root_fd)

    # What is on disk but not listed.
    listed = {e[0] for e in entries}  # plus paths of malformed entries, already reported
    if isinstance(doc.get("files"), list):
        listed.update(e["path"] for e in doc["files"]
                      if isinstance(e, dict) and isinstance(e.get("path"), str))
    extras: list[Problem] = []
    for rel, reason in scan.unreadable:
        problems.append(Problem(ProblemCode.FOLDER_UNREADABLE, disk_name(rel),
                                f"cannot read: {reason}"))
    for rel in scan.files:
        if rel not in listed and rel not in matched:
            extras.append(Problem(ProblemCode.EXTRA_FILE, disk_name(rel),
                                  "extra file not in the checkpoint"))
    for rel in scan.symlinks:
        if rel not in listed and rel not in matched:
            extras.append(Problem(ProblemCode.EXTRA_SYMLINK, disk_name(rel),
                                  "extra symlink not in the checkpoint"))
    for rel in scan.special:
        if rel not in listed and rel not in matched:
            extras.append(Problem(ProblemCode.EXTRA_SPECIAL, disk_name(rel),
                                  "extra special file (not a regular file) not in the checkpoint"))
    extras.sort(key=lambda p: p.path or "")
    problems.extend(extras[:MAX_EXTRA_REPORTED])
    if len(extras) > MAX_EXTRA_REPORTED:
        more = len(extras) - MAX_EXTRA_REPORTED
        problems.append(Problem(ProblemCode.EXTRA_MORE, None,
                                f"and {plural(more, 'more extra file')} not in the checkpoint"))
    return verdict(doc, sha, listed_count, total)


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


def _hash_located(folder: Path, located: list[Located],
                  threads: ThreadFds, limits: Limits, progress: Progress | None,
                  problems: list[Problem]) -> int:
    """Hash ``located`` (each opened with ``O_NOFOLLOW`` through folder descriptors: a
    symlink swapped in after :func:`_locate` is refused) on :func:`hashing_threads`
    threads, in batches of a few MB (one hand-over between threads per batch, not per
    file), reporting in the listed order; once the total passes its limit, the files after
    it are not reported (at most the batches under way are read). Appends each problem;
    returns the bytes read."""
    expected_total = sum(min(entry.disk_size, limits.max_file_bytes + 1) for entry in located)
    done = 0

    def report(count: int) -> None:
        nonlocal done
        done += count
        if progress is not None:
            progress(done, max(expected_total, done))

    chunks = ChunksInOrder(report)

    def work(batch: tuple[int, list[Located]]
             ) -> list[tuple[int, str] | OSError | NotRegular]:
        number, entries = batch
        fds = threads.get()
        on_chunk = None if progress is None else lambda count: chunks.chunk(number, count)
        outcomes: list[tuple[int, str] | OSError | NotRegular] = []
        for entry in entries:
            try:
                outcomes.append(fds.hash(entry.name, limits.max_file_bytes, on_chunk))
            except (OSError, NotRegular) as error:
                outcomes.append(error)
        return outcomes

    total = 0
    index = -1
    numbered = list(enumerate(batches(located, lambda entry: entry.disk_size)))
    done_batches = in_order(numbered, work, hashing_threads(), chunks.turn)
    with closing(done_batches):
        for (_, entries), outcomes in done_batches:
            if isinstance(outcomes, BaseException):
                raise outcomes
            for (path, size, digest, name, _), outcome in zip(entries, outcomes, strict=True):
                index += 1
                if isinstance(outcome, (OSError, NotRegular)):
                    error = outcome if isinstance(outcome, OSError) else None
                    problems.append(_described(folder, path, name, error))
                    continue
                real_size, real_digest = outcome
                total += real_size
                if real_size > limits.max_file_bytes:
                    problems.append(Problem(
                        ProblemCode.FILE_TOO_LARGE, path,
                        f"is larger than the limit of {format_bytes(limits.max_file_bytes)} "
                        "per file",
                    ))
                elif real_size != size:
                    problems.append(Problem(
                        ProblemCode.SIZE_CHANGED, path,
                        f"size changed ({real_size:,} bytes, expected {size:,})"))
                elif real_digest != digest:
                    problems.append(Problem(
                        ProblemCode.CONTENT_CHANGED, path,
                        f"content changed (sha256 {real_digest} expected {digest})"))
                if total > limits.max_total_bytes:
                    rest = len(located) - index - 1
                    message = ("brings the files past the limit of "
                               f"{format_bytes(limits.max_total_bytes)} in all")
                    if rest:
                        message += f"; {plural(rest, 'file')} after it not hashed"
                    problems.append(Problem(ProblemCode.TOTAL_TOO_LARGE, path, message))
                    return total
    return total
