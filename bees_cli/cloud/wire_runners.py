"""Wire models of the runner calls of Bees Cloud API v1 (DESIGN.md, Runners; issue 27,
point 4): runners vouch, a person retires one::

    POST /v1/runners/heard   RunnerHeard -> RunnerView   a runner's sync vouches for it
    GET  /v1/runners                     -> RunnerList   the team's runners, last heard
    POST /v1/admin/runners/retire  AdminRunnerRetire -> RunnerRetired   (admin token)

Nothing moves on its own: a silent runner is shown, never replaced; only an admin's retire
fences it (token and machine id revoked first) and offers its items back to its pool.
:mod:`bees_cli.cloud.wire` re-exports these models.
"""

from __future__ import annotations

from pydantic import Field

from bees_cli.cloud.checks import Id, UtcTime, Wire

RUNNER_DOMAIN = "runners.invalid"
"""The mail domain of every pool's runner identity, ``pool-POOL@runners.invalid``."""


def is_runner_identity(person: str) -> bool:
    """Return whether ``person`` (an email) is a pool's runner identity, not a person's."""
    return person.endswith(f"@{RUNNER_DOMAIN}")


class RunnerHeard(Wire):
    """A runner's heartbeat: the machine id it runs as (carried by its sync, every 15 s)."""

    machine_id: Id


class RunnerView(Wire):
    """One runner of the team: its pool, the machine id it was last heard from and when
    (None: never), when it was retired (None: not), and the items it holds (runs)."""

    name: str
    pool: str
    machine_id: str | None = None
    heard_at: UtcTime | None = None
    retired_at: UtcTime | None = None
    running: list[str] = Field(default_factory=list)


class RunnerList(Wire):
    """The team's runners by pool then name, and the server's clock when read (so
    "silent for 12 min" is counted on one clock)."""

    runners: list[RunnerView]
    server_time: UtcTime


class AdminRunnerRetire(Wire):
    """Retire runner ``name`` of ``team`` (each an id)."""

    name: Id
    team: Id


class RunnerRetired(Wire):
    """What a retire did, in its order: the tokens revoked and the machine id retired
    (fenced first), then the items it held released and offered back to its pool
    (``offered``), and those released that could not be offered (``not_offered``: no
    earlier release to restart from; a person continues them). An item whose shared record
    says it ended (:data:`ENDED_STATUSES`) is neither released nor offered (``ended``)."""

    name: str
    pool: str
    team: str
    retired_at: UtcTime
    revoked: int
    machine_id: str | None
    offered: list[str]
    not_offered: list[str] = Field(default_factory=list)
    ended: list[str] = Field(default_factory=list)


ENDED_STATUSES: frozenset[str] = frozenset({"done", "cancelled"})
"""Statuses of the shared record's ``status`` field for an item that has ended for good
(``record.states.Status.DONE`` and ``CANCELLED``). A failed item, or one stopped for a person,
waits for a retry: it has not ended. Bees Cloud never offers an ended item, and no runner
claims one from an offer (issue 27, retire)."""
