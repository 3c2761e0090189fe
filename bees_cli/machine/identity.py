"""This computer's identity: a random machine id made once, its name and the signed-in person."""

from __future__ import annotations

import re
import secrets
import socket
from dataclasses import dataclass

from bees_cli.errors import UserError
from bees_cli.machine.files import read_json, write_json_atomic
from bees_cli.machine.paths import state_dir

EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+$")


@dataclass(frozen=True)
class Identity:
    """Who this computer is: ``machine_id`` (32 hex chars, random, made once), ``computer``
    (its name, the hostname by default) and ``person`` (an email, or None until set)."""

    machine_id: str
    computer: str
    person: str | None


def _path():  # noqa: ANN202 - small private helper
    return state_dir() / "machine.json"


def load_identity() -> Identity:
    """Return this computer's identity, creating the machine id on first use (atomically)."""
    data = read_json(_path(), {})
    changed = False
    if not data.get("machine_id"):
        data["machine_id"] = secrets.token_hex(16)
        changed = True
    if not data.get("computer"):
        data["computer"] = socket.gethostname() or "computer"
        changed = True
    if changed:
        write_json_atomic(_path(), data)
    return Identity(data["machine_id"], data["computer"], data.get("person"))


def set_identity(*, person: str | None = None, computer: str | None = None) -> Identity:
    """Set the signed-in person and/or the computer name; return the new identity.

    Raises:
        UserError: ``person`` is not an email address, or ``computer`` is empty.
    """
    current = load_identity()
    data = read_json(_path(), {})
    if person is not None:
        if not EMAIL_RE.match(person):
            raise UserError(
                f"not an email address: {person!r}", hint="e.g. --set-person maya@example.com"
            )
        data["person"] = person
    if computer is not None:
        if not computer.strip():
            raise UserError("the computer name cannot be empty")
        data["computer"] = computer.strip()
    data.setdefault("machine_id", current.machine_id)
    write_json_atomic(_path(), data)
    return load_identity()
