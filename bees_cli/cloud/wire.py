"""Wire models of the Bees Cloud API v1, shared by the server and the client.

Every model forbids unknown fields. Times travel as ISO 8601 strings that carry a
zone; they are normalised to UTC and written as :func:`bees_cli.utc.format_utc` text.
Ids are short tokens without path or control characters, so they are safe in URLs and logs.

The rules the server and the computers must compute identically live here too:
:func:`canonical_json`, :func:`fields_digest` and :class:`RecordKey`, the order of the
shared record's last-writer-wins (DESIGN.md "Shared record").

Endpoints (all JSON, all need ``Authorization: Bearer <token>``)::

    GET  /v1/me                      -> Me            who the token is, team, server clock
    GET  /v1/time                    -> ServerTime    the server's clock (UTC)
    POST /v1/keys/claim   KeyClaim   -> KeyAnswer     granted | taken
    POST /v1/keys/item    KeyItem    -> KeyAnswer     the holder reports the key's item
    GET  /v1/keys?machine_id=M&without_item=true -> KeyList  keys this person's machine holds
    GET  /v1/keys/disagreements?machine_id=M -> KeyList  keys two computers placed at two instants
    POST /v1/owners/claim OwnerClaim -> OwnerAnswer   owner | taken
    GET  /v1/owners                  -> OwnerList     the team's current owners
    GET  /v1/owners/{item}           -> Owner         the latest owner row of one item
    GET  /v1/owners/{item}/history   -> OwnerList     every owner row of one item, oldest first
    POST /v1/owners/{item}/release OwnerRelease -> Owner  (403 when another machine owns it)
    POST /v1/owners/{item}/repair  OwnerRelease -> Owner  the last releaser re-sends a free
                                     item's release (403 for anyone else, 409 while held)
    POST /v1/record/push[?generations=true]  RecordPush -> PushAnswer
                                     applied, and each refused change with why
    GET  /v1/record/pull?since=N&limit=M[&generations=true] -> PullAnswer

A Bees that orders the record by owner generation (:class:`RecordKey`) sends
``generations=true``: pulled entries then carry their ``generation`` and a push lists the
changes that lost to a greater key (``superseded``). Without it (an older Bees) the answers
keep their older shape; the server orders every change by generation all the same.

Errors: ``{"error": {"code", "message", "hint"}}`` with a 4xx status (see :class:`ErrorBody`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from pydantic import Field, JsonValue

from bees_cli import rules

# The input rules and the base model live in checks.py, the schedule-key models in
# wire_keys.py; wire re-exports them (wire.Id, wire.check_id, wire.KeyClaim, ...).
from bees_cli.cloud.checks import (
    ID_PATTERN as ID_PATTERN,
)
from bees_cli.cloud.checks import (
    ID_SCHEMA as ID_SCHEMA,
)
from bees_cli.cloud.checks import (
    MAX_FIELDS_DEPTH as MAX_FIELDS_DEPTH,
)
from bees_cli.cloud.checks import (
    MAX_INT as MAX_INT,
)
from bees_cli.cloud.checks import (
    MAX_TIME as MAX_TIME,
)
from bees_cli.cloud.checks import (
    MIN_TIME as MIN_TIME,
)
from bees_cli.cloud.checks import (
    TZ_VERSION_PATTERN as TZ_VERSION_PATTERN,
)
from bees_cli.cloud.checks import (
    WALL_TIME_PATTERN as WALL_TIME_PATTERN,
)
from bees_cli.cloud.checks import (
    ZONE_PATTERN as ZONE_PATTERN,
)
from bees_cli.cloud.checks import (
    Fields as Fields,
)
from bees_cli.cloud.checks import (
    Id as Id,
)
from bees_cli.cloud.checks import (
    Name as Name,
)
from bees_cli.cloud.checks import (
    Sha256 as Sha256,
)
from bees_cli.cloud.checks import (
    TzVersion as TzVersion,
)
from bees_cli.cloud.checks import (
    UtcTime as UtcTime,
)
from bees_cli.cloud.checks import (
    WallTime as WallTime,
)
from bees_cli.cloud.checks import (
    Wire as Wire,
)
from bees_cli.cloud.checks import (
    ZoneName as ZoneName,
)
from bees_cli.cloud.checks import (
    check_email as check_email,
)
from bees_cli.cloud.checks import (
    check_id as check_id,
)
from bees_cli.cloud.checks import (
    check_name as check_name,
)
from bees_cli.cloud.wire_keys import (
    KeyAnswer as KeyAnswer,
)
from bees_cli.cloud.wire_keys import (
    KeyClaim as KeyClaim,
)
from bees_cli.cloud.wire_keys import (
    KeyDisagreement as KeyDisagreement,
)
from bees_cli.cloud.wire_keys import (
    KeyItem as KeyItem,
)
from bees_cli.cloud.wire_keys import (
    KeyList as KeyList,
)
from bees_cli.cloud.wire_offers import (
    Offer as Offer,
)
from bees_cli.cloud.wire_offers import (
    OfferLeave as OfferLeave,
)
from bees_cli.cloud.wire_offers import (
    OfferList as OfferList,
)
from bees_cli.cloud.wire_offers import (
    OfferMake as OfferMake,
)
from bees_cli.cloud.wire_offers import (
    OfferNote as OfferNote,
)
from bees_cli.cloud.wire_runners import (
    ENDED_STATUSES as ENDED_STATUSES,
)
from bees_cli.cloud.wire_runners import (
    RunnerHeard as RunnerHeard,
)
from bees_cli.cloud.wire_runners import (
    RunnerList as RunnerList,
)
from bees_cli.cloud.wire_runners import (
    RunnerRetired as RunnerRetired,
)
from bees_cli.cloud.wire_runners import (
    RunnerView as RunnerView,
)
from bees_cli.cloud.wire_runners import (
    is_runner_identity as is_runner_identity,
)
from bees_cli.utc import to_us

API_PREFIX = "/v1"
MAX_BODY_BYTES = 1024 * 1024
"""Largest request body the server reads (1 MiB); a larger one is refused with 413."""
MAX_BATCH = 1000
"""Most changes in one record push."""
MAX_PULL = 1000
"""Most changes in one record pull page."""
MAX_PULL_BYTES = 1024 * 1024
"""Most bytes of fields (canonical JSON) in one pull page (1 MiB); a page holds at least one."""
MAX_FIELDS_BYTES = 16 * 1024
"""Largest ``fields`` of one item, in bytes of :func:`canonical_json` (16 KiB).

