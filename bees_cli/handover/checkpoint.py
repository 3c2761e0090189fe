"""The checkpoint: ``checkpoint.json`` atop a run folder, written on relinquish, checked later.

A checkpoint lists every regular file of the run folder with its size in bytes and its
SHA-256, and says which stage each piece of the run restarts at. It is canonical JSON
(sorted keys, fixed separators, UTF-8), so its own SHA-256 is reproducible and can be
released to Bees Cloud (or kept on this computer) and checked by the computer that
continues the run.

Limits of a handover (the post's "What this costs"): at most 1,000 files, 20 MB each,
250 MB in all. MB means 10^6 bytes here, as the post says MB, not MiB: 20,000,000 bytes
per file, 250,000,000 bytes in all. Sizes are always counted from the bytes actually
read from disk, never from the sizes a checkpoint claims.

Problem codes (stable; ``Problem.code``):

- the checkpoint itself: ``checkpoint_missing``, ``checkpoint_not_regular``,
  ``checkpoint_too_large``, ``checkpoint_unreadable``, ``checkpoint_malformed``,
  ``checkpoint_format``, ``checkpoint_schema``, ``checkpoint_digest``;
- a listed path: ``path_empty``, ``path_control``, ``path_backslash``, ``path_absolute``,
  ``path_dotdot``, ``path_not_normal``, ``path_reserved``, ``path_duplicate``,
  ``path_collision_case``, ``path_collision_unicode``, ``path_symlink``, ``path_escapes``;
- a listed file: ``file_missing``, ``file_not_regular``, ``file_unreadable``,
  ``size_changed``, ``content_changed``, ``file_too_large``, ``total_too_large``;
- the folder: ``too_many_files``, ``extra_file``, ``extra_symlink``, ``extra_special``,
  ``extra_more``, ``folder_unreadable``.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bees_cli.errors import NotFound, Refused, UserError
from bees_cli.machine.files import write_atomic

CHECKPOINT_NAME = "checkpoint.json"
FORMAT = 1
MAX_CHECKPOINT_BYTES = 16 * 1024 * 1024  # 16 MiB: the checkpoint file itself
CHUNK_BYTES = 1024 * 1024  # read buffer while hashing
MAX_EXTRA_REPORTED = 100  # extra files named one by one; the rest are counted

Progress = Callable[[int, int], None]

_SHA256_RE = re.compile(r"[0-9a-f]{64}")
_TIME_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z")
_DRIVE_RE = re.compile(r"[A-Za-z]:")
_FIELDS = {
    "format", "item", "workspace", "process_digest", "restart_stages", "files",
    "computer", "machine_id", "time", "journal",
}


@dataclass(frozen=True)
class Limits:
    """The limits of a handover, in files and bytes (1 MB = 10^6 bytes).

    Attributes:
        max_files: most regular files a run folder may hold (checkpoint.json excluded).
        max_file_bytes: largest size of one file, in bytes.
        max_total_bytes: largest size of all files together, in bytes.
    """

    max_files: int = 1_000
    max_file_bytes: int = 20_000_000
    max_total_bytes: int = 250_000_000


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class Problem:
    """One reason a checkpoint is invalid.

    Attributes:
        code: a stable string (see the module docstring).
        path: the path it names (as listed, or as found on disk), or None for the folder.
        message: one exact human sentence, without the path.
    """

    code: str
    path: str | None
    message: str

    def format(self) -> str:
        """Return ``PATH: message`` (the path quoted when it has unusual characters)."""
        if self.path is None:
            return self.message
        return f"{display_path(self.path)}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        """Return ``{"code", "path", "message"}``."""
        return {"code": self.code, "path": self.path, "message": self.message}


@dataclass(frozen=True)
class CheckpointInfo:
    """What :func:`write_checkpoint` wrote.

    Attributes:
        path: the checkpoint file (``RUN_FOLDER/checkpoint.json``).
        sha256: SHA-256 of the checkpoint file's bytes (lowercase hex); release this.
        files: number of files listed.
        total_bytes: sum of their sizes, in bytes.
    """

    path: Path
    sha256: str
    files: int
    total_bytes: int


@dataclass
class Verification:
    """The verdict of :func:`verify_checkpoint`.

    Attributes:
        ok: True when there is no problem.
        problems: every problem found, in a stable order.
        checkpoint: the parsed checkpoint, or None when it could not be read or parsed.
        sha256: SHA-256 of the checkpoint file's bytes, or None when it could not be read.
        files: number of files the checkpoint lists (0 when unreadable).
        total_bytes: bytes actually read from the listed files.
    """

    ok: bool
    problems: list[Problem]
    checkpoint: dict[str, Any] | None
    sha256: str | None
    files: int
    total_bytes: int

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


class CheckpointInvalid(Refused):
    """The checkpoint or the run folder failed verification (exit 3).

    Args:
        problems: every problem found; the CLI prints each as ``PATH: message``.
    """

    code = "checkpoint_invalid"

    def __init__(self, problems: list[Problem]) -> None:
        count = len(problems)
        noun = "problem" if count == 1 else "problems"
        super().__init__(f"checkpoint invalid: {count} {noun}")
        self.problems = problems

    def to_json(self) -> dict[str, Any]:
        """Return the error object with the list of problems."""
        data = super().to_json()
        data["problems"] = [p.to_json() for p in self.problems]
        return data


# ---------------------------------------------------------------------------- helpers


def canonical_json(value: Any) -> bytes:
    """Return ``value`` as canonical JSON: sorted keys, ``,``/``:`` separators, UTF-8, newline.

    Why: the same checkpoint must give the same bytes, hence the same SHA-256, everywhere.

    Raises:
        ValueError: ``value`` holds NaN or infinity.
        TypeError: ``value`` holds something JSON cannot carry.
    """
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)
    return (text + "\n").encode("utf-8")


def display_path(path: str) -> str:
    """Return ``path`` as is, or JSON-style quoted when it is empty or has unusual characters.

    Why: a file name may hold a newline or a control character; printed raw it would forge
    an extra output line.
    """
    if path and path.isprintable() and path.strip() == path and not path.startswith('"'):
        return path
    out = []
    for char in path:
        if char == '"' or char == "\\":
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif char.isprintable() or char == " ":
            out.append(char)
        elif ord(char) > 0xFFFF:
            out.append(f"\\U{ord(char):08x}")
        else:
            out.append(f"\\u{ord(char):04x}")
    return '"' + "".join(out) + '"'


def _disk_name(name: str) -> str:
    """Return a file name from disk as a printable, UTF-8-safe string (bad bytes as ``\\xNN``)."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _mb(n: int) -> str:
    if n and n % 1_000_000 == 0:
        return f"{n // 1_000_000:,} MB ({n:,} bytes)"
    return f"{n:,} bytes"


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


