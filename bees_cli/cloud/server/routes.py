"""The team routes of Bees Cloud API v1, one router per area: the clock, schedule keys,
owners and the shared record (see :mod:`bees_cli.cloud.wire` for the calls).

Every route needs ``Authorization: Bearer <token>``; the token is checked inside each
operation's own transaction (one connection). The admin routes are in
:mod:`bees_cli.cloud.server.admin_api`.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response

from bees_cli.cloud import wire
from bees_cli.cloud.server import refusals
from bees_cli.cloud.server.answers import json_answer as _json
from bees_cli.cloud.server.storage import Storage

RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": wire.ErrorResponse} for code in (400, 401, 403, 404, 408, 409, 413, 422)
}
"""The error answers documented on each route."""


def bearer(request: Request) -> str:
    """Return the bearer token of ``request``.

    Raises:
        refusals.Unauthorized: no ``Authorization: Bearer <token>`` header.
    """
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise refusals.Unauthorized(
            "unauthorized",
            "no bearer token",
            hint="sign in with `bees login URL --with-token`",
        )
    return token.strip()


Token = Annotated[str, Depends(bearer)]

ItemId = Annotated[
    str,
    Path(
        pattern=wire.ID_PATTERN,
        min_length=1,
        max_length=200,
        description="an item id: letters, digits and . _ : @ + = - (no '..')",
    ),
]

MachineId = Annotated[str, Query(pattern=wire.ID_PATTERN, min_length=1, max_length=200)]


def item_path(item_id: str) -> str:
    """Return ``item_id`` checked by :func:`wire.check_id`.

    Raises:
        refusals.Invalid: the id is not usable.
    """
    try:
        return wire.check_id(item_id)
    except ValueError as error:
        raise refusals.Invalid("invalid", f"item id: {error}") from None


def clock_routes(storage: Storage) -> APIRouter:
    """Return the routes of who asks and the server clock over ``storage``."""
    router = APIRouter()

    @router.get("/v1/me", response_model=wire.Me, responses=RESPONSES)
    def me(who: Token) -> Response:
        """Who the token belongs to, the team, and the server clock (UTC); for a runner's
        token also its name and pool."""
        return _json(storage.me(who), only_set=True)

    @router.get("/v1/time", response_model=wire.ServerTime, responses=RESPONSES)
    def server_time(who: Token) -> Response:
        """The server clock (UTC), so a client can measure its skew."""
        storage.authenticate_or_refuse(who)
        return _json(wire.ServerTime(now=storage.clock()))

    return router


def key_routes(storage: Storage) -> APIRouter:
    """Return the schedule-key routes over ``storage``."""
    router = APIRouter()

    @router.post("/v1/keys/claim", response_model=wire.KeyAnswer, responses=RESPONSES)
    def claim_key(claim: wire.KeyClaim, who: Token) -> Response:
        """Claim the schedule key (this person, schedule, time): granted or taken.

        With ``local_time`` and ``zone``, also one key per wall-clock time: a claim for it at
        another instant is ``taken`` and noted in ``disagreements``.
        """
        return _json(storage.claim_key(who, claim), only_set=True)

    @router.post("/v1/keys/item", response_model=wire.KeyAnswer, responses=RESPONSES)
    def report_key_item(report: wire.KeyItem, who: Token) -> Response:
        """The key's holder reports the item the key produced (repeats are safe)."""
        return _json(storage.report_key_item(who, report), only_set=True)

    @router.get("/v1/keys", response_model=wire.KeyList, responses=RESPONSES)
    def held_keys(who: Token, machine_id: MachineId, without_item: bool = False) -> Response:
        """This person's keys held by ``machine_id`` (only those without an item, if asked)."""
        machine = item_path(machine_id)
        held = storage.held_keys(who, machine, without_item=without_item)
        return _json(wire.KeyList(keys=held), only_set=True)

    @router.get("/v1/keys/disagreements", response_model=wire.KeyList, responses=RESPONSES)
    def key_disagreements(who: Token, machine_id: MachineId) -> Response:
        """This person's keys whose wall-clock time two computers placed at two instants
        (their tz databases disagree), newest first, with both sides."""
        found = storage.key_disagreements(who, item_path(machine_id))
        return _json(wire.KeyList(keys=found), only_set=True)

    return router