Why: every teammate downloads every item; a computer's own fields are a few hundred bytes.
"""
CLOCK_TOLERANCE_SECONDS = rules.CLOCK_TOLERANCE_SECONDS
"""How far (seconds) a change's origin time may be ahead of the server clock (the rule lives
in :data:`bees_cli.rules.CLOCK_TOLERANCE_SECONDS`); further ahead is refused (``clock_ahead``)."""


def canonical_json(value: Any) -> str:
    """Return ``value`` as compact JSON with sorted keys and UTF-8 kept (no ``\\u`` escapes).

    The stored and digested form of a record change's fields; the server and every
    computer compute it with this one function, so equal fields give equal text.

    Raises:
        TypeError: ``value`` holds something JSON cannot carry.
        ValueError: ``value`` holds a circular reference.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fields_digest(fields: Mapping[str, Any]) -> str:
    """Return the SHA-256 (64 lower-case hex digits) of :func:`canonical_json` ``fields``."""
    return hashlib.sha256(canonical_json(dict(fields)).encode("utf-8")).hexdigest()


class RecordKey(NamedTuple):
    """The order of changes to one item of the shared record: the greatest key wins.

    Rule (DESIGN.md "Shared record"; issue 23, point 4): the change of the later owner
    generation wins (the owner row's ``epoch`` in Bees Cloud: each claim after a release
    starts a new one), so a new owner whose clock is behind still overrides the last change
    of the owner before it; within a generation the later origin time (the clock of the
    computer that made the change) wins; a tie goes to the greater machine id, then to the
    greater digest of the fields, so every server and computer picks the same winner
    whatever the order of arrival. Tuples compare field by field; text compares by code
    point, which is the byte order of UTF-8 (SQLite's ``BINARY``, PostgreSQL's
    ``COLLATE "C"``).
    """

    generation: int
    """The owner generation the change was taken in (0: an item never claimed, or a change
    Bees Cloud stored before it kept generations)."""
    origin_us: int
    """Origin time as integer microseconds since the Unix epoch (UTC)."""
    machine_id: str
    """The machine that made the change."""
    digest: str
    """:func:`fields_digest` of the change's fields."""

    @classmethod
    def of(cls, change: RecordChange | RecordEntry, generation: int | None = None) -> RecordKey:
        """Return the key of a pushed change (in ``generation``, which Bees Cloud decides;
        default 0) or of a pulled entry (its own ``generation``; 0 when the server sent none).
        """
        if generation is None:
            generation = getattr(change, "generation", None) or 0
        return cls(
            generation, to_us(change.origin_time), change.machine_id, fields_digest(change.fields)
        )


class ErrorBody(Wire):
    """One error: a stable ``code`` (e.g. ``not_owner``), a one-line message and a hint."""

    code: str
    message: str
    hint: str | None = None
    owner: Owner | None = None
    """For ``not_owner``: the owner row that holds the item."""


class ErrorResponse(Wire):
    """The body of every 4xx/5xx answer."""

    error: ErrorBody


class Me(Wire):
    """Who the token belongs to, and the server clock at the time of the answer (UTC)."""

    person: str
    team: str
    server_time: UtcTime
    runner: str | None = None
    """The runner's name when the token is a runner's (sent only then)."""
    pool: str | None = None
    """The runner's pool when the token is a runner's (sent only then)."""


