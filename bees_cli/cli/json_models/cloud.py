"""``--json`` documents of Bees Cloud and the app: ``bees cloud status/team/person``, app."""

from __future__ import annotations

from pydantic import Field

from bees_cli.cli.json_models.base import ErrorBody, Out
from bees_cli.record.views import UtcTime


class LoginOut(Out):
    """``bees login``: the URL the token is stored for; ``checked`` False with
    ``--no-check`` (then ``person`` and ``team`` are None); the token's ``person`` and
    ``team`` as the server says; this computer's person before, and whether it changed."""

    url: str
    checked: bool
    person: str | None
    team: str | None
    person_before: str | None
    person_changed: bool


class LogoutOut(Out):
    """``bees logout``: ``signed_out`` False when no token was stored."""

    signed_out: bool


class TeamAddOut(Out):
    """``bees cloud team add``: the team, whether this call created it (False: it existed),
    and the server URL or the database URL it was added on (the other is None)."""

    team: str
    created: bool
    server: str | None = None
    database: str | None = None


class PersonRevokeOut(Out):
    """``bees cloud person revoke``: how many tokens of the person were revoked, and the
    server URL or the database URL it was done on (the other is None)."""

    email: str
    team: str
    revoked: int
    server: str | None = None
    database: str | None = None


class CloudStatusOut(Out):
    """``bees cloud status``: reachable, who, the server's clock; ``error`` when it failed."""

    url: str
    reachable: bool
    person: str | None
    team: str | None
    server_time: UtcTime | None
    skew_seconds: float | None
    round_trip_seconds: float | None
    error: ErrorBody | None


class AppOut(Out):
    """``bees app``: its first line, the URL that lets a browser in
    (``http://bees-<hex>.localhost:PORT/?secret=…``: the app's own name and the session's
    secret) and the port it listens on (on 127.0.0.1 and ::1)."""

    url: str
    port: int


class RunnerAddOut(Out):
    """``bees cloud admin runner add``: the runner's token (shown this once only), its pool
    and team, and the server URL or the database URL it was added on (the other is None)."""

    name: str
    pool: str
    team: str
    token: str
    server: str | None = None
    database: str | None = None


class RunnerRetireOut(Out):
    """``bees cloud admin runner retire``: the runner fenced (``revoked`` live tokens, its
    ``machine_id`` retired; None: never heard), then the items offered back to its pool
    (``offered``), those released without a checkpoint to restart from
    (``not_offered``), and those left as they are because they ended (``ended``: done or
    cancelled, never offered again)."""

    name: str
    pool: str
    team: str
    retired_at: UtcTime
    revoked: int
    machine_id: str | None
    offered: list[str]
    not_offered: list[str]
    ended: list[str] = Field(default_factory=list)


class PersonAddOut(Out):
    """``bees cloud person add``: the new bearer token (shown this once only), and the server
    URL or the database URL it was added on (the other is None)."""

    email: str
    team: str
    token: str
    server: str | None = None
    database: str | None = None
