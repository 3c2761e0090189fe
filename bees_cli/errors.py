"""The one exception tree of Bees; only the CLI turns it into a message, a hint and an exit code.

::

    BeesError                      exit 1   anything Bees raises on purpose
    ├── UserError                  exit 2   bad usage or input the user can fix
    │   ├── NotFound               exit 1   a named thing (item, agent, folder…) does not exist
    │   │   └── Ambiguous          exit 2   an id prefix matches several items
    │   ├── StateFileInvalid       exit 2   a state file of this computer is unreadable
    │   └── WorkspaceInvalid       exit 2   the workspace has problems (carries every one)
    ├── Refused                    exit 3   not owner, key taken, checkpoint invalid, bad state
    ├── EngineError                exit 1   the local Temporal engine is missing or failed
    ├── WaitTimedOut               exit 1   ``--wait --timeout`` ran out (the item and its state)
    ├── DiskError                  exit 1   a file of this computer cannot be written
    ├── IoFailure                  exit 1   any other I/O error on a named file
    ├── CloudError                 exit 1   talking to Bees Cloud failed
    │   ├── CloudUnreachable       exit 1   connection failed or timed out after retries
    │   ├── CloudUnauthorized      exit 1   the token is missing, wrong or revoked (HTTP 401)
    │   └── CloudRefused           exit 3   the server answered no (HTTP 403/409); its
    │                                       ``code`` is the server's (``not_owner``…)
    └── ModelError                 exit 1   talking to (or serving) a language model failed
        ├── ModelUnavailable       exit 1   connection failed, timed out or HTTP 5xx, after retries
        ├── ModelRateLimited       exit 1   HTTP 429 after retries, or a Retry-After too long
        ├── ModelUnauthorized      exit 1   HTTP 401/403, or the key's environment variable is unset
        ├── ModelRejected          exit 1   another HTTP 4xx: the request is refused as it is
        │   └── ModelContextExceeded        the conversation no longer fits the context window
        └── ModelAnswerInvalid     exit 1   the answer is not the protocol's JSON or what was asked
            └── ModelToolCallInvalid        a tool call's arguments are not a JSON object

Every ``ModelError`` says whether repeating the same call may succeed (``retryable``) and,
after a 429, how long the server asked to wait (``retry_after``, seconds). Its text names the
server's URL and the *name* of the key's environment variable, never the key.

Bugs are not in this tree. The CLI's one table of exit codes is
``bees_cli.cli.errors.EXIT_CODES``; these ``exit_code`` attributes agree with it (a test).
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
    """A named item, agent, folder or other object does not exist (exit 1, as gh and
    kubectl do: the usage was right, the thing is missing)."""

    exit_code = 1
    code = "not_found"


class Ambiguous(NotFound):
    """An id prefix matches several items (exit 2: give more of the id)."""

    exit_code = 2
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


class ActionInterrupted(BeesError):
    """An add-on action was killed by a signal while it ran (exit 1): it may have taken
    effect, so its intent stays open and a person decides (DESIGN.md, under faults)."""

    code = "action_interrupted"


class EngineError(BeesError):
    """The local Temporal engine is missing, unreachable or failed (exit 1)."""

    code = "engine"


class WaitTimedOut(BeesError):
    """``bees item create --wait --timeout SECONDS`` ran out before the item ended or stopped
    for a person (exit 1). ``--json`` carries the item and the last state seen.

    Args:
        item_id: the item waited for.
        seconds: the timeout.
        status: its status when the wait gave up (a ``Status`` value, e.g. ``waiting``).
        stage: its stage then, or None.
        status_text: the status as people read it (``waiting: the engine is not running``).
    """

    code = "timed_out"

    def __init__(self, item_id: str, *, seconds: float, status: str, stage: str | None,
                 status_text: str) -> None:
        super().__init__(f"timed out after {seconds:g} s waiting for {item_id} "
                         f"(status: {status_text})", hint=f"bees item show {item_id}")
        self.item_id = item_id
        self.status = status
        self.stage = stage

    def to_json(self) -> dict[str, Any]:
        """Return ``{"code", "message", "hint", "item_id", "item_status", "stage"}``."""
        return {**super().to_json(), "item_id": self.item_id, "item_status": self.status,
                "stage": self.stage}


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


class IoFailure(BeesError):
    """An I/O error on a named file that is not a full or read-only disk (exit 1): e.g.
    ``BEES_HOME`` names a file, not a folder, or ``bees schemas write`` is given a path
    under a file."""

    code = "io"


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
    """Bees Cloud rejected the token (HTTP 401) (exit 1); ``code`` is ``runner_retired``
    when the token is a runner's that an admin retired (:func:`is_retired`)."""

    code = "cloud_unauthorized"


def is_retired(error: BaseException) -> bool:
    """Return True when ``error`` is Bees Cloud refusing a retired runner (``runner_retired``):
    the runner is fenced and must stop (DESIGN.md, Runners)."""
    return isinstance(error, CloudUnauthorized) and error.code == "runner_retired"


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


class ModelError(BeesError):
    """Talking to a language model's API, or serving the embedded model, failed (exit 1).

    Args:
        message: one line; names the server's URL and the key's variable, never the key.
        hint: one line saying how to fix it, or None.
        retryable: whether repeating the same call may succeed (a workflow's retry policy
            reads it; a refused key or a request that is wrong as it is never is).
        retry_after: seconds the server asked to wait before the next call (HTTP 429
            ``Retry-After``), or None.
    """

    code = "model"

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.retryable = retryable
        self.retry_after = retry_after


class ModelUnavailable(ModelError):
    """The model's server could not be reached, timed out, or answered HTTP 5xx (exit 1)."""

    code = "model_unavailable"


class ModelRateLimited(ModelError):
    """The model's server answered HTTP 429 and waiting did not help, or was too long (exit 1)."""

    code = "model_rate_limited"


class ModelUnauthorized(ModelError):
    """The model's server refused the key (HTTP 401/403), or the key's variable is unset."""

    code = "model_unauthorized"


class ModelRejected(ModelError):
    """The model's server refused the request as it is (an HTTP 4xx other than 401/403/429)."""

    code = "model_rejected"


class ModelContextExceeded(ModelRejected):
    """The conversation no longer fits the model's context window (HTTP 400 saying so)."""

    code = "model_context_exceeded"


class ModelAnswerInvalid(ModelError):
    """The model's answer is not the protocol's JSON, or its content is not what was asked."""

    code = "model_answer_invalid"


class ModelReplyTooLarge(ModelAnswerInvalid):
    """The model's reply was larger than ``runner.model.max_reply_bytes``; it was cut off
    there, unread (not retryable: the same request may well answer as much again)."""

    code = "model_reply_too_large"


class ModelToolCallInvalid(ModelAnswerInvalid):
    """A tool call's arguments are not a JSON object (told back to the model by the loop).

    Args:
        message: one line naming the tool and what is wrong.
        tool_call_id: the call's id, so the loop can answer that call.
        tool: the tool's name as the model wrote it.
    """

    code = "model_tool_call_invalid"

    def __init__(self, message: str, *, tool_call_id: str, tool: str) -> None:
        super().__init__(message)
        self.tool_call_id = tool_call_id
        self.tool = tool
