"""Why a checkpoint is invalid: the problem codes, one problem, and the error that carries them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bees_cli.errors import Refused


class ProblemCode(StrEnum):
    """The closed set of problem codes; each value is the stable string shown in ``--json``.

    About the checkpoint itself (``checkpoint_*``), a listed path (``path_*``), a listed
    file (``file_*``, ``size_changed``, ``content_changed``, ``total_too_large``), or the
    folder (``too_many_files``, ``extra_*``, ``folder_unreadable``).
    """

    CHECKPOINT_MISSING = "checkpoint_missing"
    CHECKPOINT_NOT_REGULAR = "checkpoint_not_regular"
    CHECKPOINT_TOO_LARGE = "checkpoint_too_large"
    CHECKPOINT_UNREADABLE = "checkpoint_unreadable"
    CHECKPOINT_MALFORMED = "checkpoint_malformed"
    CHECKPOINT_FORMAT = "checkpoint_format"
    CHECKPOINT_SCHEMA = "checkpoint_schema"
    CHECKPOINT_DIGEST = "checkpoint_digest"
    PATH_EMPTY = "path_empty"
    PATH_CONTROL = "path_control"
    PATH_BACKSLASH = "path_backslash"
    PATH_ABSOLUTE = "path_absolute"
    PATH_DOTDOT = "path_dotdot"
    PATH_NOT_NORMAL = "path_not_normal"
    PATH_RESERVED = "path_reserved"
    PATH_DUPLICATE = "path_duplicate"
    PATH_COLLISION_CASE = "path_collision_case"
    PATH_COLLISION_UNICODE = "path_collision_unicode"
    PATH_SYMLINK = "path_symlink"
    PATH_ESCAPES = "path_escapes"
    FILE_MISSING = "file_missing"
    FILE_NOT_REGULAR = "file_not_regular"
    FILE_UNREADABLE = "file_unreadable"
    SIZE_CHANGED = "size_changed"
    CONTENT_CHANGED = "content_changed"
    FILE_TOO_LARGE = "file_too_large"
    TOTAL_TOO_LARGE = "total_too_large"
    TOO_MANY_FILES = "too_many_files"
    EXTRA_FILE = "extra_file"
    EXTRA_SYMLINK = "extra_symlink"
    EXTRA_SPECIAL = "extra_special"
    EXTRA_MORE = "extra_more"
    FOLDER_UNREADABLE = "folder_unreadable"


@dataclass(frozen=True)
class Problem:
    """One reason a checkpoint is invalid.

    Attributes:
        code: a stable code (:class:`ProblemCode`); it compares equal to its string.
        path: the path it names (as listed, or as found on disk), or None for the folder.
        message: one exact human sentence, without the path.
    """

    code: ProblemCode
    path: str | None
    message: str

    def format(self) -> str:
        """Return ``PATH: message`` (the path quoted when it has unusual characters)."""
        if self.path is None:
            return self.message
        return f"{display_path(self.path)}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        """Return ``{"code", "path", "message"}``."""
        return {"code": str(self.code), "path": self.path, "message": self.message}


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


def code_points(path: str) -> str:
    """Return ``path`` quoted, each character outside printable ASCII as its code point.

    ``notes/café.md`` spelled with one ``é`` reads ``"notes/caf\\u00e9.md"``; spelled with
    ``e`` and a combining accent, ``"notes/cafe\\u0301.md"``.

    Why: two names equal under Unicode normalization print the same; only their code points
    tell them apart (a name copied between macOS and Linux may change its spelling).
    """
    out = []
    for char in path:
        if char == '"' or char == "\\":
            out.append("\\" + char)
        elif " " <= char <= "~":
            out.append(char)
        elif ord(char) > 0xFFFF:
            out.append(f"\\U{ord(char):08x}")
        else:
            out.append(f"\\u{ord(char):04x}")
    return '"' + "".join(out) + '"'


def format_bytes(n: int) -> str:
    """Return ``n`` bytes for a message: ``20 MB (20,000,000 bytes)`` or ``30 bytes``."""
    if n and n % 1_000_000 == 0:
        return f"{n // 1_000_000:,} MB ({n:,} bytes)"
    return f"{n:,} bytes"


def plural(n: int, noun: str) -> str:
    """Return ``1 file`` or ``1,001 files`` (thousands separated)."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"
