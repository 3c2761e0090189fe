"""This computer's identity: a random machine id made once, its name and the signed-in person."""

from __future__ import annotations

import re
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bees_cli.errors import StateFileInvalid, UserError
from bees_cli.files import read_json_object, write_json_atomic
from bees_cli.ids import check_email
from bees_cli.machine.paths import state_dir

MACHINE_ID_RE = re.compile(r"^[0-9a-f]{32}$")


def _is_email(text: str) -> bool:
    """True when ``text`` is an email address by the one shared rule
    (:func:`bees_cli.ids.check_email`)."""
    try:
        check_email(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Identity:
    """Who this computer is: ``machine_id`` (32 hex chars, random, made once), ``computer``
    (its name, the hostname by default) and ``person`` (an email, or None until set)."""

    machine_id: str
    computer: str
    person: str | None


def _path(state: Path | None = None) -> Path:
    return (state or state_dir()) / "machine.json"


def _read(state: Path | None = None) -> dict[str, Any]:
    """Return ``machine.json`` checked field by field ({} when it does not exist yet)."""
    path = _path(state)
    hint = (
        f"repair it, or move it aside to make a new machine id (mv {path} {path}.bad); "
        "items this computer owns in Bees Cloud stay with the old id"
    )
    data = read_json_object(path, hint=hint)
    checks = {
        "machine_id": lambda v: isinstance(v, str) and MACHINE_ID_RE.match(v),
        "computer": lambda v: isinstance(v, str) and v.strip(),
        "person": lambda v: v is None or (isinstance(v, str) and _is_email(v)),
    }
    for field, check in checks.items():
        if field in data and not check(data[field]):
            raise StateFileInvalid(f"{path}: {field} {data[field]!r} is not valid", hint=hint)
    return data


def load_identity(state: Path | None = None) -> Identity:
    """Return this computer's identity, creating the machine id on first use (atomically).

    Args:
        state: the computer's state folder (default: :func:`~bees_cli.machine.paths.state_dir`).

    Raises:
        StateFileInvalid: ``machine.json`` is not JSON or holds a malformed field.
    """
    data = _read(state)
    changed = False
    if not data.get("machine_id"):
        data["machine_id"] = secrets.token_hex(16)
        changed = True
    if not data.get("computer"):
        data["computer"] = socket.gethostname() or "computer"
        changed = True
    if changed:
        write_json_atomic(_path(state), data)
    return Identity(data["machine_id"], data["computer"], data.get("person"))


def set_identity(*, person: str | None = None, computer: str | None = None,
                 state: Path | None = None) -> Identity:
    """Set the signed-in person and/or the computer name; return the new identity.

    Args:
        person: the person's email, or None to keep it.
        computer: the computer's name, or None to keep it.
        state: the computer's state folder (default: this one's).

    Raises:
        UserError: ``person`` is not an email address, or ``computer`` is empty.
    """
    current = load_identity(state)
    data = _read(state)
    if person is not None:
        if not _is_email(person):
            raise UserError(
                f"not an email address: {person!r}", hint="e.g. --set-person maya@example.com"
            )
        data["person"] = person
    if computer is not None:
        if not computer.strip():
            raise UserError("the computer name cannot be empty")
        data["computer"] = computer.strip()
    data.setdefault("machine_id", current.machine_id)
    write_json_atomic(_path(state), data)
    return load_identity(state)
