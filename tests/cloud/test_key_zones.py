"""Schedule keys are one per wall-clock time: computers whose zone rules disagree run it once.

Issue 11, point 9, over real HTTP on SQLite and PostgreSQL: a claim carries the fire's
wall-clock time and zone; a second claim for them at another instant is ``taken``, and
both computers can read the disagreement (in the claim's answer and in the listing).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from bees_cli.cloud import wire
from bees_cli.cloud.client import AsyncCloudClient
from bees_cli.errors import CloudRefused

from .conftest import Team

EIGHT = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
"""09:00 in Europe/Paris by the current rules."""
SEVEN = datetime(2025, 1, 6, 7, 0, tzinfo=UTC)
"""09:00 in Europe/Paris by a tz database that puts Paris at UTC+2 in winter."""


def claim(machine: str, at: datetime, tz: str | None, local: str = "2025-01-06T09:00",
          schedule: str = "weekly") -> wire.KeyClaim:
    return wire.KeyClaim(schedule_id=schedule, scheduled_time=at, machine_id=machine,
                         computer_name=f"{machine}-name", local_time=local,
                         zone="Europe/Paris", tz_version=tz)


def test_a_wall_clock_time_placed_at_two_instants_is_granted_once_and_noted(
    team: Team,
) -> None:
    with team.client("maya") as maya:
        first = maya.claim_key(claim("laptop", SEVEN, "2023c"))
        second = maya.claim_key(claim("desktop", EIGHT, "2025b"))
        again = maya.claim_key(claim("desktop", EIGHT, "2025b"))  # a retry: noted once
        holder = maya.claim_key(claim("laptop", SEVEN, "2023c"))
        from_laptop = maya.key_disagreements("laptop")
        from_desktop = maya.key_disagreements("desktop")
    assert (first.status, first.disagreements) == ("granted", None)
    assert (second.status, second.computer_name, second.scheduled_time) == (
        "taken", "laptop-name", SEVEN)
    assert (second.local_time, second.zone, second.tz_version) == (
        "2025-01-06T09:00", "Europe/Paris", "2023c")
    assert second.disagreements is not None
    [noted] = second.disagreements
    assert (noted.machine_id, noted.computer_name, noted.scheduled_time, noted.tz_version) == (
        "desktop", "desktop-name", EIGHT, "2025b")
    assert again == second
    assert holder.granted and holder.disagreements == [noted]
    assert [(k.status, k.machine_id, k.disagreements) for k in from_laptop] == [
        ("granted", "laptop", [noted])]
    assert [(k.status, k.machine_id, k.disagreements) for k in from_desktop] == [
        ("taken", "laptop", [noted])]


def test_other_wall_clock_times_zones_and_schedules_are_other_keys(team: Team) -> None:
    with team.client("maya") as maya:
        assert maya.claim_key(claim("laptop", SEVEN, None)).granted
        next_week = maya.claim_key(claim("desktop", SEVEN + timedelta(days=7), None,
                                         local="2025-01-13T09:00"))
        other = maya.claim_key(claim("desktop", EIGHT, None, schedule="daily"))
        other_zone = maya.claim_key(wire.KeyClaim(
            schedule_id="weekly", scheduled_time=EIGHT + timedelta(hours=6),
            machine_id="desktop", computer_name="d", local_time="2025-01-06T09:00",
            zone="America/New_York"))
        assert maya.key_disagreements("laptop") == []
    assert (next_week.granted, other.granted, other_zone.granted) == (True, True, True)


def test_a_claim_without_wall_clock_time_is_keyed_by_its_instant_and_answered_as_before(
    team: Team,
) -> None:
    """An older Bees sends no wall-clock time and refuses unknown answer fields: it gets none."""
    with team.client("maya") as maya:
        maya.claim_key(claim("laptop", SEVEN, "2023c"))
        old = {"schedule_id": "weekly", "scheduled_time": "2025-01-06T08:00:00Z",
               "machine_id": "desktop", "computer_name": "desktop-name"}
    headers = {"authorization": f"Bearer {team.tokens['maya']}"}
    with httpx.Client(base_url=team.url, headers=headers) as http:
        answer = http.post("/v1/keys/claim", json=old).json()
        held = http.get("/v1/keys", params={"machine_id": "laptop"}).json()
    assert answer == {
        "status": "granted", "schedule_id": "weekly",
        "scheduled_time": "2025-01-06T08:00:00.000000Z",
        "person": f"maya@{team.name}.example", "machine_id": "desktop",
        "computer_name": "desktop-name", "granted_at": answer["granted_at"], "item_id": None,
    }
    assert sorted(held["keys"][0]) == ["computer_name", "granted_at", "item_id", "machine_id",
                                       "person", "schedule_id", "scheduled_time", "status"]


@pytest.mark.parametrize(
    "body",
    [
        {"local_time": "2025-01-06T09:00"},
        {"zone": "Europe/Paris"},
        {"local_time": "2025-13-06T09:00", "zone": "Europe/Paris"},
        {"local_time": "2025-01-06 09:00", "zone": "Europe/Paris"},
        {"local_time": "2025-01-06T09:00", "zone": "../etc/passwd"},
        {"local_time": "2025-01-06T09:00", "zone": "Europe/Paris", "tz_version": "2025 b"},
    ],
)
def test_a_bad_wall_clock_claim_is_a_422(team: Team, body: dict[str, str]) -> None:
    base = {"schedule_id": "weekly", "scheduled_time": "2025-01-06T08:00:00Z",
            "machine_id": "laptop", "computer_name": "laptop"}
    headers = {"authorization": f"Bearer {team.tokens['maya']}"}
    with httpx.Client(base_url=team.url, headers=headers) as http:
        response = http.post("/v1/keys/claim", json={**base, **body})
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid"


def test_sixteen_computers_racing_for_one_wall_clock_time_at_sixteen_instants_run_it_once(
    team: Team,
) -> None:
    async def race() -> list[wire.KeyAnswer]:
        clients = [team.aclient("maya") for _ in range(16)]
        try:
            return list(await asyncio.gather(*(
                api.claim_key(claim(f"pc-{n}", EIGHT + timedelta(minutes=n), None))
                for n, api in enumerate(clients))))
        finally:
            await asyncio.gather(*(api.aclose() for api in clients))

    answers = asyncio.run(race())
    winners = [a for a in answers if a.granted]
    assert len(winners) == 1
    holder = winners[0].machine_id
    assert {a.machine_id for a in answers} == {holder}
    with team.client("maya") as maya:
        [listed] = maya.key_disagreements(holder)
    assert listed.disagreements is not None
    assert sorted(d.machine_id for d in listed.disagreements) == sorted(
        f"pc-{n}" for n in range(16) if f"pc-{n}" != holder)


def test_another_persons_machine_cannot_list_disagreements(team: Team) -> None:
    with team.client("maya") as maya, team.client("sam") as sam:
        maya.claim_key(claim("laptop", SEVEN, None))
        assert sam.key_disagreements("sams-pc") == []
        with pytest.raises(CloudRefused) as refused:
            sam.key_disagreements("laptop")
    assert refused.value.code == "machine_not_yours"


def test_the_async_client_lists_disagreements(team: Team) -> None:
    async def run() -> list[wire.KeyAnswer]:
        async with AsyncCloudClient(team.url, team.tokens["maya"]) as api:
            await api.claim_key(claim("laptop", SEVEN, None))
            await api.claim_key(claim("desktop", EIGHT, None))
            return await api.key_disagreements("desktop")

    [key] = asyncio.run(run())
    assert (key.status, key.scheduled_time, key.local_time) == ("taken", SEVEN, "2025-01-06T09:00")


def test_openapi_states_the_wall_clock_patterns(team: Team) -> None:
    document = httpx.get(f"{team.url}/openapi.json").json()
    claim_shape = document["components"]["schemas"]["KeyClaim"]["properties"]
    stated = {field: claim_shape[field]["anyOf"][0]
              for field in ("local_time", "zone", "tz_version")}
    assert stated == {
        "local_time": {"type": "string", "pattern": wire.WALL_TIME_PATTERN},
        "zone": {"type": "string", "pattern": wire.ZONE_PATTERN},
        "tz_version": {"type": "string", "pattern": wire.TZ_VERSION_PATTERN},
    }
    assert "/v1/keys/disagreements" in document["paths"]


def test_keys_granted_before_the_wall_clock_migration_are_kept(tmp_path: Path) -> None:
    """A SQLite database at 0002 with a key migrates to 0003 (a batch copy) keeping it."""
    import sqlalchemy as sa

    from bees_cli.cloud.server.migrations import upgrade
    from bees_cli.cloud.server.storage import Storage

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = sa.create_engine(url)
    upgrade(engine, "0002")
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO teams (id, name, created_us) VALUES (1, 't', 0)"))
        conn.execute(sa.text("INSERT INTO people (id, team_id, email, created_us)"
                             " VALUES (1, 1, 'maya@t.example', 0)"))
        conn.execute(sa.text(
            "INSERT INTO schedule_keys (team_id, person_id, schedule_id, scheduled_us,"
            " machine_id, computer_name, granted_us) VALUES (1, 1, 'weekly', :at, 'laptop',"
            " 'laptop-name', :at)"), {"at": int(EIGHT.timestamp() * 1_000_000)})
    engine.dispose()
    storage = Storage(url)  # migrates to the newest
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text(
                "SELECT schedule_id, machine_id, local_time, zone FROM schedule_keys")).all()
            version = conn.execute(sa.text("SELECT version_num FROM alembic_version")).all()
        assert rows == [("weekly", "laptop", None, None)]
        assert version == [("0007",)]
    finally:
        storage.close()
