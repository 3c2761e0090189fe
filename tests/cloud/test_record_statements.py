"""A record push writes its batch with one prepared statement, whatever its size (issue 29,
point 2); on SQLite and PostgreSQL."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from bees_cli.cloud import wire
from bees_cli.cloud.server.storage import Storage


@pytest.fixture
def storage(db_url: str, admin: Storage) -> Iterator[Storage]:
    """A second server process's storage on the session database."""
    storage = Storage(db_url, migrate=False)
    yield storage
    storage.close()


def change(item: str, second: int, **fields: object) -> wire.RecordChange:
    return wire.RecordChange(item_id=item, fields=dict(fields), machine_id="laptop",
                             origin_time=f"2025-01-06T09:00:{second:02d}Z")


@pytest.mark.parametrize("count", [1, 10, wire.MAX_BATCH])
def test_a_push_is_one_insert_whatever_its_size(
    storage: Storage, admin: Storage, count: int
) -> None:
    name = f"team-{secrets.token_hex(4)}"
    admin.add_team(name)
    token = admin.add_person(f"maya@{name}.example", name)
    storage.push(token, wire.RecordPush(changes=[change("warm-up", 0)]))
    cursor = admin.pull(token, 0).cursor
    seen: list[str] = []

    def note(_conn: object, _cursor: object, sql: str, *_args: object) -> None:
        seen.append(sql.split()[0].upper())

    sa.event.listen(storage.engine, "before_cursor_execute", note)
    try:
        answer = storage.push(token, wire.RecordPush(
            changes=[change(f"i{n:04d}", 1, n=n) for n in range(count)]))
    finally:
        sa.event.remove(storage.engine, "before_cursor_execute", note)
    assert (answer.received, answer.applied) == (count, count)
    assert seen.count("INSERT") == 1
    assert [e.fields["n"] for e in admin.pull(token, cursor).changes] == list(range(count))
