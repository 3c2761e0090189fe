"""A record push sent again (its answer was lost) changes nothing: no new entry, no new
sequence number, no older change over a newer one; over real HTTP on SQLite and
PostgreSQL (issue 29, point 2)."""

from __future__ import annotations

from bees_cli.cloud import wire

from .conftest import Team


def change(item: str, machine: str, at: str, **fields: object) -> wire.RecordChange:
    return wire.RecordChange(item_id=item, fields=dict(fields), origin_time=at, machine_id=machine)


def entries(page: wire.PullAnswer) -> list[tuple[object, ...]]:
    return [(e.item_id, e.fields, e.machine_id, e.seq, e.generation) for e in page.changes]


def test_a_batch_sent_again_after_its_answer_was_lost_changes_nothing(team: Team) -> None:
    with team.client("maya") as maya, team.client("sam") as sam:
        assert maya.claim_owner(wire.OwnerClaim(item_id="owned", machine_id="laptop",
                                                computer_name="laptop-name")).granted
        maya.push([change("b", "laptop", "2025-01-06T09:00:00Z", stage="Draft")])
        start = sam.pull(0).cursor
        batch = [
            change("a", "laptop", "2025-01-06T09:00:00Z", stage="Draft"),
            change("b", "laptop", "2025-01-06T09:00:01Z", stage="Review"),
            change("owned", "laptop", "2025-01-06T09:00:00Z", stage="Draft"),
            change("stolen", "desktop", "2025-01-06T09:00:00Z", stage="Draft"),
            change("stolen", "laptop", "2025-01-06T09:00:00Z", stage="Taken"),
        ]
        first = maya.push(batch)
        assert (first.received, first.applied) == (5, 4)
        assert [(r.item_id, r.machine_id, r.code) for r in first.refused] == [
            ("stolen", "laptop", "not_owner")]
        held = sam.pull_all(start)
        assert entries(held) == [
            ("a", {"stage": "Draft"}, "laptop", start + 1, 0),
            ("b", {"stage": "Review"}, "laptop", start + 2, 0),
            ("owned", {"stage": "Draft"}, "laptop", start + 3, 1),
            ("stolen", {"stage": "Draft"}, "desktop", start + 4, 0),
        ]

        again = maya.push(batch)
        assert (again.received, again.applied) == (5, 0)
        assert [(r.item_id, r.machine_id, r.code) for r in again.refused] == [
            ("stolen", "laptop", "not_owner")]  # an exact repeat is not "superseded"
        assert entries(sam.pull_all(start)) == entries(held)
        assert sam.pull(held.cursor).changes == []

        # a newer change, then the old batch arrives once more: nothing goes back
        newer = maya.push([change("a", "laptop", "2025-01-06T09:05:00Z", stage="Done")])
        assert (newer.applied, newer.refused) == (1, [])
        cursor = sam.pull_all(held.cursor).cursor
        late = maya.push(batch)
        assert (late.received, late.applied) == (5, 0)
        assert [(r.item_id, r.code) for r in late.refused] == [
            ("stolen", "not_owner"), ("a", "superseded")]
        assert sam.pull(cursor).changes == []
        assert [(e.item_id, e.fields) for e in sam.pull_all(start).changes] == [
            ("b", {"stage": "Review"}),
            ("owned", {"stage": "Draft"}),
            ("stolen", {"stage": "Draft"}),
            ("a", {"stage": "Done"}),
        ]


def test_two_changes_of_one_item_in_one_batch_apply_in_their_order(team: Team) -> None:
    with team.client("maya") as maya, team.client("sam") as sam:
        answer = maya.push([
            change("x", "laptop", "2025-01-06T09:00:00Z", stage="Draft"),
            change("y", "laptop", "2025-01-06T09:00:02Z", stage="Done"),
            change("x", "laptop", "2025-01-06T09:00:01Z", stage="Review"),
            change("y", "laptop", "2025-01-06T09:00:01Z", stage="Review"),
        ])
        assert (answer.received, answer.applied) == (4, 3)
        assert [(r.item_id, r.code) for r in answer.refused] == [("y", "superseded")]
        page = sam.pull_all(0)
        seqs = [e.seq for e in page.changes]
        assert [(e.item_id, e.fields) for e in page.changes] == [
            ("y", {"stage": "Done"}), ("x", {"stage": "Review"})]
        assert seqs[1] - seqs[0] == 1  # x took the third change's number, y the second's