def owner_routes(storage: Storage) -> APIRouter:
    """Return the owner routes over ``storage``."""
    router = APIRouter()

    @router.post("/v1/owners/claim", response_model=wire.OwnerAnswer, responses=RESPONSES)
    def claim_owner(claim: wire.OwnerClaim, who: Token) -> Response:
        """Claim an item for a machine: owner or taken (with who holds it)."""
        return _json(storage.claim_owner(who, claim))

    @router.get("/v1/owners", response_model=wire.OwnerList, responses=RESPONSES)
    def list_owners(who: Token) -> Response:
        """The team's items that are held now, by item id."""
        return _json(wire.OwnerList(owners=storage.list_owners(who)))

    @router.get("/v1/owners/{item_id}", response_model=wire.Owner, responses=RESPONSES)
    def get_owner(item_id: ItemId, who: Token) -> Response:
        """The latest owner row of one item of the team (404 when never claimed)."""
        return _json(storage.get_owner(who, item_path(item_id)))

    @router.get("/v1/owners/{item_id}/history", response_model=wire.OwnerList,
                responses=RESPONSES)
    def owner_history(item_id: ItemId, who: Token) -> Response:
        """Every owner row of one item, oldest first (owners are never deleted)."""
        return _json(wire.OwnerList(owners=storage.owner_history(who, item_path(item_id))))

    @router.post("/v1/owners/{item_id}/release", response_model=wire.Owner, responses=RESPONSES)
    def release_owner(item_id: ItemId, release: wire.OwnerRelease, who: Token) -> Response:
        """Release an item by its owning machine (403 with the owner for anyone else)."""
        return _json(storage.release_owner(who, item_path(item_id), release))

    @router.post("/v1/owners/{item_id}/repair", response_model=wire.Owner, responses=RESPONSES)
    def repair_owner(item_id: ItemId, release: wire.OwnerRelease, who: Token) -> Response:
        """Re-send a free item's release with its run folder's checkpoint digest (only the
        machine that released it last; 403 for anyone else, 409 while it is held)."""
        return _json(storage.repair_owner(who, item_path(item_id), release))

    return router


def record_routes(storage: Storage) -> APIRouter:
    """Return the shared-record routes (push, pull) over ``storage``."""
    router = APIRouter()

    @router.post("/v1/record/push", response_model=wire.PushAnswer, responses=RESPONSES)
    def push(batch: wire.RecordPush, who: Token, generations: bool = False) -> Response:
        """Push a batch of item changes; per item the later owner generation wins, then the
        later origin time.

        Changes that may not apply (another machine's item, a clock too far ahead,
        fields too large, another person's machine) are listed in ``refused``; with
        ``generations=true``, also those that lost to a greater key (``superseded``).
        """
        return _json(storage.push(who, batch, generations=generations))

    @router.get("/v1/record/pull", response_model=wire.PullAnswer, responses=RESPONSES)
    def pull(
        who: Token,
        since: Annotated[int, Query(ge=0, le=wire.MAX_INT)] = 0,
        limit: Annotated[int, Query(ge=1, le=wire.MAX_PULL)] = wire.MAX_PULL,
        generations: bool = False,
    ) -> Response:
        """The team's items changed after cursor ``since`` (at most ``limit``, and 1 MiB);
        with ``generations=true`` each carries its owner generation."""
        return _json(storage.pull(who, since, limit, generations=generations), only_set=True)

    return router


def offer_routes(storage: Storage) -> APIRouter:
    """Return the offer routes (DESIGN.md, Runners) over ``storage``."""
    router = APIRouter()

    @router.post("/v1/offers/{item_id}", response_model=wire.Offer, responses=RESPONSES)
    def make_offer(item_id: ItemId, body: wire.OfferMake, who: Token) -> Response:
        """Hand a released item to a pool of runners (only the machine that released it)."""
        return _json(storage.make_offer(who, item_path(item_id), body))

    @router.get("/v1/offers", response_model=wire.OfferList, responses=RESPONSES)
    def list_offers(
        who: Token,
        pool: Annotated[str | None, Query(pattern=wire.ID_PATTERN, max_length=200)] = None,
        open_only: Annotated[bool, Query(alias="open")] = True,
    ) -> Response:
        """The team's offers (open ones unless ``open=false``), oldest first; a runner's
        token sees its own pool's."""
        found = storage.list_offers(who, pool, only_open=open_only)
        return _json(wire.OfferList(offers=found))

    @router.post("/v1/offers/{item_id}/leave", response_model=wire.Offer, responses=RESPONSES)
    def leave_offer(item_id: ItemId, body: wire.OfferLeave, who: Token) -> Response:
        """A runner leaves an open offer of its pool and says why (seen by the whole team)."""
        return _json(storage.leave_offer(who, item_path(item_id), body))

    @router.post("/v1/runners/heard", response_model=wire.RunnerView, responses=RESPONSES)
    def runner_heard(body: wire.RunnerHeard, who: Token) -> Response:
        """A runner's sync vouches for it (every 15 s): Bees Cloud notes when and from which
        machine id (refused once the runner is retired)."""
        return _json(storage.runner_heard(who, body))

    @router.get("/v1/runners", response_model=wire.RunnerList, responses=RESPONSES)
    def list_runners(who: Token) -> Response:
        """The team's runners: pool, last heard, what each holds, retired or not."""
        return _json(storage.list_runners(who))

    return router
