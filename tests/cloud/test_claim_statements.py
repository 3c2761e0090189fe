"""A claim is one statement when it wins and reads back only on conflict; the caches of
tokens and machine bindings keep a revoke's delay within their stated bound."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from bees_cli.cloud import wire
from bees_cli.cloud.server.people import AUTH_CACHE_SECONDS
from bees_cli.cloud.server.refusals import Forbidden, Unauthorized
from bees_cli.cloud.server.storage import Storage
from bees_cli.cloud.server.tables import machines


class Ticks:
    """A settable monotonic clock (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def ticks() -> Ticks:
    return Ticks()


@pytest.fixture
def storage(db_url: str, admin: Storage, ticks: Ticks) -> Iterator[Storage]:
    """A second server process's storage (its own caches, the injected monotonic clock)."""
    storage = Storage(db_url, migrate=False, monotonic=ticks)
    yield storage
    storage.close()


@pytest.fixture
def team(admin: Storage) -> tuple[str, str, str]:
    """(team name, maya's token, sam's token) of a fresh team."""
    name = f"team-{secrets.token_hex(4)}"
    admin.add_team(name)
    return (
        name,
        admin.add_person(f"maya@{name}.example", name),
        admin.add_person(f"sam@{name}.example", name),
    )


def statements(storage: Storage) -> list[str]:
    """The SQL statements ``storage`` sends from now on (the first word of each)."""
    seen: list[str] = []

    @sa.event.listens_for(storage.engine, "before_cursor_execute")
    def _seen(_conn: object, _cursor: object, sql: str, *_args: object) -> None:
        seen.append(sql.split()[0].upper())

    return seen


def warm_up(storage: Storage, token: str, machine: str) -> None:
    """Claim twice so the token and the machine's binding are known (a binding is kept
    from its first read after the claim that made it)."""
    for n in range(2):
        storage.claim_owner(token, owner(f"warm-up-{machine}-{n}", machine))


def owner(item: str, machine: str) -> wire.OwnerClaim:
    return wire.OwnerClaim(item_id=item, machine_id=machine, computer_name=f"{machine} pc")


def key(machine: str, **wall: str) -> wire.KeyClaim:
    return wire.KeyClaim(
        schedule_id="weekly",
        scheduled_time=datetime(2025, 1, 6, 9, 0, tzinfo=UTC),
        machine_id=machine,
        computer_name=f"{machine} pc",
        **wall,  # type: ignore[arg-type]
    )


def test_a_won_claim_is_one_insert_and_a_lost_one_reads_the_holder_back(
    storage: Storage, admin: Storage, team: tuple[str, str, str]
) -> None:
    name, maya, sam = team
    warm_up(storage, maya, "laptop")
    warm_up(storage, sam, "desk")
    seen = statements(storage)
    won = storage.claim_owner(maya, owner("report", "laptop"))
    assert (won.status, won.owner.epoch, won.owner.person) == ("owner", 1, f"maya@{name}.example")
    assert [s for s in seen if s in {"INSERT", "SELECT"}] == ["INSERT"]
    seen.clear()
    lost = storage.claim_owner(sam, owner("report", "desk"))
    assert (lost.status, lost.owner) == ("taken", won.owner)
    assert [s for s in seen if s in {"INSERT", "SELECT"}] == ["INSERT", "SELECT"]
    # The holder's retry takes the read-back path too, and gets the same row.
    assert storage.claim_owner(maya, owner("report", "laptop")) == won
    assert admin.get_owner(maya, "report") == won.owner
    # Released: the next claim's one insert makes epoch 2.
    admin.release_owner(
        maya, "report", wire.OwnerRelease(machine_id="laptop", checkpoint_sha256="0" * 64)
    )
    seen.clear()
    second = storage.claim_owner(sam, owner("report", "desk"))
    assert (second.status, second.owner.epoch, second.owner.machine_id) == ("owner", 2, "desk")
    assert [s for s in seen if s in {"INSERT", "SELECT"}] == ["INSERT"]
    assert [o.epoch for o in admin.owner_history(sam, "report")] == [1, 2]


def test_a_key_claim_is_one_insert_and_a_lost_one_reads_the_key_back(
    storage: Storage, team: tuple[str, str, str]
) -> None:
    _name, maya, _sam = team
    warm_up(storage, maya, "laptop")
    warm_up(storage, maya, "desk")
    seen = statements(storage)
    granted = storage.claim_key(maya, key("laptop"))
    assert granted.status == "granted"
    assert [s for s in seen if s in {"INSERT", "SELECT"}] == ["INSERT"]
    seen.clear()
    taken = storage.claim_key(maya, key("desk"))
    assert (taken.status, taken.machine_id, taken.granted_at) == (
        "taken",
        "laptop",
        granted.granted_at,
    )
    assert [s for s in seen if s in {"INSERT", "SELECT"}] == ["INSERT", "SELECT"]
    # A wall-clock claim of a time that another instant holds: read back by the wall time.
    wall = {"local_time": "2025-01-13T10:00", "zone": "Europe/Paris", "tz_version": "2025a"}
    first = storage.claim_key(
        maya,
        key("laptop", **wall).model_copy(
            update={"scheduled_time": datetime(2025, 1, 13, 9, tzinfo=UTC)}
        ),
    )
    assert first.status == "granted" and first.disagreements is None
    other = storage.claim_key(
        maya,
        key("desk", **wall).model_copy(
            update={"scheduled_time": datetime(2025, 1, 13, 8, tzinfo=UTC)}
        ),
    )
    assert (other.status, other.machine_id, other.scheduled_time) == (
        "taken",
        "laptop",
        datetime(2025, 1, 13, 9, tzinfo=UTC),
    )
    assert [d.machine_id for d in other.disagreements or []] == ["desk"]


def test_a_revoke_reaches_another_process_within_the_cache_bound(
    storage: Storage, admin: Storage, ticks: Ticks, team: tuple[str, str, str]
) -> None:
    name, maya, _sam = team
    assert storage.claim_owner(maya, owner("a", "laptop")).status == "owner"
    assert admin.revoke_person(f"maya@{name}.example", name) == 1  # another process
    assert admin.authenticate(maya) is None
    ticks.now += AUTH_CACHE_SECONDS - 0.01
    assert storage.claim_owner(maya, owner("b", "laptop")).status == "owner"  # still cached
    ticks.now += 0.02
    with pytest.raises(Unauthorized):
        storage.claim_owner(maya, owner("c", "laptop"))
    with pytest.raises(Unauthorized):
        storage.get_owner(maya, "a")


def test_the_revoking_process_forgets_the_token_at_once(
    storage: Storage, team: tuple[str, str, str]
) -> None:
    name, maya, sam = team
    assert storage.claim_owner(maya, owner("a", "laptop")).status == "owner"
    assert storage.claim_owner(sam, owner("b", "desk")).status == "owner"
    assert storage.revoke_person(f"maya@{name}.example", name) == 1
    with pytest.raises(Unauthorized):
        storage.claim_owner(maya, owner("c", "laptop"))
    assert storage.claim_owner(sam, owner("c", "desk")).status == "owner"


def test_a_machine_binding_is_read_again_after_the_cache_bound(
    storage: Storage, admin: Storage, ticks: Ticks, team: tuple[str, str, str]
) -> None:
    _name, maya, sam = team
    warm_up(storage, maya, "laptop")
    sam_id = admin.authenticate(sam).person_id  # type: ignore[union-attr]
    with admin.db.transaction() as conn:  # an admin rebinds the machine (no such command yet)
        conn.execute(
            machines.update().where(machines.c.machine_id == "laptop").values(person_id=sam_id)
        )
    ticks.now += AUTH_CACHE_SECONDS - 0.01
    assert storage.claim_owner(maya, owner("b", "laptop")).status == "owner"
    ticks.now += 0.02
    with pytest.raises(Forbidden):
        storage.claim_owner(maya, owner("c", "laptop"))
    assert storage.claim_owner(sam, owner("c", "laptop")).status == "owner"


def test_owner_rows_answer_as_the_checked_wire_models() -> None:
    from types import SimpleNamespace

    from bees_cli.cloud.server.owners import owner_of

    since = datetime(2025, 1, 6, 9, 0, 0, 123456, tzinfo=UTC)
    row = SimpleNamespace(
        item_id="report-1", epoch=2, machine_id="laptop", computer_name="Maya's laptop",
        email="maya@example.com", since_us=int(since.timestamp() * 1_000_000),
        released_us=None, restart_stages=None, checkpoint_sha256=None,
    )
    held = dict(item_id="report-1", epoch=2, machine_id="laptop",
                computer_name="Maya's laptop", person="maya@example.com", since=since)
    assert owner_of(row) == wire.Owner(**held)
    assert owner_of(row).model_dump_json() == wire.Owner(**held).model_dump_json()
    released = SimpleNamespace(**{**vars(row), "released_us": row.since_us + 1,
                                  "restart_stages": '{"a":"Draft"}', "checkpoint_sha256": "f" * 64})
    release = wire.Release(released_at=datetime(2025, 1, 6, 9, 0, 0, 123457, tzinfo=UTC),
                           restart_stages={"a": "Draft"}, checkpoint_sha256="f" * 64)
    checked = wire.Owner(**held, release=release)
    assert owner_of(released, "sam@example.com") == checked.model_copy(
        update={"person": "sam@example.com"})
    assert owner_of(released).model_dump_json() == checked.model_dump_json()
    answer = wire.OwnerAnswer(status="owner", owner=checked)
    assert wire.OwnerAnswer.model_construct(
        status="owner", owner=owner_of(released)).model_dump_json() == answer.model_dump_json()


def test_a_name_is_refused_for_any_character_of_category_c_and_for_no_other() -> None:
    import unicodedata

    from bees_cli.cloud.checks import check_name

    # A control, format, surrogate, private-use and unassigned character; then spaces and
    # separators that are not printable but not of category C; then letters and a symbol.
    for ch in ["\x01", "\u200b", "\ud800", "\ue000", "\u0378", "\u00a0", "\u2028", "é", "🐝"]:
        refused = unicodedata.category(ch).startswith("C")
        try:
            check_name(f"a{ch}b")
        except ValueError:
            assert refused, repr(ch)
        else:
            assert not refused, repr(ch)
