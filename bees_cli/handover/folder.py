"""The path, collision and on-disk checks of a run folder: scan, paths, symlinks, hashing."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bees_cli.handover.checkpoint_model import CHECKPOINT_NAME
from bees_cli.handover.problems import Problem, ProblemCode, code_points, display_path

CHUNK_BYTES = 1024 * 1024  # read buffer while hashing

_DRIVE_RE = re.compile(r"[A-Za-z]:")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f]")  # Unicode category Cc, all 65 of it


def disk_name(name: str) -> str:
    """Return a file name from disk as a printable, UTF-8-safe string (bad bytes as ``\\xNN``)."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


@dataclass
class Scan:
    """What :func:`scan_folder` found, as relative POSIX paths sorted by kind.

    Attributes:
        files: regular files.
        symlinks: symlinks (never followed).
        special: anything else that is not a folder (pipes, sockets, devices).
        unreadable: (path, reason) for each entry or folder that could not be read.
    """

    files: list[str] = field(default_factory=list)
    symlinks: list[str] = field(default_factory=list)
    special: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)


def scan_folder(root: Path) -> Scan:
    """Walk ``root`` without following symlinks; sort relative POSIX paths by kind.

    The top-level ``checkpoint.json`` is left out. Directories themselves are not listed.
    """
    scan = Scan()
    stack: list[tuple[Path, str]] = [(root, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as entries:
                found = list(entries)
        except OSError as error:
            scan.unreadable.append((prefix.rstrip("/") or ".", error.strerror or str(error)))
            continue
        for entry in found:
            rel = prefix + entry.name
            if rel == CHECKPOINT_NAME:
                continue
            try:
                if entry.is_symlink():
                    scan.symlinks.append(rel)
                elif entry.is_dir(follow_symlinks=False):
                    stack.append((Path(entry.path), rel + "/"))
                elif entry.is_file(follow_symlinks=False):
                    scan.files.append(rel)
                else:
                    scan.special.append(rel)
            except OSError as error:
                scan.unreadable.append((rel, error.strerror or str(error)))
    scan.files.sort()
    scan.symlinks.sort()
    scan.special.sort()
    scan.unreadable.sort()
    return scan


def path_problem(path: str) -> Problem | None:
    """Return the first problem of one listed path as a string, or None when it is well formed."""
    if path == "":
        return Problem(ProblemCode.PATH_EMPTY, path, "empty path")
    if _SURROGATE_RE.search(path):
        return Problem(ProblemCode.PATH_CONTROL, path, "path is not valid Unicode (lone surrogate)")
    if _CONTROL_RE.search(path):
        return Problem(ProblemCode.PATH_CONTROL, path, "path has a control character")
    if "\\" in path:
        return Problem(ProblemCode.PATH_BACKSLASH, path, "path has a backslash (paths use /)")
    if path.startswith("/") or _DRIVE_RE.match(path):
        return Problem(ProblemCode.PATH_ABSOLUTE, path,
                       "absolute path (paths are relative to the folder)")
    parts = path.split("/")
    if ".." in parts:
        return Problem(ProblemCode.PATH_DOTDOT, path, "path goes up with '..'")
    if any(part in ("", ".") for part in parts):
        return Problem(ProblemCode.PATH_NOT_NORMAL, path, "path has an empty or '.' part")
    if path == CHECKPOINT_NAME:
        return Problem(ProblemCode.PATH_RESERVED, path, "the checkpoint cannot list itself")
    return None


def nfc(path: str) -> str:
    """Return ``path`` in Unicode normalization form C, the form a checkpoint lists.

    Why: macOS has written names decomposed (NFD: ``e`` + U+0301) and Linux keeps whatever
    it is given, so one name can reach a folder in either spelling; NFC is the one form
    Relinquish writes and Verify compares.
    """
    return unicodedata.normalize("NFC", path)


def unicode_collision(path: str, names: list[str], *, on_disk: bool = False) -> Problem:
    """Return the one problem for ``names`` (two or more) equal under NFC, each spelled in
    code points (:func:`~bees_cli.handover.problems.code_points`).

    Args:
        path: the path the problem is about (the later listed one, or the listed name).
        names: the colliding spellings, in the order found.
        on_disk: True when the names are files on disk that the one listed ``path`` matches.
    """
    spelled = " vs ".join(code_points(name) for name in names)
    if on_disk:
        return Problem(ProblemCode.PATH_COLLISION_UNICODE, path,
                       f"{len(names)} files on disk have this name under Unicode "
                       f"normalization (NFC): {spelled}; keep one")
    return Problem(ProblemCode.PATH_COLLISION_UNICODE, path,
                   f"collides under Unicode normalization (NFC): {spelled}")


def find_collisions(paths: list[str]) -> list[Problem]:
    """Return a problem for each path equal to an earlier one, or colliding with it.

    Two paths collide when they are equal after Unicode normalization (NFC), or after
    case folding (``str.casefold``) and NFC: they would be one file on a computer whose
    file system folds case or normalizes names (macOS, Windows).
    """
    problems: list[Problem] = []
    seen: set[str] = set()
    by_nfc: dict[str, str] = {}
    by_fold: dict[str, str] = {}
    for path in paths:
        if path in seen:
            problems.append(Problem(ProblemCode.PATH_DUPLICATE, path, "listed twice"))
            continue
        seen.add(path)
        composed = nfc(path)
        fold = nfc(composed.casefold())
        if composed in by_nfc:
            problems.append(unicode_collision(path, [by_nfc[composed], path]))
        elif fold in by_fold:
            problems.append(Problem(
                ProblemCode.PATH_COLLISION_CASE, path,
                f"collides with {display_path(by_fold[fold])} under case folding",
            ))
        by_nfc.setdefault(composed, path)
        by_fold.setdefault(fold, path)
    return problems


class NotRegular(Exception):
    """A listed path turned out to be a symlink or not a regular file when opened."""


OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
              | getattr(os, "O_CLOEXEC", 0))
"""How a listed file is opened: never through a symlink, never blocking on a pipe."""


def hash_fd(fd: int, cap: int, on_chunk: Callable[[int], None] | None,
            buffer: memoryview | None = None) -> tuple[int, str]:
    """Hash the open file ``fd`` with a bounded buffer, reading at most ``cap + 1`` bytes.

    Args:
        fd: the open file (left open).
        cap: the per-file limit in bytes.
        on_chunk: called with each chunk's byte count.
        buffer: a writable buffer of CHUNK_BYTES to read into, reused from file to file by
            the caller (a new one per call is 1 MiB to allocate and zero each time).

    Returns:
        (bytes read, SHA-256 hex). Bytes read above ``cap`` means the file is over the limit
        (and the digest covers only what was read).

    Raises:
        NotRegular: ``fd`` is not a regular file.
        OSError: it cannot be read.
    """
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        raise NotRegular()
    digest = hashlib.sha256()
    view = memoryview(bytearray(CHUNK_BYTES)) if buffer is None else buffer
    count = 0
    while count <= cap:
        want = min(CHUNK_BYTES, cap + 1 - count)
        got = os.readv(fd, [view[:want]])
        if not got:
            break
        digest.update(view[:got])
        count += got
        if on_chunk is not None:
            on_chunk(got)
    return count, digest.hexdigest()


def hash_file(path: Path, cap: int, on_chunk: Callable[[int], None] | None) -> tuple[int, str]:
    """Hash ``path`` (opened without following a symlink) with :func:`hash_fd`.

    Raises:
        NotRegular: the path is a symlink or not a regular file at open time.
        OSError: it cannot be opened or read.
    """
    try:
        fd = os.open(path, OPEN_FLAGS)
    except OSError as error:
        if os.path.islink(path):
            raise NotRegular() from error
        raise
    try:
        return hash_fd(fd, cap, on_chunk)
    finally:
        os.close(fd)


def locate(root: Path, root_real: Path, path: str) -> tuple[Path | None, Problem | None]:
    """Check each component of a listed path without following symlinks.

    Returns:
        (the file, None) when it is a regular file inside the folder, else (None, problem).
    """
    parts = path.split("/")
    current = root
    for index, part in enumerate(parts):
        current = current / part
        shown = "/".join(parts[: index + 1])
        last = index == len(parts) - 1
        try:
            info = current.lstat()
        except FileNotFoundError:
            return None, Problem(ProblemCode.FILE_MISSING, path, "listed file is missing")
        except OSError as error:
            if not last and error.errno == errno.ENOTDIR:  # a parent is a file
                return None, Problem(ProblemCode.FILE_MISSING, path, "listed file is missing")
            return None, Problem(ProblemCode.FILE_UNREADABLE, path,
                                 f"cannot read: {error.strerror}")
        if stat.S_ISLNK(info.st_mode):
            try:
                target = current.resolve()
                inside = target.is_relative_to(root_real)
            except (OSError, RuntimeError):
                target, inside = current, True
            if not inside:
                return None, Problem(ProblemCode.PATH_ESCAPES, path,
                                     f"goes outside the folder through the symlink {shown} "
                                     f"(to {target})")
            if last:
                return None, Problem(ProblemCode.PATH_SYMLINK, path,
                                     "is a symlink; a symlink cannot travel safely")
            return None, Problem(ProblemCode.PATH_SYMLINK, path,
                                 f"goes through the symlink {shown}")
        if not last and not stat.S_ISDIR(info.st_mode):
            return None, Problem(ProblemCode.FILE_MISSING, path,
                                 f"listed file is missing ({shown} is not a folder)")
        if last and not stat.S_ISREG(info.st_mode):
            return None, Problem(ProblemCode.FILE_NOT_REGULAR, path, "is not a regular file")
    try:
        inside = current.resolve(strict=True).is_relative_to(root_real)
    except (OSError, RuntimeError):
        inside = False
    if not inside:
        return None, Problem(ProblemCode.PATH_ESCAPES, path, "resolves outside the folder")
    return current, None
