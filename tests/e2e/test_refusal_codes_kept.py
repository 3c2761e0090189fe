"""A refusal of Bees Cloud keeps the server's own code on the computer side: the owner claim of
``bees continue`` and a push the server refuses whole (an older server's answer)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bees_cli.cloud import wire
from bees_cli.cloud.client import AsyncCloudClient, CloudClient
from bees_cli.errors import CloudRefused, Refused
from bees_cli.handover.continue_ import claim_here
from bees_cli.record.sync import SharedRecord, Syncer
from tests.e2e.conftest import Team, make_computer, record_of

ITEM = "01JREFUSALCODESKEPT000000"


def test_a_claim_refused_by_the_server_keeps_its_code(tmp_path: Path, team: Team) -> None:
    url = team.cloud.url
    laptop = make_computer(tmp_path, "maya-laptop", team.maya, url=url,
                           token=team.tokens[team.maya])
    with CloudClient(url, team.tokens[team.maya], retries=0) as maya:
        # Maya's token is the first to use the laptop's machine id: it is hers from now on
        assert maya.claim_owner(wire.OwnerClaim(
            item_id="01JREFUSALCODESFIRST00000", machine_id=laptop.machine_id,
            computer_name=laptop.computer)).granted
    # Sam's token acting as Maya's machine: the server refuses with machine_not_yours
    sam = dataclasses.replace(
        make_computer(tmp_path, "sam-desktop", team.sam, url=url, token=team.tokens[team.sam]),
        machine_id=laptop.machine_id)
    with pytest.raises(Refused) as refused:
        claim_here(sam, ITEM)
    assert (refused.value.code, refused.value.exit_code) == ("machine_not_yours", 3)
    assert refused.value.message == (
        f"item {ITEM} could not be claimed: machine {laptop.machine_id} belongs to another "
        "person of the team")


class WholeBatchRefusing(AsyncCloudClient):
    """The real client to the real app, whose pushes an older server refuses whole with
    ``code`` (HTTP 403), as it did for an item owned elsewhere."""

    def __init__(self, url: str, token: str, code: str) -> None:
        super().__init__(url, token, retries=0)
        self.code = code
        self.pushes = 0

    async def push(self, changes: list[wire.RecordChange]) -> wire.PushAnswer:
        self.pushes += 1
        raise CloudRefused(f"item {changes[0].item_id} is owned by maya-desktop",
                           code=self.code, status=403)


@pytest.mark.parametrize(("code", "kept"), [("not_owner", "not_owner"),
                                            ("machine_not_yours", "machine_not_yours"),
                                            ("a_code_of_a_newer_server", "refused")])
async def test_a_push_refused_whole_keeps_the_servers_code(
        tmp_path: Path, team: Team, code: str, kept: str) -> None:
    url, token = team.cloud.url, team.tokens[team.maya]
    laptop = make_computer(tmp_path, "maya-laptop", team.maya, url=url, token=token)
    record_of(laptop).add_item(id=ITEM, process="p", title="Week 2", workspace="/ws",
                               run_folder="/runs", input="{}", stage="Draft")
    client = WholeBatchRefusing(url, token, code)
    try:
        done = await Syncer(laptop, client=client).sync_once()
    finally:
        await client.aclose()
    assert (done.pushed, done.refused, client.pushes) == (1, 1, 2)
    assert [(r.item_id, r.code, r.message) for r in SharedRecord(laptop.record_path).refused()
            ] == [(ITEM, kept, f"item {ITEM} is owned by maya-desktop")]


def test_a_code_this_bees_does_not_know_is_kept_as_refused() -> None:
    from bees_cli.record.sync import refusal_code

    assert [refusal_code(c) for c in ("clock_ahead", "too_large", "cloud_refused", "")] == [
        "clock_ahead", "too_large", "refused", "refused"]
