"""Bees Cloud over real HTTP: the last releaser repairs a free item's release (issue 12)."""

from __future__ import annotations

import httpx
import pytest

from bees_cli.cloud import wire
from bees_cli.errors import CloudRefused

from .conftest import Team

OLD = "ab" * 32
NEW = "cd" * 32


def claim(item: str, machine: str) -> wire.OwnerClaim:
    return wire.OwnerClaim(item_id=item, machine_id=machine, computer_name=f"{machine}-name")


def release(machine: str, sha: str, stage: str = "Draft") -> wire.OwnerRelease:
    return wire.OwnerRelease(machine_id=machine, restart_stages={"main": stage},
                             checkpoint_sha256=sha)


def test_only_the_last_releaser_repairs_a_free_items_release(team: Team) -> None:
    with team.client("maya") as maya, team.client("sam") as sam:
        maya.claim_owner(claim("rep-1", "laptop"))
        with pytest.raises(CloudRefused) as held:
            maya.repair_owner("rep-1", release("laptop", NEW))
        assert (held.value.code, held.value.message) == (
            "not_released", "item rep-1 is held by laptop-name: there is no release to repair")
        first = maya.release_owner("rep-1", release("laptop", OLD))
        assert first.release is not None and first.release.checkpoint_sha256 == OLD
        # a repeated release keeps the first digest: that is what strands an item
        assert maya.release_owner("rep-1", release("laptop", NEW)) == first

        with pytest.raises(CloudRefused) as other_machine:
            maya.repair_owner("rep-1", release("desktop", NEW))
        assert (other_machine.value.code, other_machine.value.status) == ("not_owner", 403)
        assert other_machine.value.message == (
            f"item rep-1: laptop-name (maya@{team.name}.example, machine laptop) released it "
            "last; only the computer that released it last can repair its release")
        with pytest.raises(CloudRefused) as wrong_person:
            sam.repair_owner("rep-1", release("laptop", NEW))  # right machine, wrong person
        assert wrong_person.value.code == "machine_not_yours"

        repaired = maya.repair_owner("rep-1", release("laptop", NEW, "Review"))
        assert repaired.release is not None
        assert (repaired.epoch, repaired.machine_id, repaired.release.checkpoint_sha256,
                repaired.release.restart_stages, repaired.release.released_at) == (
            1, "laptop", NEW, {"main": "Review"}, first.release.released_at)
        assert sam.get_owner("rep-1") == repaired

        taken = sam.claim_owner(claim("rep-1", "sams-pc"))
        assert (taken.status, taken.owner.epoch) == ("owner", 2)
        with pytest.raises(CloudRefused) as after:
            maya.repair_owner("rep-1", release("laptop", OLD))
        assert after.value.code == "not_owner"
        assert after.value.message == (
            f"item rep-1: sams-pc-name (sam@{team.name}.example, machine sams-pc) holds it; "
            "only the computer that released it last can repair its release")
        assert [o.release.checkpoint_sha256 if o.release else None
                for o in sam.owner_history("rep-1")] == [NEW, None]


def test_repair_of_unclaimed_item_is_404_and_is_in_the_api(team: Team) -> None:
    answer = httpx.post(f"{team.url}/v1/owners/never/repair",
                        json=release("laptop", NEW).model_dump(mode="json"),
                        headers={"Authorization": f"Bearer {team.tokens['maya']}"})
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "no_owner"
    document = httpx.get(f"{team.url}/openapi.json").json()
    assert "/v1/owners/{item_id}/repair" in document["paths"]
