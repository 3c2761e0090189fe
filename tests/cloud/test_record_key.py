"""Property: Bees Cloud and a computer order shared-record changes by the same key.

The server (``Storage.push``, SQL on SQLite or PostgreSQL) and a computer's copy of the
team (``SharedRecord.apply``, SQLite) both keep per item the change with the greatest
:class:`~bees_cli.cloud.wire.RecordKey` (owner generation first, then origin time, machine
id, digest); arbitrary changes must give equal keys and the same winners on both sides, and
the same as Python's own tuple order. Each change is pushed by its machine made the item's
owner first, so a change of another machine than the previous one opens a new generation.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bees_cli.cloud import wire
from bees_cli.cloud.server.storage import Storage
from bees_cli.cloud.server.tables import record
from bees_cli.record.sync import SharedRecord
from bees_cli.utc import to_us

from .conftest import Team, make_team

ids = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._:@+=-]{0,8}\Z").filter(lambda v: ".." not in v)
# Machine ids that sort differently by bytes and by a natural-language collation.
machines = st.sampled_from(["a", "B", "b-", "b.", "b0", "Z", "z", "m", "m:1", "M=1"]) | ids
# Not in the future: the server refuses changes stamped ahead of its clock (clock_ahead).
instants = st.datetimes(datetime(2000, 1, 1), datetime(2025, 1, 1), timezones=st.just(UTC))
zones = st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-wire.MAX_INT, wire.MAX_INT)  # the server refuses integers past 64 bits
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
fields = st.dictionaries(st.text(max_size=6), json_values, max_size=3)


@st.composite
def changes(draw: st.DrawFn, items: list[str], least: int = 1) -> list[wire.RecordChange]:
    """``least``-10 changes to ``items``, from a few instants written in any zone (many ties)."""
    moments = draw(st.lists(instants, min_size=1, max_size=3))
    return draw(
        st.lists(
            st.builds(
                lambda item, moment, zone, machine, values: wire.RecordChange(
                    item_id=item,
                    fields=values,
                    origin_time=moment.astimezone(zone).isoformat(),
                    machine_id=machine,
                ),
                st.sampled_from(items),
                st.sampled_from(moments),
                zones,
                machines,
                fields | st.sampled_from([{"stage": "Draft"}, {"stage": "Review"}]),
            ),
            min_size=least,
            max_size=10,
        )
    )


def _entry(change: wire.RecordChange, seq: int, generation: int) -> wire.RecordEntry:
    """The change as a pull would deliver it, taken in owner ``generation``."""
    return wire.RecordEntry(
        item_id=change.item_id,
        fields=change.fields,
        origin_time=change.origin_time,
        machine_id=change.machine_id,
        person="maya@example.com",
        seq=seq,
        generation=generation,
    )


def _client_rows(shared: SharedRecord, items: list[str]) -> dict[str, tuple[Any, wire.RecordKey]]:
    with sqlite3.connect(shared.path) as db:
        rows = db.execute(
            "SELECT item_id, fields, generation, origin_us, machine_id, digest FROM team_items"
            f" WHERE item_id IN ({','.join('?' * len(items))})",
            items,
        ).fetchall()
    return {r[0]: (json.loads(r[1]), wire.RecordKey(r[2], r[3], r[4], r[5])) for r in rows}


def _server_rows(admin: Storage, items: list[str]) -> dict[str, wire.RecordKey]:
    with admin.engine.connect() as conn:
        rows = conn.execute(
            sa.select(
                record.c.item_id,
                record.c.generation,
                record.c.origin_us,
                record.c.machine_id,
                record.c.digest,
            ).where(record.c.item_id.in_(items))
        ).all()
    return {
        r.item_id: wire.RecordKey(r.generation, r.origin_us, r.machine_id, r.digest)
        for r in rows
    }


@pytest.fixture
def shared(tmp_path: Path) -> SharedRecord:
    """A computer's record file with the sync tables (reused across examples)."""
    return SharedRecord(tmp_path / "record.db")