@dataclass
class _Scan:
    files: list[str] = field(default_factory=list)
    symlinks: list[str] = field(default_factory=list)
    special: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)


def _scan(root: Path) -> _Scan:
    """Walk ``root`` without following symlinks; sort relative POSIX paths by kind.

    The top-level ``checkpoint.json`` is left out. Directories themselves are not listed.
    """
    scan = _Scan()
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


def _path_problem(path: str) -> Problem | None:
    """Return the first problem of one listed path as a string, or None when it is well formed."""
    if path == "":
        return Problem("path_empty", path, "empty path")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in path):
        return Problem("path_control", path, "path is not valid Unicode (lone surrogate)")
    if any(unicodedata.category(c) == "Cc" for c in path):
        return Problem("path_control", path, "path has a control character")
    if "\\" in path:
        return Problem("path_backslash", path, "path has a backslash (paths use /)")
    if path.startswith("/") or _DRIVE_RE.match(path):
        return Problem("path_absolute", path, "absolute path (paths are relative to the folder)")
    parts = path.split("/")
    if ".." in parts:
        return Problem("path_dotdot", path, "path goes up with '..'")
    if any(part in ("", ".") for part in parts):
        return Problem("path_not_normal", path, "path has an empty or '.' part")
    if path == CHECKPOINT_NAME:
        return Problem("path_reserved", path, "the checkpoint cannot list itself")
    return None


