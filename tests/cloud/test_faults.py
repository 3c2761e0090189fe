"""Bees Cloud under faults over real HTTP: keys and their items, machines bound to people,
only an item's owner writes its record, and clocks far ahead are refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bees_cli.cloud import wire
from bees_cli.cloud.client import CloudClient
from bees_cli.errors import CloudError, CloudRefused

from .conftest import Team, ThreadServer

NINE = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
SHA = "cd" * 32


def key(machine: str, when: datetime = NINE) -> wire.KeyClaim:
    return wire.KeyClaim(
        schedule_id="weekly", scheduled_time=when, machine_id=machine, computer_name=machine
    )


def item_of(machine: str, item: str, when: datetime = NINE) -> wire.KeyItem:
    return wire.KeyItem(schedule_id="weekly", scheduled_time=when, machine_id=machine, item_id=item)


def claim(item: str, machine: str) -> wire.OwnerClaim:
    return wire.OwnerClaim(item_id=item, machine_id=machine, computer_name=machine)


def change(item: str, machine: str, at: datetime, stage: str) -> wire.RecordChange:
    return wire.RecordChange(
        item_id=item, fields={"stage": stage}, origin_time=at, machine_id=machine
    )


# -- keys remember their item ---------------------------------------------------------


def test_a_retried_key_claim_returns_the_same_grant(team: Team) -> None:
    with team.client() as api:
        first = api.claim_key(key("laptop"))
        again = api.claim_key(key("laptop"))
    assert first.granted and again.granted
    assert again == first
    assert first.item_id is None


def test_the_key_holder_reports_its_item_once_and_keys_without_item_are_listed(
    team: Team,
) -> None:
    later = NINE + timedelta(days=7)
    with team.client() as api:
        api.claim_key(key("laptop"))
        api.claim_key(key("laptop", later))
        assert [k.scheduled_time for k in api.held_keys("laptop", without_item=True)] == [
            NINE,
            later,
        ]
        reported = api.report_key_item(item_of("laptop", "item-9"))
        again = api.report_key_item(item_of("laptop", "item-9"))
        assert (reported.status, reported.item_id) == ("granted", "item-9")
        assert again == reported
        assert api.claim_key(key("laptop")).item_id == "item-9"
        assert [k.scheduled_time for k in api.held_keys("laptop", without_item=True)] == [later]
        assert [(k.scheduled_time, k.item_id) for k in api.held_keys("laptop")] == [
            (NINE, "item-9"),
            (later, None),
        ]
        assert api.held_keys("desktop") == []
        with pytest.raises(CloudRefused) as other_item:
            api.report_key_item(item_of("laptop", "item-10"))
        assert other_item.value.message == (
            "the key of weekly at 2025-01-06T09:00:00.000000Z already made item item-9"
        )
        with pytest.raises(CloudRefused) as not_holder:
            api.report_key_item(item_of("desktop", "item-11", later))
        assert "held by laptop (machine laptop)" in not_holder.value.message
        with pytest.raises(CloudError) as no_key:
            api.report_key_item(item_of("laptop", "item-12", later + timedelta(days=7)))
        assert "no key was granted for weekly at 2025-01-20" in no_key.value.message


def test_keys_of_another_person_are_not_listed_and_their_machine_is_refused(team: Team) -> None:
    with team.client("maya") as maya, team.client("sam") as sam:
        maya.claim_key(key("laptop"))
        with pytest.raises(CloudRefused) as refused:
            sam.held_keys("laptop")
        assert refused.value.message == "machine laptop belongs to another person of the team"
        assert sam.held_keys("sams-pc") == []


# -- a machine id belongs to the person who first used it -----------------------------


def test_another_person_cannot_act_as_a_machine_that_is_not_theirs(team: Team) -> None:
    with team.client("maya") as maya, team.client("sam") as sam:
        assert maya.claim_owner(claim("item-1", "laptop")).granted
        for act in (
            lambda: sam.claim_owner(claim("item-1", "laptop")),
            lambda: sam.claim_owner(claim("item-2", "laptop")),
            lambda: sam.claim_key(key("laptop")),
            lambda: sam.release_owner(
                "item-1", wire.OwnerRelease(machine_id="laptop", checkpoint_sha256=SHA)
            ),
            lambda: sam.report_key_item(item_of("laptop", "item-1")),
        ):
            with pytest.raises(CloudRefused) as refused:
                act()
            assert refused.value.message == "machine laptop belongs to another person of the team"
        answer = sam.push([change("item-1", "laptop", NINE, "Stolen")])
        assert [(r.item_id, r.code) for r in answer.refused] == [("item-1", "machine_not_yours")]
        assert answer.applied == 0
        assert maya.owner_history("item-1")[-1].held  # nothing changed
        assert maya.pull(0).changes == []


def test_machine_not_yours_is_a_403_with_its_code(team: Team) -> None:
    import httpx

    with team.client("maya") as maya:
        maya.claim_key(key("laptop"))
    response = httpx.post(
        f"{team.url}/v1/owners/claim",
        json={"item_id": "x", "machine_id": "laptop", "computer_name": "laptop"},
        headers={"authorization": f"Bearer {team.tokens['sam']}"},
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "machine_not_yours"


# -- only an item's owner writes its record -------------------------------------------


def test_only_the_owner_or_the_last_releaser_writes_an_item(team: Team) -> None:
    at = NINE
    with team.client("maya") as maya, team.client("sam") as sam:
        assert maya.claim_owner(claim("item-1", "laptop")).granted
        sam_try = sam.push([change("item-1", "sams-pc", at, "Sam")])
        desk_try = maya.push([change("item-1", "desktop", at, "Desk")])
        own = maya.push([change("item-1", "laptop", at, "Draft")])
        assert [r.code for r in sam_try.refused] == ["not_owner"]
        assert [r.code for r in desk_try.refused] == ["not_owner"]
        assert (own.applied, own.refused) == (1, [])
        maya.release_owner("item-1", wire.OwnerRelease(machine_id="laptop", checkpoint_sha256=SHA))
        # Free: the machine that released it last still writes; no one else.
        freed = maya.push([change("item-1", "laptop", at + timedelta(seconds=1), "Released")])
        other = maya.push([change("item-1", "desktop", at + timedelta(seconds=2), "Desk")])
        assert (freed.applied, [r.code for r in other.refused]) == (1, ["not_owner"])
        assert other.refused[0].message == (
            "item item-1 is released last by laptop (machine laptop);"
            " machine desktop may not change it"
        )
        # Handed to the desktop: now only the desktop writes.
        assert maya.claim_owner(claim("item-1", "desktop")).granted
        old = maya.push([change("item-1", "laptop", at + timedelta(seconds=3), "Old")])
        new = maya.push([change("item-1", "desktop", at + timedelta(seconds=4), "Review")])
        assert ([r.code for r in old.refused], new.applied) == (["not_owner"], 1)
        [entry] = sam.pull(0).changes
    assert (entry.fields, entry.machine_id) == ({"stage": "Review"}, "desktop")


def test_an_item_never_claimed_is_bound_to_its_first_writer(team: Team) -> None:
    with team.client("maya") as maya:
        both = maya.push(
            [change("item-1", "laptop", NINE, "Draft"), change("item-1", "desktop", NINE, "Desk")]
        )
        later = maya.push([change("item-1", "laptop", NINE + timedelta(seconds=1), "Review")])
    assert (both.applied, [(r.code, r.machine_id) for r in both.refused]) == (
        1,
        [("not_owner", "desktop")],
    )
    assert both.refused[0].message == (
        "item item-1 is written by machine laptop; machine desktop may not change it"
    )
    assert (later.applied, later.refused) == (1, [])


def test_fields_larger_than_the_cap_are_refused_and_pages_are_bounded_in_bytes(
    team: Team,
) -> None:
    big = "x" * (wire.MAX_FIELDS_BYTES - 20)
    with team.client() as api:
        too = api.push(
            [
                wire.RecordChange(
                    item_id="huge",
                    fields={"text": "x" * wire.MAX_FIELDS_BYTES},
                    origin_time=NINE,
                    machine_id="laptop",
                )
            ]
        )
        assert [r.code for r in too.refused] == ["too_large"]
        count = wire.MAX_PULL_BYTES // wire.MAX_FIELDS_BYTES + 5
        made = [
            wire.RecordChange(
                item_id=f"i{n:03d}", fields={"t": big}, origin_time=NINE, machine_id="laptop"
            )
            for n in range(count)
        ]
        for start in range(0, count, 40):  # a request body holds at most 1 MiB
            assert api.push(made[start : start + 40]).refused == []
        page = api.pull(0)
        everything = api.pull_all(0)
    per_page = wire.MAX_PULL_BYTES // (wire.MAX_FIELDS_BYTES - 12)
    assert (len(page.changes), page.more) == (per_page, True)
    assert len(everything.changes) == count


# -- a wrong clock cannot take an item's record for good ------------------------------


def test_a_change_stamped_past_the_tolerance_is_refused_then_a_correct_one_applies(
    clocked_server: ThreadServer,
) -> None:
    storage, clock = clocked_server.storage, clocked_server.clock
    assert storage.add_team("t") is True
    token = storage.add_person("maya@t.example", "t")
    now = clock()
    tolerance = wire.CLOCK_TOLERANCE_SECONDS
    with CloudClient(clocked_server.url, token, backoff=0.01) as api:
        ahead = api.push([change("item-1", "laptop", now + timedelta(seconds=tolerance + 60), "X")])
        at_edge = api.push([change("item-2", "laptop", now + timedelta(seconds=tolerance), "Y")])
        clock.advance(tolerance + 61)
        fixed = api.push([change("item-1", "laptop", clock(), "Draft")])
        pulled = api.pull(0).changes
    [refused] = ahead.refused
    assert (refused.code, refused.offset_seconds, ahead.applied) == ("clock_ahead", 360.0, 0)
    assert refused.message == (
        "the change is stamped 360 s ahead of the Bees Cloud clock (at most 300 s are allowed):"
        " this computer's clock is ahead"
    )
    assert (at_edge.applied, at_edge.refused) == (1, [])
    assert (fixed.applied, fixed.refused) == (1, [])
    assert [(e.item_id, e.fields) for e in pulled] == [
        ("item-2", {"stage": "Y"}),
        ("item-1", {"stage": "Draft"}),
    ]


async def test_a_refused_change_stays_in_the_outbox_until_it_can_be_sent(
    tmp_path: Path, clocked_server: ThreadServer
) -> None:
    """This computer's clock (the real one) is far ahead of the server's (Jan 2025)."""
    from bees_cli.record.sync import SharedRecord, Syncer
    from tests.e2e.conftest import make_computer, record_of

    storage, clock = clocked_server.storage, clocked_server.clock
    assert storage.add_team("t") is True
    token = storage.add_person("maya@t.example", "t")
    laptop = make_computer(
        tmp_path, "maya-laptop", "maya@t.example", url=clocked_server.url, token=token
    )
    record_of(laptop).add_item(
        id="01ITEMREFUSEDFORCLOCK00000", process="p", title="t", workspace="/ws",
        run_folder="/runs", input="{}", stage="Draft",
    )  # fmt: skip
    shared = SharedRecord(laptop.record_path)
    syncer = Syncer(laptop)
    await syncer.sync_once()
    assert [item for item, _, _ in shared.outbox(laptop)] == ["01ITEMREFUSEDFORCLOCK00000"]
    assert storage.pull(token, 0).changes == []
    clock.now = datetime.now(UTC)  # the server's clock is right again
    await syncer.sync_once()
    assert shared.outbox(laptop) == []
    assert [e.item_id for e in storage.pull(token, 0).changes] == ["01ITEMREFUSEDFORCLOCK00000"]
