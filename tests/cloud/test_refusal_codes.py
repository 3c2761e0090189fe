"""A refusal of Bees Cloud carries the server's own code to the client and the CLI (exit 3)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
import typer
from typer.testing import CliRunner

from bees_cli.cli.errors import error_boundary
from bees_cli.cloud import wire
from bees_cli.cloud.client import CloudClient
from bees_cli.errors import CloudRefused

from .conftest import Team

NINE = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
SHA = "ab" * 32


def _key(machine: str) -> wire.KeyClaim:
    return wire.KeyClaim(schedule_id="weekly", scheduled_time=NINE, machine_id=machine,
                         computer_name=machine)


def _item(machine: str, item: str) -> wire.KeyItem:
    return wire.KeyItem(schedule_id="weekly", scheduled_time=NINE, machine_id=machine,
                        item_id=item)


def _refused(act: Callable[[], object]) -> CloudRefused:
    with pytest.raises(CloudRefused) as refused:
        act()
    return refused.value


def test_each_refusal_carries_the_servers_code_and_status(team: Team) -> None:
    with team.client("maya") as maya, team.client("sam") as sam:
        assert maya.claim_key(_key("laptop")).granted
        assert maya.claim_owner(wire.OwnerClaim(item_id="item-1", machine_id="laptop",
                                                computer_name="laptop")).granted
        maya.report_key_item(_item("laptop", "item-1"))
        seen = [
            _refused(lambda: sam.claim_key(_key("laptop"))),
            _refused(lambda: maya.report_key_item(_item("desktop", "item-2"))),
            _refused(lambda: maya.report_key_item(_item("laptop", "item-2"))),
            _refused(lambda: maya.release_owner("item-1", wire.OwnerRelease(
                machine_id="desktop", checkpoint_sha256=SHA))),
        ]
    assert [(r.code, r.status, r.exit_code) for r in seen] == [
        ("machine_not_yours", 403, 3),
        ("not_key_holder", 403, 3),
        ("key_has_item", 409, 3),
        ("not_owner", 403, 3),
    ]
    assert seen[0].text == (
        "machine laptop belongs to another person of the team (machine_not_yours)"
    )


def test_a_refusal_without_an_error_body_keeps_the_generic_code() -> None:
    import httpx

    transport = httpx.MockTransport(lambda _request: httpx.Response(403, text="no"))
    with CloudClient("http://cloud.test", "tok", transport=transport, retries=0) as api:
        refused = _refused(lambda: api.claim_key(_key("laptop")))
    assert (refused.code, refused.message, refused.status) == ("cloud_refused", "no", 403)


def test_the_cli_prints_the_servers_code_in_json_and_in_text(team: Team) -> None:
    app = typer.Typer()

    @app.command()
    def claim(as_json: bool = typer.Option(False, "--json")) -> None:
        with team.client("sam") as sam:
            sam.claim_key(_key("laptop"))

    @app.command()
    def other() -> None:  # a second command, so typer keeps the sub-command name
        """Nothing."""

    with team.client("maya") as maya:
        maya.claim_key(_key("laptop"))
    app.registered_commands[0].callback = error_boundary(claim)
    runner = CliRunner()
    as_json = runner.invoke(app, ["claim", "--json"])
    as_text = runner.invoke(app, ["claim"])
    assert as_json.exit_code == 3 and as_text.exit_code == 3
    assert json.loads(as_json.stdout) == {"version": 1, "error": {
        "code": "machine_not_yours",
        "message": "machine laptop belongs to another person of the team",
        "hint": "each computer has its own machine id; sign in on your own computer",
        "status": 403,
    }}
    assert as_text.stderr.splitlines()[0] == (
        "error: machine laptop belongs to another person of the team (machine_not_yours)"
    )
