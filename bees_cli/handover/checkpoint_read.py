"""Reading a run folder's ``checkpoint.json`` for verification: its bytes (bounded, no
symlink followed), its SHA-256 against the expected one, its JSON and its fields."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path
from typing import Any

from bees_cli.errors import UserError
from bees_cli.handover.checkpoint_model import (
    CHECKPOINT_NAME,
    CheckedDocument,
    check_document,
    parse_json,
)
from bees_cli.handover.folder import CHUNK_BYTES
from bees_cli.handover.limits import MAX_CHECKPOINT_BYTES
from bees_cli.handover.problems import Problem, ProblemCode

_SHA256_RE = re.compile(r"[0-9a-f]{64}")


def digest_given(expected_sha256: str | None) -> str | None:
    """``expected_sha256`` in lowercase without spaces (None stays None).

    Raises:
        UserError: it is not 64 hex digits (exit 2).
    """
    if expected_sha256 is None:
        return None
    expected_sha256 = expected_sha256.strip().lower()
    if not _SHA256_RE.fullmatch(expected_sha256):
        raise UserError(f"not a SHA-256 digest (64 hex digits): {expected_sha256!r}")
    return expected_sha256


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


def read_document(folder: Path, expected_sha256: str | None, problems: list[Problem]
                   ) -> tuple[dict[str, Any] | None, str | None, CheckedDocument | None]:
    """Read, hash, parse and check ``folder``'s ``checkpoint.json``; append each problem.

    Returns:
        (the JSON object, the file's SHA-256, what :func:`check_document` found); the
        object is None when the file could not be read or parsed into one, the SHA-256 when
        it could not be read, the check when the object is not of a known format: nothing
        more can be judged then.
    """
    data, problem = read_checkpoint_bytes(folder)
    if data is None:
        assert problem is not None
        problems.append(problem)
        return None, None, None
    sha = hashlib.sha256(data).hexdigest()
    if expected_sha256 is not None and sha != expected_sha256:
        problems.append(Problem(ProblemCode.CHECKPOINT_DIGEST, CHECKPOINT_NAME,
                                f"sha256 {sha} does not match the expected {expected_sha256}"))
    doc, problem = parse_json(data)
    if problem is not None:
        problems.append(problem)
        return None, sha, None
    if not isinstance(doc, dict):
        problems.append(Problem(ProblemCode.CHECKPOINT_SCHEMA, CHECKPOINT_NAME,
                                "must be a JSON object"))
        return None, sha, None
    checked = check_document(doc)
    problems.extend(checked.problems)
    if checked.problems and checked.problems[0].code == ProblemCode.CHECKPOINT_FORMAT:
        return doc, sha, None
    return doc, sha, checked
