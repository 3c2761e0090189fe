"""The one exception tree of Bees; only the CLI turns it into a message, a hint and an exit code.

::

    BeesError                      exit 1   anything Bees raises on purpose
    ├── UserError                  exit 2   bad usage or input the user can fix
    │   ├── NotFound               exit 2   a named thing (item, agent, folder…) does not exist
    │   │   └── Ambiguous          exit 2   an id prefix matches several items
    │   ├── StateFileInvalid       exit 2   a state file of this computer is unreadable
    │   └── WorkspaceInvalid       exit 2   the workspace has problems (carries every one)
    ├── Refused                    exit 3   not owner, key taken, checkpoint invalid, bad state
    ├── EngineError                exit 1   the local Temporal engine is missing or failed
    ├── DiskError                  exit 1   a file of this computer cannot be written
    └── CloudError                 exit 1   talking to Bees Cloud failed
        ├── CloudUnreachable       exit 1   connection failed or timed out after retries
        ├── CloudUnauthorized      exit 1   the token is missing, wrong or revoked (HTTP 401)
        └── CloudRefused           exit 3   the server answered no (HTTP 403/409); its
                                            ``code`` is the server's (``not_owner``…)

Bugs are not in this tree: they keep their traceback.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any


class BeesError(Exception):
    """Base of every error Bees raises on purpose.

    Args:
        message: one line saying what went wrong.
        hint: one line saying how to fix it, or None.
    """

    exit_code = 1
    code = "error"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    @property
    def text(self) -> str:
        """The one line the CLI prints after ``error:`` (the message)."""
        return self.message

    def to_json(self) -> dict[str, Any]:
        """Return ``{"code", "message", "hint"}`` for ``--json`` output."""
        return {"code": self.code, "message": self.message, "hint": self.hint}


class UserError(BeesError):
    """Bad usage or input that the user can fix (exit 2)."""

    exit_code = 2
    code = "usage"


class NotFound(UserError):
    """A named item, agent, folder or other object does not exist (exit 2)."""

    code = "not_found"


class Ambiguous(NotFound):
    """An id prefix matches several items (exit 2)."""

    code = "ambiguous"


class StateFileInvalid(UserError, ValueError):
    """A state file of this computer (``machine.json``, ``links.json``…) is not what Bees wrote.

    Also a ``ValueError``, so callers that catch a JSON decoding error still catch it.
    """

    code = "state_file_invalid"


class WorkspaceInvalid(UserError):
    """The workspace has one or more problems.

    Args:
        problems: every problem found in one pass (objects with ``format()`` and
            ``to_json()``, see :mod:`bees_cli.workspace.problems`).
    """

    code = "invalid_workspace"

    def __init__(self, problems: list[Any], *, hint: str | None = None) -> None:
        count = len(problems)
        noun = "problem" if count == 1 else "problems"
        super().__init__(f"the workspace has {count} {noun}", hint=hint)
        self.problems = problems

    def to_json(self) -> dict[str, Any]:
        """Return the error object with the list of problems."""
        data = super().to_json()
        data["problems"] = [p.to_json() for p in self.problems]
        return data


class Refused(BeesError):
    """The request is understood but refused: not the owner, key taken, bad state (exit 3)."""

    exit_code = 3
    code = "refused"


class EngineError(BeesError):
    """The local Temporal engine is missing, unreachable or failed (exit 1)."""

    code = "engine"


class DiskError(BeesError):
    """A file of this computer cannot be written: its disk is read-only or full, or this user
    may not write it (exit 1). The message names the file, on one line.

    Args:
        path: the file.
        why: what is wrong, for people (``the disk is full``).
        full: the disk is full (the hint says to free space, not to make it writable).
        verb: what could not be done with it (``write``; ``use`` when a read may be why).
    """

    code = "disk"

    def __init__(self, path: Path | str, why: str, *, full: bool = False,
                 verb: str = "write") -> None:
        super().__init__(
            f"cannot {verb} {path}: {why}",
            hint="free some space on that disk, then run the command again" if full else
            "make it writable (or run Bees as the user that owns it); `bees status` works "
            "read-only")
        self.path = str(path)


DISK_ERRNOS: dict[int, str] = {
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
}

_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
"""The ``OSError`` numbers that mean a file cannot be written, and how to say each."""


def disk_error_of(error: OSError) -> DiskError | None:
    """Return the :class:`DiskError` an ``OSError`` about a named file means (a read-only or
    full disk, no permission), or None for any other ``OSError`` (a bug keeps its traceback).
    """
    why = DISK_ERRNOS.get(error.errno or 0)
    if why is None or error.filename is None:
        return None
    # no permission may come from a read too; the others only from a write
    verb = "use" if error.errno in (errno.EACCES, errno.EPERM) else "write"
    return DiskError(os_path(error.filename), why, full=error.errno in _FULL, verb=verb)


def os_path(name: Any) -> str:
    """Return an ``OSError``'s file name as text (it may be bytes or a path)."""
    return name.decode(errors="replace") if isinstance(name, bytes) else str(name)


class CloudError(BeesError):
    """Talking to Bees Cloud failed (exit 1).

    ``status`` is the HTTP status of the server's answer when there was one (a 4xx or
    5xx), else None.
    """

    code = "cloud"
    status: int | None = None


class CloudUnreachable(CloudError):
    """Bees Cloud could not be reached after retries (exit 1)."""

    code = "cloud_unreachable"


class CloudUnauthorized(CloudError):
    """Bees Cloud rejected the token (HTTP 401) (exit 1)."""

    code = "cloud_unauthorized"


class CloudRefused(CloudError):
    """Bees Cloud answered no (HTTP 403 or 409) (exit 3).

    Args:
        message: the server's one-line message.
        hint: the server's hint, or None.
        code: the server's error code (``not_owner``, ``machine_not_yours``,
            ``not_key_holder``, ``key_has_item``…); ``cloud_refused`` when the answer
            named none. It is this error's ``code`` in ``--json`` output.
        status: the HTTP status of the answer (403 or 409), or None.
    """

    exit_code = 3
    code = "cloud_refused"

    def __init__(self, message: str, *, hint: str | None = None, code: str | None = None,
                 status: int | None = None) -> None:
        super().__init__(message, hint=hint)
        if code:
            self.code = code
        self.status = status

    @property
    def text(self) -> str:
        """The message with the server's code, as the CLI prints it:
        ``machine laptop belongs to another person of the team (machine_not_yours)``."""
        return f"{self.message} ({self.code})"

    def to_json(self) -> dict[str, Any]:
        """Return ``{"code", "message", "hint", "status"}``; ``code`` is the server's."""
        return {**super().to_json(), "status": self.status}