@pytest.fixture
def keyed_team(admin: Storage) -> Team:
    """A team on the session database (reused across examples; items are fresh)."""
    return make_team(admin, "unused")


def hand_to(admin: Storage, token: str, item: str, machine: str) -> int:
    """Make ``machine`` the item's owner (releasing the previous one): only it may write.
    Return the owner generation it holds (a new one when the item changed hands)."""
    latest = admin.owner_history(token, item)
    if latest and latest[-1].machine_id == machine:
        return latest[-1].epoch
    if latest and latest[-1].held:
        admin.release_owner(
            token,
            item,
            wire.OwnerRelease(machine_id=latest[-1].machine_id, checkpoint_sha256="ab" * 32),
        )
    answer = admin.claim_owner(
        token, wire.OwnerClaim(item_id=item, machine_id=machine, computer_name=machine)
    )
    assert answer.granted
    return answer.owner.epoch


def push_as_owner(
    admin: Storage, token: str, change: wire.RecordChange
) -> tuple[wire.PushAnswer, int]:
    """Push one change from its machine, made the item's owner first; return the answer
    and the owner generation the change was pushed in."""
    generation = hand_to(admin, token, change.item_id, change.machine_id)
    answer = admin.push(token, wire.RecordPush(changes=[change]))
    assert answer.refused == []
    return answer, generation


SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(data=st.data())
def test_client_and_server_keep_the_same_winner_with_the_same_key(
    admin: Storage, keyed_team: Team, shared: SharedRecord, data: st.DataObject
) -> None:
    items = [f"k-{secrets.token_hex(6)}" for _ in range(2)]
    made = data.draw(changes(items), label="changes")
    server_order = data.draw(st.permutations(made), label="server order")
    pushed = [
        (change, push_as_owner(admin, keyed_team.tokens["maya"], change)[1])
        for change in server_order
    ]
    expected: dict[str, tuple[Any, wire.RecordKey]] = {}
    for change, generation in pushed:
        key = wire.RecordKey.of(change, generation)
        assert (key.generation, key.origin_us) == (generation, to_us(change.origin_time))
        if change.item_id not in expected or key > expected[change.item_id][1]:
            expected[change.item_id] = (change.fields, key)

    pulled = admin.pull(keyed_team.tokens["maya"], 0, generations=True).changes
    server = {e.item_id: (e.fields, wire.RecordKey.of(e)) for e in pulled if e.item_id in items}
    assert server == expected
    assert _server_rows(admin, items) == {item: key for item, (_, key) in expected.items()}

    client_order = data.draw(st.permutations(pushed), label="client order")
    for seq, (change, generation) in enumerate(client_order, start=1):
        shared.apply([_entry(change, seq, generation)], seq)
    assert _client_rows(shared, items) == expected


@SETTINGS
@given(data=st.data())
def test_a_second_change_wins_on_both_sides_exactly_when_its_key_is_greater(
    admin: Storage, keyed_team: Team, shared: SharedRecord, data: st.DataObject
) -> None:
    item = f"p-{secrets.token_hex(6)}"
    first, second = data.draw(changes([item], least=2), label="pair")[:2]

    token = keyed_team.tokens["maya"]
    pushed, one = push_as_owner(admin, token, first)
    assert pushed.applied == 1
    pushed, two = push_as_owner(admin, token, second)
    wins = wire.RecordKey.of(second, two) > wire.RecordKey.of(first, one)
    # another machine took the item over: a new generation, whose change wins whatever
    # the two clocks say
    assert (two, wins) == ((one + 1, True) if second.machine_id != first.machine_id
                           else (one, wins))
    assert pushed.applied == int(wins)

    assert shared.apply([_entry(first, 1, one)], 1) == 1
    assert shared.apply([_entry(second, 2, two)], 2) == int(wins)