class ServerTime(Wire):
    """The server's clock (UTC); a client measures its skew against it."""

    now: UtcTime


class OwnerClaim(Wire):
    """Ask to become the owner of ``item_id`` for this token's person and ``machine_id``."""

    item_id: Id
    machine_id: Id
    computer_name: Name


class Release(Wire):
    """How an owner ended: when, and which stage each piece restarts at."""

    released_at: UtcTime
    restart_stages: dict[str, str]
    checkpoint_sha256: str


class Owner(Wire):
    """One owner row (generation ``epoch`` of ``item_id``); ``release`` is None while held."""

    item_id: str
    epoch: int
    machine_id: str
    computer_name: str
    person: str
    since: UtcTime
    release: Release | None = None

    @property
    def held(self) -> bool:
        """True while this owner has not released the item."""
        return self.release is None


class OwnerAnswer(Wire):
    """``owner`` when the asking machine holds the item (new or repeated claim), else ``taken``."""

    status: Literal["owner", "taken"]
    owner: Owner

    @property
    def granted(self) -> bool:
        """True when the asking machine owns the item."""
        return self.status == "owner"


class OwnerList(Wire):
    """Owner rows, sorted by item id (current owners) or by epoch (one item's history)."""

    owners: list[Owner]


class OwnerRelease(Wire):
    """Release the item by the owning machine, with each piece's restart stage.

    ``epoch`` names the owner generation being released (from the claim); when
    omitted the latest one is meant.
    """

    machine_id: Id
    restart_stages: dict[Id, Id] = Field(default_factory=dict)
    checkpoint_sha256: Sha256
    epoch: int | None = Field(default=None, ge=1, le=2**31 - 1)


class RecordChange(Wire):
    """One change to one item of the shared record, as made on one computer.

    ``fields`` replaces the item's fields when this change wins (:class:`RecordKey`): the
    later owner generation wins, then the later ``origin_time``, ties broken by
    ``machine_id`` then by the fields' content. The change carries no generation: Bees
    Cloud takes it from its owner table (the item's latest owner row, which must be the
    change's machine), so an older Bees is ordered the same way.
    """

    item_id: Id
    fields: Fields
    origin_time: UtcTime
    machine_id: Id


class RecordPush(Wire):
    """A batch of changes (at most :data:`MAX_BATCH`)."""

    changes: list[RecordChange] = Field(max_length=MAX_BATCH)


RefusalCode = Literal["not_owner", "machine_not_yours", "clock_ahead", "too_large", "superseded"]
"""Why one change of a push was refused (DESIGN.md "Shared record")::

    not_owner          the item is owned by another machine (or, while free, was
                       released last by another one; or was first written by another)
    machine_not_yours  the machine id belongs to another person of the team
    clock_ahead        the origin time is ahead of the server clock by more than
                       CLOCK_TOLERANCE_SECONDS; offset_seconds says by how much
    too_large          the fields are larger than MAX_FIELDS_BYTES
    superseded         the item's record holds a greater key (RecordKey) of the same
                       owner generation: a change of the same machine stamped at or after
                       this one (its clock went back). Listed only to a push that asked
                       with ``generations=true`` (an older Bees cannot read the code); an
                       exact repeat of the held change is never listed (a retried push)
"""


class RefusedChange(Wire):
    """One change of a push that the server did not apply, and why (see :data:`RefusalCode`).

    The client keeps the change (it is not sent again until something changes) and
    shows the reason; it never drops a refused change silently.
    """

    item_id: str
    origin_time: UtcTime
    machine_id: str
    code: RefusalCode
    message: str
    offset_seconds: float | None = None
    """For ``clock_ahead``: origin time minus server time, in seconds."""
    owner: Owner | None = None
    """For ``not_owner``: the latest owner row of the item, when it has one."""


class PushAnswer(Wire):
    """How many changes arrived, how many became the item's current state, which were refused.

    ``received == applied + len(refused) + (repeats of the held change)`` for a push that
    asked with ``generations=true``; for one that did not (an older Bees), changes that lost
    to a greater key are not listed either.
    """

    received: int
    applied: int
    refused: list[RefusedChange] = Field(default_factory=list)


class RecordEntry(Wire):
    """An item's current state in the shared record; ``seq`` is its server sequence number."""

    item_id: str
    fields: dict[str, JsonValue]
    origin_time: UtcTime
    machine_id: str
    person: str
    seq: int
    generation: int | None = None
    """The owner generation of the change (:class:`RecordKey`); only in pulls that ask with
    ``generations=true``, so an older Bees (strict models) reads every answer."""


class PullAnswer(Wire):
    """Items changed after the asked cursor, by ``seq``; pass ``cursor`` next time.

    ``more`` is True when the page was full and another pull may return more.
    """

    changes: list[RecordEntry]
    cursor: int
    more: bool


ErrorBody.model_rebuild()
