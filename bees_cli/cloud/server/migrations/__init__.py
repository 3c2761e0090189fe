"""Alembic migrations of the Bees Cloud schema, run programmatically at server start."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import Engine

HERE = Path(__file__).resolve().parent
_LOCK_KEY = 0x6265657363  # "beesc": the advisory lock that serialises migrations


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database behind ``engine`` to ``revision`` (default: the newest).

    Several server processes may start together on one PostgreSQL: the migration
    runs in one transaction holding an advisory lock, so one migrates and the others
    then find the schema current. On SQLite the transaction is ``BEGIN IMMEDIATE``.
    """
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(HERE))
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_LOCK_KEY})")
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
