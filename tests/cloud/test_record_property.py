"""Property: the same record changes, in any order and any batches, end in the same record.

Each item is written by one machine (an item never claimed is bound to the machine that
first wrote it); ties between machines are covered by ``test_record_key.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bees_cli.cloud import wire
from bees_cli.cloud.server.storage import Storage

from .conftest import make_team

BASE = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
WRITER = {"a": "m1", "b": "m2", "c": "m3"}

changes_strategy = st.lists(
    st.builds(
        lambda item, seconds, stage: wire.RecordChange(
            item_id=item,
            fields={"stage": stage},
            origin_time=BASE + timedelta(seconds=seconds),
            machine_id=WRITER[item],
        ),
        item=st.sampled_from(["a", "b", "c"]),
        seconds=st.integers(0, 3),  # few distinct times: many ties
        stage=st.sampled_from(["Draft", "Review", "Done"]),
    ),
    min_size=1,
    max_size=12,
)


def _expected(changes: list[wire.RecordChange]) -> dict[str, tuple[object, ...]]:
    """Per item the greatest (origin time, machine id, canonical fields) wins."""
    import hashlib

    best: dict[str, tuple[object, ...]] = {}
    for c in changes:
        digest = hashlib.sha256(wire.canonical_json(c.fields).encode()).hexdigest()
        candidate = (c.origin_time, c.machine_id, digest, c.fields)
        if c.item_id not in best or candidate[:3] > best[c.item_id][:3]:  # type: ignore[operator]
            best[c.item_id] = candidate
    return {item: (v[3], v[0], v[1]) for item, v in best.items()}


def _record(admin: Storage, token: str) -> dict[str, tuple[object, ...]]:
    pulled = admin.pull(token, 0)
    return {c.item_id: (c.fields, c.origin_time, c.machine_id) for c in pulled.changes}


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), changes=changes_strategy)
def test_any_order_any_batches_same_record(
    admin: Storage, data: st.DataObject, changes: list[wire.RecordChange]
) -> None:
    order = data.draw(st.permutations(changes), label="order")
    cuts = sorted(
        data.draw(st.sets(st.integers(1, max(1, len(order) - 1)), max_size=4), label="cuts")
    )
    batches = [order[a:b] for a, b in zip([0, *cuts], [*cuts, len(order)], strict=True)]
    one = make_team(admin, "unused")
    other = make_team(admin, "unused")
    admin.push(one.tokens["maya"], wire.RecordPush(changes=changes))
    for batch in batches:
        admin.push(other.tokens["sam"], wire.RecordPush(changes=batch))
    expected = _expected(changes)
    assert _record(admin, one.tokens["maya"]) == expected
    assert _record(admin, other.tokens["sam"]) == expected
