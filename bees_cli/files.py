"""Atomic file writes: a state file is either the old one or the new one, never half of each."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from bees_cli.errors import StateFileInvalid


def write_atomic(path: Path, data: bytes, *, mode: int = 0o644, durable: bool = True) -> None:
    """Write ``data`` to ``path`` atomically.

    The bytes go to a temporary file in the same folder, which is flushed, fsynced (when
    ``durable``), given ``mode`` and renamed over ``path`` (``os.replace`` is atomic on
    POSIX).

    Args:
        path: destination file; its folder is created if missing.
        data: the full new content.
        mode: permission bits of the new file (0o600 for secrets).
        durable: fsync before the rename, so the new content survives a power cut. False
            only for files rewritten on every attempt that a power cut makes moot (a
            stage's ``context.json``, its process group file): still atomic for readers.

    Raises:
        OSError: the folder is not writable or the disk is full; ``path`` is unchanged.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:  # name the file the user knows, not a temporary name
        raise OSError(error.errno, error.strerror, str(path)) from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_json_atomic(path: Path, value: Any, *, mode: int = 0o644) -> None:
    """Write ``value`` as indented UTF-8 JSON to ``path`` atomically (see :func:`write_atomic`)."""
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_atomic(path, text.encode("utf-8"), mode=mode)


def read_json(path: Path, default: Any, *, hint: str | None = None) -> Any:
    """Return the JSON value in ``path``, or ``default`` when the file does not exist.

    Raises:
        StateFileInvalid: the file is not UTF-8 JSON (``hint`` says how to repair it;
            by default: move the file aside).
    """
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
    except IsADirectoryError:
        raise StateFileInvalid(f"{path}: a folder, not a file", hint=hint or _aside(path)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise StateFileInvalid(
            f"{path}: not valid JSON ({error})", hint=hint or _aside(path)
        ) from None


def read_json_object(path: Path, *, hint: str | None = None) -> dict[str, Any]:
    """Return the JSON object in ``path``, or ``{}`` when the file does not exist.

    Raises:
        StateFileInvalid: the file is not UTF-8 JSON, or holds something else than an object.
    """
    value = read_json(path, {}, hint=hint)
    if not isinstance(value, dict):
        raise StateFileInvalid(
            f"{path}: expected a JSON object, got {type(value).__name__}",
            hint=hint or _aside(path),
        )
    return value


def _aside(path: Path) -> str:
    return f"move it aside (mv {path} {path}.bad) and try again"


def logs_dir(run_folder: str | Path) -> Path:
    """Return the run's log folder: ``RUN/logs`` (not created). Here, not in
    :mod:`bees_cli.agents.runner` (which re-exports it): ``bees item show`` lists the logs
    without importing the runner and asyncio (issue 29, point 3)."""
    return Path(run_folder) / "logs"
