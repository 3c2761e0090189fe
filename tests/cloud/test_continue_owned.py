"""``bees continue`` on an item another computer owns: the refusal carries the server's word
for it (``not_owner``) in ``--json``, and an item that finished there says it is done."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from bees_cli.cloud import wire
from bees_cli.machine.computer import Computer
from bees_cli.record.shared import SharedRecord

from ..conftest import BeesRunner
from .conftest import Team

ITEM = "01JH3QX5Z8KZ2W4M6N8P0R2T4V"


def test_continue_of_an_item_owned_elsewhere_is_not_owner_and_a_done_one_says_done(
        bees: BeesRunner, team: Team) -> None:
    with team.client("maya") as desktop:
        answer = desktop.claim_owner(wire.OwnerClaim(
            item_id=ITEM, machine_id="m" * 32, computer_name="maya-desktop"))
    assert answer.granted
    maya = f"maya@{team.name}.example"
    assert bees("login", team.url, "--token", team.tokens["maya"]).returncode == 0

    held = bees("continue", ITEM, "--json")
    assert held.returncode == 3, held.stderr
    assert json.loads(held.stdout)["error"] == {
        "code": "not_owner",
        "message": f"item {ITEM} is owned by maya-desktop ({maya}): it must be relinquished "
                   "there first",
        "hint": f"bees relinquish {ITEM} on maya-desktop"}

    # the shared record says it finished on the desktop: nothing to continue, nothing to
    # relinquish
    SharedRecord(Computer.load().record_path).apply([wire.RecordEntry(
        item_id=ITEM, fields={"process": "report", "stage": "Done", "status": "done",
                              "computer": "maya-desktop"},
        origin_time=datetime(2026, 12, 1, 8, 0, tzinfo=UTC), machine_id="m" * 32,
        person=maya, seq=1)], 1)
    done = bees("continue", ITEM)
    assert done.returncode == 3
    assert done.stderr.splitlines() == [
        f"error: item {ITEM} is done (on maya-desktop): nothing to continue",
        f"hint: bees item show {ITEM} shows its story"]
    assert json.loads(bees("continue", ITEM, "--json").stdout)["error"]["code"] == "not_owner"
