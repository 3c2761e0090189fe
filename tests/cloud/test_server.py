"""Bees Cloud over real HTTP on SQLite and PostgreSQL: keys, owners, handover, teams, record."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from bees_cli.cloud import wire
from bees_cli.errors import CloudRefused, CloudUnauthorized

from .conftest import Team

NINE = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
SHA = "ab" * 32


def key(machine: str, when: datetime = NINE, schedule: str = "weekly-report") -> wire.KeyClaim:
    return wire.KeyClaim(
        schedule_id=schedule, scheduled_time=when, machine_id=machine, computer_name=machine
    )


def claim(item: str, machine: str) -> wire.OwnerClaim:
    return wire.OwnerClaim(item_id=item, machine_id=machine, computer_name=f"{machine}-name")


def release(machine: str, epoch: int | None = None) -> wire.OwnerRelease:
    return wire.OwnerRelease(
        machine_id=machine,
        restart_stages={"main": "Draft", "helper-1": "Review"},
        checkpoint_sha256=SHA,
        epoch=epoch,
    )


def change(item: str, machine: str, at: str, **fields: object) -> wire.RecordChange:
    return wire.RecordChange(item_id=item, fields=dict(fields), origin_time=at, machine_id=machine)


def test_me_names_person_and_team(team: Team) -> None:
    with team.client("sam") as api:
        me = api.me()
    assert (me.person, me.team) == (f"sam@{team.name}.example", team.name)


def test_schedule_key_first_asker_wins_and_is_per_person(team: Team) -> None:
    with team.client("maya") as maya, team.client("sam") as sam:
        laptop = maya.claim_key(key("laptop"))
        desktop = maya.claim_key(key("desktop"))
        again = maya.claim_key(key("laptop"))
        other_time = maya.claim_key(key("desktop", NINE.replace(day=13)))
        sams = sam.claim_key(key("sams-pc"))
    assert laptop.status == "granted"
    assert (desktop.status, desktop.machine_id, desktop.computer_name) == (
        "taken",
        "laptop",
        "laptop",
    )
    assert desktop.granted_at == laptop.granted_at
    assert again == laptop
    assert other_time.status == "granted"
    assert sams.status == "granted"  # keys are per person: Sam's 9:00 is his own
    assert sams.person == f"sam@{team.name}.example"


def test_key_time_is_compared_in_utc(team: Team) -> None:
    with team.client() as api:
        first = api.claim_key(
            wire.KeyClaim(
                schedule_id="s",
                scheduled_time="2025-01-06T10:00:00+01:00",
                machine_id="a",
                computer_name="a",
            )
        )
        second = api.claim_key(key("b", schedule="s"))
    assert first.granted and not second.granted
    assert second.scheduled_time == NINE


def test_owner_claim_release_handover_and_history(team: Team) -> None:
    with team.client("maya") as maya, team.client("sam") as sam:
        won = maya.claim_owner(claim("report-1", "laptop"))
        repeat = maya.claim_owner(claim("report-1", "laptop"))
        lost = sam.claim_owner(claim("report-1", "sams-pc"))
        desktop = maya.claim_owner(claim("report-1", "desktop"))
        assert won.status == "owner" and repeat == won
        assert (lost.status, lost.owner.machine_id, lost.owner.person) == (
            "taken",
            "laptop",
            f"maya@{team.name}.example",
        )
        assert desktop.status == "taken"
        assert [o.item_id for o in sam.list_owners()] == ["report-1"]

        with pytest.raises(CloudRefused) as refused:
            maya.release_owner("report-1", release("desktop"))
        assert "laptop-name" in refused.value.message
        with pytest.raises(CloudRefused):
            sam.release_owner("report-1", release("laptop"))  # right machine id, wrong person
        assert maya.get_owner("report-1") == won.owner

        released = maya.release_owner("report-1", release("laptop", epoch=1))
        assert released.release is not None
        assert released.release.restart_stages == {"main": "Draft", "helper-1": "Review"}
        assert released.release.checkpoint_sha256 == SHA
        assert maya.release_owner("report-1", release("laptop", epoch=1)) == released
        assert sam.list_owners() == []

        handed = maya.claim_owner(claim("report-1", "desktop"))
        assert (handed.status, handed.owner.epoch, handed.owner.machine_id) == (
            "owner",
            2,
            "desktop",
        )
        # The first owner's lost answer, repeated after the handover: still the same answer.
        assert maya.release_owner("report-1", release("laptop", epoch=1)) == released
        with pytest.raises(CloudRefused):
            maya.release_owner("report-1", release("laptop"))  # the latest epoch is the desktop's
        history = sam.owner_history("report-1")
    assert [(o.epoch, o.machine_id, o.held) for o in history] == [
        (1, "laptop", False),
        (2, "desktop", True),
    ]
    assert history[0] == released


def test_release_of_unclaimed_item_is_404(team: Team) -> None:
    with team.client() as api:
        assert api.get_owner("never") is None
        response = httpx.post(
            f"{team.url}/v1/owners/never/release",
            json={"machine_id": "m", "checkpoint_sha256": SHA},
            headers={"authorization": f"Bearer {team.tokens['maya']}"},
        )
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "no_owner"


def test_teams_do_not_see_or_touch_each_other(team: Team, other_team: Team) -> None:
    with team.client() as ours, other_team.client() as theirs:
        mine = ours.claim_owner(claim("shared-name", "laptop"))
        ours.push([change("shared-name", "laptop", "2025-01-06T09:00:00Z", stage="Draft")])
        ours.claim_key(key("laptop"))
        assert theirs.get_owner("shared-name") is None
        assert theirs.list_owners() == []
        assert theirs.owner_history("shared-name") == []
        assert theirs.pull().changes == []
        response = httpx.post(
            f"{team.url}/v1/owners/shared-name/release",
            json={"machine_id": "laptop", "checkpoint_sha256": SHA},
            headers={"authorization": f"Bearer {other_team.tokens['maya']}"},
        )
        assert response.status_code == 404
        # Their claim of the same item id is their own item: ours is untouched.
        assert theirs.claim_owner(claim("shared-name", "intruder")).status == "owner"
        assert theirs.claim_key(key("intruder")).status == "granted"
        assert ours.get_owner("shared-name") == mine.owner
        assert ours.claim_key(key("intruder")).machine_id == "laptop"


def test_bad_and_revoked_tokens_are_401(team: Team, admin: object) -> None:
    for header in ({}, {"authorization": "Bearer nope"}, {"authorization": "Basic abc"}):
        response = httpx.get(f"{team.url}/v1/me", headers=header)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"
    forged = team.tokens["maya"][:-4] + "AAAA"
    assert (
        httpx.get(f"{team.url}/v1/me", headers={"authorization": f"Bearer {forged}"}).status_code
        == 401
    )
    assert admin.revoke_person(f"sam@{team.name}.example", team.name) == 1  # type: ignore[attr-defined]
    with team.client("sam") as sam, pytest.raises(CloudUnauthorized):
        sam.me()


def test_record_later_origin_wins_and_pull_is_incremental(team: Team) -> None:
    with team.client("maya") as maya, team.client("sam") as sam:
        first = maya.push(
            [
                change("a", "laptop", "2025-01-06T09:00:00Z", stage="Draft"),
                change("b", "laptop", "2025-01-06T09:00:00Z", stage="Draft"),
            ]
        )
        assert (first.received, first.applied) == (2, 2)
        page = sam.pull(0)
        assert [(c.item_id, c.fields) for c in page.changes] == [
            ("a", {"stage": "Draft"}),
            ("b", {"stage": "Draft"}),
        ]
        cursor = page.cursor
        assert sam.pull(cursor).changes == []
        late = maya.push([change("a", "laptop", "2025-01-06T08:59:59Z", stage="Old")])
        assert (late.received, late.applied) == (1, 0)
        assert sam.pull(cursor).changes == []
        # b is handed to zz-desktop; at the same origin time the greater machine id wins.
        assert maya.claim_owner(claim("b", "zz-desktop")).granted
        tie = maya.push([change("b", "zz-desktop", "2025-01-06T09:00:00Z", stage="Review")])
        assert (tie.applied, tie.refused) == (1, [])
        after = sam.pull(cursor)
        assert [(c.item_id, c.fields, c.machine_id) for c in after.changes] == [
            ("b", {"stage": "Review"}, "zz-desktop")
        ]
        assert after.cursor > cursor
        assert sam.pull(after.cursor).changes == []


def test_pull_pages(team: Team) -> None:
    with team.client() as api:
        api.push([change(f"i{n:03d}", "m", "2025-01-06T09:00:00Z", n=n) for n in range(25)])
        first = api.pull(0, limit=10)
        assert (len(first.changes), first.more) == (10, True)
        everything = api.pull_all(0)
    assert [c.fields["n"] for c in everything.changes] == list(range(25))
    assert everything.more is False


def test_record_push_refuses_changes_to_items_owned_elsewhere_one_by_one(team: Team) -> None:
    with team.client() as api:
        api.claim_owner(claim("owned", "laptop"))
        api.push([change("owned", "laptop", "2025-01-06T09:00:00Z", stage="Draft")])
        cursor = api.pull(0).cursor
        answer = api.push(
            [
                change("free", "desktop", "2025-01-06T09:01:00Z", stage="Draft"),
                change("owned", "desktop", "2025-01-06T09:01:00Z", stage="Stolen"),
            ]
        )
        assert (answer.received, answer.applied) == (2, 1)
        [refused] = answer.refused
        assert (refused.item_id, refused.code, refused.machine_id) == (
            "owned",
            "not_owner",
            "desktop",
        )
        assert refused.owner is not None and refused.owner.machine_id == "laptop"
        assert refused.message == (
            "item owned is owned by laptop-name (machine laptop); machine desktop may not change it"
        )
        assert [(c.item_id, c.fields) for c in api.pull(cursor).changes] == [
            ("free", {"stage": "Draft"})
        ]


def test_openapi_lists_the_api(team: Team) -> None:
    document = httpx.get(f"{team.url}/openapi.json").json()
    assert {
        "/v1/me",
        "/v1/time",
        "/v1/keys/claim",
        "/v1/keys/item",
        "/v1/keys",
        "/v1/keys/disagreements",
        "/v1/owners",
        "/v1/owners/claim",
        "/v1/owners/{item_id}",
        "/v1/owners/{item_id}/history",
        "/v1/owners/{item_id}/release",
        "/v1/record/push",
        "/v1/record/pull",
    } <= set(document["paths"])


def test_openapi_states_the_id_patterns_and_lengths(team: Team) -> None:
    document = httpx.get(f"{team.url}/openapi.json").json()
    shapes = document["components"]["schemas"]
    id_rule = {
        "type": "string",
        "pattern": wire.ID_PATTERN,
        "minLength": 1,
        "maxLength": 200,
    }
    for model, field in [
        ("KeyClaim", "schedule_id"),
        ("KeyClaim", "machine_id"),
        ("KeyItem", "item_id"),
        ("OwnerClaim", "item_id"),
        ("RecordChange", "item_id"),
        ("RecordChange", "machine_id"),
    ]:
        stated = dict(shapes[model]["properties"][field])
        stated.pop("title")
        assert stated == id_rule, (model, field)
    name = dict(shapes["OwnerClaim"]["properties"]["computer_name"])
    name.pop("title")
    assert name == {
        "type": "string",
        "minLength": 1,
        "maxLength": 200,
    }
    [path_item] = document["paths"]["/v1/owners/{item_id}"]["get"]["parameters"]
    assert (path_item["schema"]["pattern"], path_item["schema"]["maxLength"]) == (
        wire.ID_PATTERN,
        200,
    )
    pull = {
        p["name"]: p["schema"] for p in document["paths"]["/v1/record/pull"]["get"]["parameters"]
    }
    assert pull["since"]["maximum"] == 2**63 - 1


def test_every_refusal_has_one_http_status() -> None:
    from bees_cli.cloud.server import refusals
    from bees_cli.cloud.server.answers import STATUS, status_of

    kinds = refusals.CloudRefusal.__subclasses__()
    assert {kind.__name__: STATUS[kind] for kind in kinds} == {
        "Unauthorized": 401,
        "Forbidden": 403,
        "NotFound": 404,
        "Conflict": 409,
        "Invalid": 422,
    }
    assert status_of(refusals.Conflict("busy", "try again")) == 409
    with pytest.raises(KeyError):
        status_of(refusals.CloudRefusal("x", "a refusal without a kind is a bug"))
