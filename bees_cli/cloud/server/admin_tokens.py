"""The server's admin token: made at first start, written to a file (mode 0600), checked per call.

The database keeps one row (``admin_token``, id 1) with the SHA-256 of the token's secret;
the token itself exists only in the file the server wrote. Replicas starting together on one
PostgreSQL race on the row: exactly one makes the token and writes its file.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from bees_cli.cloud.server.engine import Database
from bees_cli.cloud.server.refusals import Unauthorized
from bees_cli.cloud.server.tables import admin_token
from bees_cli.cloud.wire_admin import ADMIN_TOKEN_PREFIX

TOKEN_FILE_NAME = "cloud-admin.token"
"""The admin token file's name in the server computer's data folder (the default)."""


def default_token_file() -> Path:
    """Return the default admin token file: ``cloud-admin.token`` in this computer's data
    folder (``$BEES_HOME/data`` or platformdirs)."""
    from bees_cli.machine.paths import data_dir

    return data_dir() / TOKEN_FILE_NAME


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


_DUMMY = _hash("not an admin secret")


@dataclass(frozen=True)
class FirstStart:
    """What :meth:`AdminTokens.ensure` found or did.

    Attributes:
        made: True when this start made the token (and wrote ``file``).
        file: the token file this server was told to use.
    """

    made: bool
    file: Path

    @property
    def line(self) -> str:
        """One line for the server's log saying where the admin token is."""
        if self.made:
            return f"admin token written to {self.file} (mode 0600; shown nowhere else)"
        if self.file.is_file():
            return f"admin token in {self.file}"
        return (f"admin token made at an earlier start; {self.file} is not here "
                "(a new one: bees cloud admin-token --db URL)")


class AdminTokens:
    """The admin token of one database.

    Args:
        db: the database.
    """

    def __init__(self, db: Database) -> None:
        self.db = db

    def ensure(self, file: Path) -> FirstStart:
        """Make the admin token when the database has none and write it to ``file`` (0600).

        Raises:
            OSError: ``file`` cannot be written (the token row is not kept then).
        """
        token_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
        with self.db.transaction() as conn:
            made = conn.execute(
                self.db.insert(admin_token)
                .values(id=1, token_id=token_id, secret_sha256=_hash(secret),
                        created_us=self.db.now_us())
                .on_conflict_do_nothing()
                .returning(admin_token.c.id)
            ).all()
            if made:  # written inside the transaction: a failed write keeps no row
                _write(file, f"{ADMIN_TOKEN_PREFIX}.{token_id}.{secret}")
        return FirstStart(made=bool(made), file=file)

    def rotate(self, file: Path) -> None:
        """Replace the admin token (the old one stops working) and write the new one to
        ``file`` (mode 0600).

        Raises:
            OSError: ``file`` cannot be written (the old token stays valid then).
        """
        token_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
        with self.db.transaction() as conn:
            conn.execute(admin_token.delete())
            conn.execute(admin_token.insert().values(
                id=1, token_id=token_id, secret_sha256=_hash(secret),
                created_us=self.db.now_us()))
            _write(file, f"{ADMIN_TOKEN_PREFIX}.{token_id}.{secret}")

    def check(self, token: str) -> None:
        """Accept the admin token; refuse anything else (compared in constant time).

        Raises:
            Unauthorized: ``not_admin`` for a missing, unknown or person's token.
        """
        parts = token.split(".")
        ok = len(parts) == 3 and parts[0] == ADMIN_TOKEN_PREFIX
        with self.db.transaction(write=False) as conn:
            row = conn.execute(
                sa.select(admin_token.c.token_id, admin_token.c.secret_sha256)
            ).first()
        expected = row.secret_sha256 if row is not None else _DUMMY
        same = hmac.compare_digest(expected, _hash(parts[-1]))
        if not (ok and row is not None and same and parts[1] == row.token_id):
            raise Unauthorized(
                "not_admin",
                "this call needs the server's admin token",
                hint="give --admin-token-file FILE (the file `bees cloud serve` wrote) or "
                "set BEES_ADMIN_TOKEN",
            )


def _write(file: Path, token: str) -> None:
    from bees_cli.files import write_atomic

    write_atomic(file, (token + "\n").encode("utf-8"), mode=0o600)