def _collisions(paths: list[str]) -> list[Problem]:
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
            problems.append(Problem("path_duplicate", path, "listed twice"))
            continue
        seen.add(path)
        nfc = unicodedata.normalize("NFC", path)
        fold = unicodedata.normalize("NFC", nfc.casefold())
        if nfc in by_nfc:
            problems.append(Problem(
                "path_collision_unicode", path,
                f"collides with {display_path(by_nfc[nfc])} under Unicode normalization (NFC)",
            ))
        elif fold in by_fold:
            problems.append(Problem(
                "path_collision_case", path,
                f"collides with {display_path(by_fold[fold])} under case folding",
            ))
        by_nfc.setdefault(nfc, path)
        by_fold.setdefault(fold, path)
    return problems


class _NotRegular(Exception):
    pass


def _hash_file(path: Path, cap: int, on_chunk: Callable[[int], None] | None) -> tuple[int, str]:
    """Hash ``path`` with a bounded buffer, reading at most ``cap + 1`` bytes.

    Returns:
        (bytes read, SHA-256 hex). Bytes read above ``cap`` means the file is over the limit
        (and the digest covers only what was read).

    Raises:
        _NotRegular: the path is a symlink or not a regular file at open time.
        OSError: it cannot be opened or read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        if os.path.islink(path):
            raise _NotRegular() from error
        raise
    with open(fd, "rb", buffering=0) as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _NotRegular()
        digest = hashlib.sha256()
        buffer = bytearray(CHUNK_BYTES)
        view = memoryview(buffer)
        count = 0
        while count <= cap:
            want = min(CHUNK_BYTES, cap + 1 - count)
            got = handle.readinto(view[:want])
            if not got:
                break
            digest.update(view[:got])
            count += got
            if on_chunk is not None:
                on_chunk(got)
    return count, digest.hexdigest()


def _format_time(now: datetime) -> str:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be an aware datetime (UTC)")
    return now.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


# ---------------------------------------------------------------------------- write


def write_checkpoint(
    run_folder: Path,
    *,
    item_id: str,
    workspace: str,
    process_digest: str,
    restart_stages: dict[str, str],
    computer: str,
    machine_id: str,
    journal: list[dict[str, Any]],
    now: datetime,
    limits: Limits = DEFAULT_LIMITS,
) -> CheckpointInfo:
    """List and hash every file of ``run_folder`` and write ``checkpoint.json`` atomically.

    The document is ``{"format": 1, "item", "workspace", "process_digest", "restart_stages",
    "files": [{"path", "size", "sha256"}], "computer", "machine_id", "time", "journal"}``
    in canonical JSON (:func:`canonical_json`). Paths are relative POSIX paths, sorted;
    sizes are bytes; ``time`` is UTC ISO 8601 ending in ``Z``. A checkpoint this function
    writes always passes :func:`verify_checkpoint` on an unchanged folder: whatever that
    would reject is refused here first.

    Args:
        run_folder: the run folder; every regular file in it but the top ``checkpoint.json``
            is listed.
        item_id: the work item's id.
        workspace: the workspace's name.
        process_digest: digest of the process snapshot the run follows.
        restart_stages: piece name → stage it restarts at (one piece, ``"main"``, for now).
        computer: this computer's name.
        machine_id: this computer's machine id.
        journal: add-on actions already run (JSON objects), so they are not run twice.
        now: the current time, an aware datetime (stored in UTC).
        limits: the handover limits (default: 1,000 files, 20 MB each, 250 MB in all).

    Returns:
        The file written, its SHA-256 (to release to Bees Cloud or keep), file count and bytes.

    Raises:
        NotFound: ``run_folder`` is not a folder.
        Refused: the folder holds a symlink, a special file, an unreadable entry, a name that
            is not valid UTF-8 or that verification would reject (control characters,
            backslash, collisions), or breaks a limit; the message names the file and limit.
            Nothing is written then.
        ValueError: ``now`` is naive, or ``restart_stages``/``journal`` are malformed (a bug).
    """
    if not run_folder.is_dir():
        raise NotFound(f"not a folder: {run_folder}")
    if not restart_stages or not all(
        isinstance(k, str) and k and isinstance(v, str) and v for k, v in restart_stages.items()
    ):
        raise ValueError("restart_stages must map piece names to stage names")
    if not isinstance(journal, list) or not all(isinstance(e, dict) for e in journal):
        raise ValueError("journal must be a list of JSON objects")
    time_text = _format_time(now)

    def refuse(path: str | None, message: str, hint: str | None = None) -> Refused:
        where = f"{display_path(path)}: " if path is not None else ""
        return Refused(f"cannot write the checkpoint: {where}{message}", hint=hint)

    top = run_folder / CHECKPOINT_NAME
    if top.is_symlink() or (top.exists() and not top.is_file()):
        raise refuse(CHECKPOINT_NAME, "exists and is not a regular file")
    scan = _scan(run_folder)
    if scan.unreadable:
        rel, reason = scan.unreadable[0]
        raise refuse(_disk_name(rel), f"cannot read: {reason}")
    if scan.symlinks:
        raise refuse(_disk_name(scan.symlinks[0]), "is a symlink; a symlink cannot travel safely",
                     hint="replace it with a copy of the file or folder it points to")
    if scan.special:
        raise refuse(_disk_name(scan.special[0]), "is not a regular file")
    for rel in scan.files:
        if _disk_name(rel) != rel:
            raise refuse(_disk_name(rel), "file name is not valid UTF-8")
    if len(scan.files) > limits.max_files:
        raise refuse(None, f"the run folder holds {_plural(len(scan.files), 'file')}; "
                           f"the limit is {_plural(limits.max_files, 'file')}")
    for rel in scan.files:
        problem = _path_problem(rel)
        if problem is not None:
            raise refuse(rel, problem.message)
    collisions = _collisions(scan.files)
    if collisions:
        raise refuse(collisions[0].path, collisions[0].message)

    entries: list[dict[str, Any]] = []
    total = 0
    for rel in scan.files:
        try:
            size, digest = _hash_file(run_folder / rel, limits.max_file_bytes, None)
        except _NotRegular:
            raise refuse(rel, "is not a regular file") from None
        except OSError as error:
            raise refuse(rel, f"cannot read: {error.strerror or error}") from None
        if size > limits.max_file_bytes:
            raise refuse(rel, f"is larger than the limit of {_mb(limits.max_file_bytes)} per file")
        total += size
        if total > limits.max_total_bytes:
            raise refuse(rel, f"brings the files past the limit of {_mb(limits.max_total_bytes)}"
                              " in all")
        entries.append({"path": rel, "size": size, "sha256": digest})

    document = {
        "format": FORMAT,
        "item": item_id,
        "workspace": workspace,
        "process_digest": process_digest,
        "restart_stages": dict(restart_stages),
        "files": entries,
        "computer": computer,
        "machine_id": machine_id,
        "time": time_text,
        "journal": journal,
    }
    data = canonical_json(document)
    if len(data) > MAX_CHECKPOINT_BYTES:
        raise refuse(CHECKPOINT_NAME, f"would be {len(data):,} bytes; the limit is "
                                      f"{MAX_CHECKPOINT_BYTES:,} bytes (16 MiB)")
    write_atomic(top, data)
    return CheckpointInfo(path=top, sha256=hashlib.sha256(data).hexdigest(), files=len(entries),
                          total_bytes=total)


# ---------------------------------------------------------------------------- verify


def _read_checkpoint(root: Path) -> tuple[bytes | None, Problem | None]:
    path = root / CHECKPOINT_NAME
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None, Problem("checkpoint_missing", CHECKPOINT_NAME, "no checkpoint in this folder")
    except OSError as error:
        return None, Problem("checkpoint_unreadable", CHECKPOINT_NAME,
                             f"cannot read: {error.strerror or error}")
    if stat.S_ISLNK(info.st_mode):
        return None, Problem("checkpoint_not_regular", CHECKPOINT_NAME, "is a symlink")
    if not stat.S_ISREG(info.st_mode):
        return None, Problem("checkpoint_not_regular", CHECKPOINT_NAME, "is not a regular file")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb", buffering=0) as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None, Problem("checkpoint_not_regular", CHECKPOINT_NAME,
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
        return None, Problem("checkpoint_unreadable", CHECKPOINT_NAME,
                             f"cannot read: {error.strerror or error}")
    if size > MAX_CHECKPOINT_BYTES:
        return None, Problem("checkpoint_too_large", CHECKPOINT_NAME,
                             f"is larger than the limit of {MAX_CHECKPOINT_BYTES:,} bytes (16 MiB)")
    data = b"".join(chunks)
    return data, None


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _parse(data: bytes) -> tuple[Any, Problem | None]:
    def malformed(detail: str) -> tuple[Any, Problem]:
        return None, Problem("checkpoint_malformed", CHECKPOINT_NAME, f"not valid JSON: {detail}")

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return malformed(f"not UTF-8 at byte {error.start}")
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicate_keys,
                           parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        return malformed(f"{error.msg} at line {error.lineno} column {error.colno}")
    except (ValueError, RecursionError) as error:
        return malformed(str(error) if isinstance(error, ValueError) else "nested too deeply")
    return value, None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_schema(doc: dict[str, Any]) -> tuple[list[Problem], list[tuple[str, int, str]]]:
    """Check every field but ``format``; return problems and the well-formed file entries."""
    problems: list[Problem] = []

    def bad(message: str) -> None:
        problems.append(Problem("checkpoint_schema", CHECKPOINT_NAME, message))

    for name in sorted(_FIELDS - doc.keys()):
        bad(f"missing field '{name}'")
    for name in sorted(doc.keys() - _FIELDS):
        bad(f"unknown field {name!r}")
    for name in ("item", "workspace", "process_digest", "computer", "machine_id"):
        if name in doc and not (isinstance(doc[name], str) and doc[name]):
            bad(f"'{name}' must be a non-empty string")
    if "restart_stages" in doc:
        stages = doc["restart_stages"]
        if not (isinstance(stages, dict) and stages and all(
            k and isinstance(v, str) and v for k, v in stages.items()
        )):
            bad("'restart_stages' must map each piece to a stage name")
    if "time" in doc:
        time = doc["time"]
        valid = isinstance(time, str) and _TIME_RE.fullmatch(time) is not None
        if valid:
            try:
                datetime.fromisoformat(time)
            except ValueError:
                valid = False
        if not valid:
            bad("'time' must be a UTC time like 2026-01-05T09:30:00Z")
    if "journal" in doc and not (
        isinstance(doc["journal"], list) and all(isinstance(e, dict) for e in doc["journal"])
    ):
        bad("'journal' must be a list of objects")
    entries: list[tuple[str, int, str]] = []
    if "files" in doc:
        files = doc["files"]
        if not isinstance(files, list):
            bad("'files' must be a list")
            return problems, entries
        for index, entry in enumerate(files):
            where = f"files[{index}]"
            if not isinstance(entry, dict):
                bad(f"{where} must be an object")
                continue
            if set(entry) != {"path", "size", "sha256"}:
                bad(f"{where} must have exactly 'path', 'size' and 'sha256'")
                continue
            path, size, digest = entry["path"], entry["size"], entry["sha256"]
            if not isinstance(path, str):
                bad(f"{where}.path must be a string")
            elif not (_is_int(size) and size >= 0):
                bad(f"{where}.size must be a whole number of bytes, 0 or more")
            elif not (isinstance(digest, str) and _SHA256_RE.fullmatch(digest)):
                bad(f"{where}.sha256 must be 64 lowercase hex digits")
            else:
                entries.append((path, size, digest))
    return problems, entries


def _locate(root: Path, root_real: Path, path: str) -> tuple[Path | None, Problem | None]:
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
            return None, Problem("file_missing", path, "listed file is missing")
        except OSError as error:
            if not last and error.errno == errno.ENOTDIR:  # a parent is a file
                return None, Problem("file_missing", path, "listed file is missing")
            return None, Problem("file_unreadable", path, f"cannot read: {error.strerror}")
        if stat.S_ISLNK(info.st_mode):
            try:
                target = current.resolve()
                inside = target.is_relative_to(root_real)
            except (OSError, RuntimeError):
                target, inside = current, True
            if not inside:
                return None, Problem("path_escapes", path,
                                     f"goes outside the folder through the symlink {shown} "
                                     f"(to {target})")
            if last:
                return None, Problem("path_symlink", path,
                                     "is a symlink; a symlink cannot travel safely")
            return None, Problem("path_symlink", path, f"goes through the symlink {shown}")
        if not last and not stat.S_ISDIR(info.st_mode):
            return None, Problem("file_missing", path,
                                 f"listed file is missing ({shown} is not a folder)")
        if last and not stat.S_ISREG(info.st_mode):
            return None, Problem("file_not_regular", path, "is not a regular file")
    try:
        inside = current.resolve(strict=True).is_relative_to(root_real)
    except (OSError, RuntimeError):
        inside = False
    if not inside:
        return None, Problem("path_escapes", path, "resolves outside the folder")
    return current, None


def verify_checkpoint(
    folder: Path,
    *,
    expected_sha256: str | None = None,
    progress: Progress | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Verification:
    """Verify the checkpoint of a run folder and every file it lists; collect every problem.

    Checks (the post's "Handing a run over"): ``checkpoint.json`` exists, is a regular file
    of at most 16 MiB, is valid JSON of format 1 with every field well typed; its SHA-256
    equals ``expected_sha256`` when given; every listed path is well formed (relative, no
    ``..``, no empty or ``.`` part, no backslash, no control character, no collision with
    another under NFC or case folding); every listed file exists as a regular file inside
    the folder, reached without any symlink, with the listed size and SHA-256; the limits
    hold, counted from the bytes read (a file is read at most one byte past its limit, and
    once the total passes its limit the remaining files are not hashed).

    Files present but not listed are problems too, not warnings. Why: the restarted stage
    runs "from the top, using the saved files"; a file that was not there at relinquish
    (added by a sync conflict, a stray copy, or someone else) could change what that stage
    reads or does, and nothing vouches for its content.

    Names are compared exactly as stored: a folder whose names were renormalized by a sync
    tool shows the listed names as missing and the renamed ones as extra.

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
    root_real = folder.resolve()
    problems: list[Problem] = []

    def verdict(checkpoint: dict[str, Any] | None, sha: str | None, files: int,
                total: int) -> Verification:
        return Verification(ok=not problems, problems=problems, checkpoint=checkpoint,
                            sha256=sha, files=files, total_bytes=total)

    data, problem = _read_checkpoint(folder)
    if data is None:
        assert problem is not None
        problems.append(problem)
        return verdict(None, None, 0, 0)
    sha = hashlib.sha256(data).hexdigest()
    if expected_sha256 is not None and sha != expected_sha256:
        problems.append(Problem("checkpoint_digest", CHECKPOINT_NAME,
                                f"sha256 {sha} does not match the expected {expected_sha256}"))
    doc, problem = _parse(data)
    if problem is not None:
        problems.append(problem)
        return verdict(None, sha, 0, 0)
    if not isinstance(doc, dict):
        problems.append(Problem("checkpoint_schema", CHECKPOINT_NAME,
                                "must be a JSON object"))
        return verdict(None, sha, 0, 0)
    version = doc.get("format")
    if version != FORMAT or not _is_int(version):
        problems.append(Problem(
            "checkpoint_format", CHECKPOINT_NAME,
            f"unknown checkpoint format {json.dumps(version)} (this Bees reads format {FORMAT})",
        ))
        return verdict(doc, sha, 0, 0)
    schema_problems, entries = _check_schema(doc)
    problems.extend(schema_problems)
    listed_count = len(doc["files"]) if isinstance(doc.get("files"), list) else 0
    if listed_count > limits.max_files:
        problems.append(Problem(
            "too_many_files", None,
            f"the checkpoint lists {_plural(listed_count, 'file')}; "
            f"the limit is {_plural(limits.max_files, 'file')}",
        ))

    # Paths as strings, then collisions, then on disk.
    well_formed: list[tuple[str, int, str]] = []
    for entry in entries:
        path_problem = _path_problem(entry[0])
        if path_problem is None:
            well_formed.append(entry)
        else:
            problems.append(path_problem)
    collisions = _collisions([e[0] for e in well_formed])
    problems.extend(collisions)
    colliding = {p.path for p in collisions}
    located: list[tuple[str, int, str, Path]] = []
    for path, size, digest in well_formed:
        if path in colliding:
            continue
        file, path_problem = _locate(folder, root_real, path)
        if path_problem is not None:
            problems.append(path_problem)
        else:
            assert file is not None
            located.append((path, size, digest, file))

    # Hash, counting real bytes.
    expected_total = 0
    for *_, file in located:
        try:
            expected_total += min(file.lstat().st_size, limits.max_file_bytes + 1)
        except OSError:
            pass
    done = 0

    def on_chunk(count: int) -> None:
        nonlocal done
        done += count
        if progress is not None:
            progress(done, max(expected_total, done))

    total = 0
    for index, (path, size, digest, file) in enumerate(located):
        try:
            real_size, real_digest = _hash_file(file, limits.max_file_bytes, on_chunk)
        except _NotRegular:
            problems.append(Problem("file_not_regular", path, "is not a regular file"))
            continue
        except OSError as error:
            problems.append(Problem("file_unreadable", path,
                                    f"cannot read: {error.strerror or error}"))
            continue
        total += real_size
        if real_size > limits.max_file_bytes:
            problems.append(Problem(
                "file_too_large", path,
                f"is larger than the limit of {_mb(limits.max_file_bytes)} per file",
            ))
        elif real_size != size:
            problems.append(Problem("size_changed", path,
                                    f"size changed ({real_size:,} bytes, expected {size:,})"))
        elif real_digest != digest:
            problems.append(Problem("content_changed", path,
                                    f"content changed (sha256 {real_digest} expected {digest})"))
        if total > limits.max_total_bytes:
            rest = len(located) - index - 1
            message = f"brings the files past the limit of {_mb(limits.max_total_bytes)} in all"
            if rest:
                message += f"; {_plural(rest, 'file')} after it not hashed"
            problems.append(Problem("total_too_large", path, message))
            break

    # What is on disk but not listed.
    listed = {e[0] for e in entries}  # plus paths of malformed entries, already reported
    if isinstance(doc.get("files"), list):
        listed.update(e["path"] for e in doc["files"]
                      if isinstance(e, dict) and isinstance(e.get("path"), str))
    scan = _scan(folder)
    extras: list[Problem] = []
    for rel, reason in scan.unreadable:
        problems.append(Problem("folder_unreadable", _disk_name(rel), f"cannot read: {reason}"))
    for rel in scan.files:
        if rel not in listed:
            extras.append(Problem("extra_file", _disk_name(rel),
                                  "extra file not in the checkpoint"))
    for rel in scan.symlinks:
        if rel not in listed:
            extras.append(Problem("extra_symlink", _disk_name(rel),
                                  "extra symlink not in the checkpoint"))
    for rel in scan.special:
        if rel not in listed:
            extras.append(Problem("extra_special", _disk_name(rel),
                                  "extra special file (not a regular file) not in the checkpoint"))
    extras.sort(key=lambda p: p.path or "")
    problems.extend(extras[:MAX_EXTRA_REPORTED])
    if len(extras) > MAX_EXTRA_REPORTED:
        more = len(extras) - MAX_EXTRA_REPORTED
        problems.append(Problem("extra_more", None,
                                f"and {_plural(more, 'more extra file')} not in the checkpoint"))
    return verdict(doc, sha, listed_count, total)
