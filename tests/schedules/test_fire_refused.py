"""A key request Bees Cloud refuses ends the fire in "gave up" with the server's own code."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

from bees_cli.record.fires import FireOutcome
from tests.e2e.conftest import Team, cloud, make_computer, service, team, write_workspace

__all__ = ["cloud", "team"]  # the e2e fixtures this module uses

NINE = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)


async def test_a_key_request_refused_for_a_machine_of_another_person_gives_up_with_its_code(
        tmp_path: Path, team: Team) -> None:
    workspace = write_workspace(tmp_path / "ws", team.sam, log=tmp_path / "a.log")
    mayas = make_computer(tmp_path, "maya-laptop", team.maya, url=team.cloud.url,
                          token=team.tokens[team.maya])
    await service(mayas, write_workspace(tmp_path / "maya-ws", team.maya,
                                         log=tmp_path / "b.log"), NINE).fire(
        "monday-report", NINE)  # binds the machine id to Maya
    sams = dataclasses.replace(
        make_computer(tmp_path, "sam-pc", team.sam, url=team.cloud.url,
                      token=team.tokens[team.sam]),
        machine_id=mayas.machine_id)
    row = await service(sams, workspace, NINE).fire("monday-report", NINE)
    assert (row.outcome, row.tries) == (FireOutcome.GAVE_UP, 1)
    assert row.text == (
        f"gave up (cloud refused: machine {mayas.machine_id} belongs to another person of the"
        " team (machine_not_yours))")
