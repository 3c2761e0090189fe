"""Wire models of the offer calls of Bees Cloud API v1 (``/v1/offers...``; DESIGN.md, Runners).

A person hands a released item to a pool (an offer); the pool's runners ask for the open
offers, check themselves against each, and claim the one they can run with the ordinary
owner claim (``POST /v1/owners/claim``), which a runner may make only for an item offered
to its pool; exactly one claim wins. A runner that cannot run an offer leaves it with why::

    POST /v1/offers/{item_id}        OfferMake  -> Offer      hand the released item to a pool
    GET  /v1/offers?pool=POOL                   -> OfferList  the open offers (a runner: its pool)
    POST /v1/offers/{item_id}/leave  OfferLeave -> Offer      a runner says why it cannot run it

An offer carries names of secrets (environment variables), never their values.
:mod:`bees_cli.cloud.wire` re-exports these models.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from bees_cli.cloud.checks import Id, UtcTime, Wire

EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", min_length=1,
                                           max_length=200)]
"""The name of an environment variable holding a secret (never its value)."""
MAX_SECRETS = 50
"""Most secret names one offer carries."""
MAX_REASON = 2000
"""Most characters of the reason a runner leaves an offer with."""


class OfferMake(Wire):
    """Hand item ``item_id`` to ``pool``: only the machine that released it last, while it is
    free. ``secrets`` names the environment variables the work needs (values stay on the
    computers)."""

    machine_id: Id
    pool: Id
    secrets: list[EnvName] = Field(default_factory=list, max_length=MAX_SECRETS)


class OfferLeave(Wire):
    """A runner leaves an offer it cannot run, with why (one line for people)."""

    machine_id: Id
    reason: Annotated[str, StringConstraints(min_length=1, max_length=MAX_REASON)]


class OfferNote(Wire):
    """Why runner ``runner`` (on ``machine_id``) left an offer, as it said last."""

    runner: str
    machine_id: str
    reason: str
    noted_at: UtcTime


class Offer(Wire):
    """The release of owner generation ``epoch`` of ``item_id`` offered to ``pool``.

    ``claimed_by`` names the runner (or person) whose claim took it, ``open`` is True while
    the item is still free at that generation; ``notes`` holds why runners left it."""

    item_id: str
    epoch: int
    pool: str
    secrets: list[str]
    offered_at: UtcTime
    offered_by: str
    open: bool
    claimed_at: UtcTime | None = None
    claimed_by: str | None = None
    notes: list[OfferNote] = Field(default_factory=list)


class OfferList(Wire):
    """Offers, oldest first."""

    offers: list[Offer]
