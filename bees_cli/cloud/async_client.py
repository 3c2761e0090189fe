"""The asyncio client of the Bees Cloud API v1 (engine activities): plans run with awaits.

httpx is imported when a client is made, not with this module (see :mod:`.client`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING

from bees_cli.cloud import wire
from bees_cli.cloud.calls import (
    Call,
    M,
    key_claim,
    key_disagreements,
    key_item,
    offer_leave,
    offer_list,
    offer_make,
    owner_claim,
    owner_get,
    owner_release,
    owner_repair,
    record_pull,
)
from bees_cli.cloud.client_base import (
    DEFAULT_BACKOFF,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    BaseCloudClient,
    Pause,
    R,
    Skew,
)
from bees_cli.utc import utc_now

if TYPE_CHECKING:
    import httpx

    from bees_cli.cloud.client_base import Outcome, Plan


class AsyncCloudClient(BaseCloudClient):
    """The asyncio twin of :class:`CloudClient` (for engine activities); same arguments.

    ``transport`` is an ``httpx.AsyncBaseTransport`` and ``sleep`` an async function;
    ``limits`` caps the connection pool (default 100 connections, 20 kept alive).
    """

    _http: httpx.AsyncClient

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], datetime] = utc_now,
        limits: httpx.Limits | None = None,
    ) -> None:
        import httpx

        super().__init__(base_url, retries=retries, backoff=backoff, clock=clock)
        self._sleep = sleep
        self._http = httpx.AsyncClient(
            **self._http_options(token, timeout),
            transport=transport,
            limits=limits or httpx.Limits(max_connections=100, max_keepalive_connections=20),
        )

    async def __aenter__(self) -> AsyncCloudClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def _run(self, plan: Plan[R]) -> R:
        """Run ``plan``: send its requests and sleep its pauses, awaiting; return its result."""
        import httpx  # loaded already: __init__ made the client

        outcome: Outcome = None
        while True:
            try:
                step = plan.send(outcome)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            if isinstance(step, Pause):
                await self._sleep(step.seconds)
                outcome = None
                continue
            try:
                outcome = await self._http.send(step)
            except httpx.TransportError as error:
                outcome = error

    async def call(self, call: Call[M]) -> M | None:
        """Send ``call`` with retries; see :meth:`CloudClient.call`."""
        return await self._run(self._exchange(call))

    async def me(self) -> wire.Me:
        """Return who the token is, the team and the server clock."""
        return await self._run(self._must(Call("GET", "/v1/me", wire.Me)))

    async def skew(self) -> Skew:
        """Measure the server clock against the local one (see :class:`Skew`)."""
        return await self._run(self._skew())

    async def runner_heard(self, machine_id: str) -> wire.RunnerView:
        """Vouch for this runner (its token) running as ``machine_id``: the heartbeat its
        sync carries (see :meth:`CloudClient.runner_heard`)."""
        return await self._run(self._must(Call("POST", "/v1/runners/heard", wire.RunnerView,
                                               wire.RunnerHeard(machine_id=machine_id))))

    async def runners(self) -> wire.RunnerList:
        """Return the team's runners (see :meth:`CloudClient.runners`)."""
        return await self._run(self._must(Call("GET", "/v1/runners", wire.RunnerList)))

    async def server_time(self) -> datetime:
        """Return the server's clock (UTC)."""
        return await self._run(self._server_time())

    async def claim_key(self, claim: wire.KeyClaim) -> wire.KeyAnswer:
        """Claim a schedule key; ``answer.granted`` tells whether this machine holds it."""
        return await self._run(self._must(key_claim(claim)))

    async def report_key_item(self, report: wire.KeyItem) -> wire.KeyAnswer:
        """Report the item a held key produced; see :meth:`CloudClient.report_key_item`."""
        return await self._run(self._must(key_item(report)))

    async def held_keys(
        self, machine_id: str, *, without_item: bool = False
    ) -> list[wire.KeyAnswer]:
        """Return this person's keys held by ``machine_id``; see :meth:`CloudClient.held_keys`."""
        return await self._run(self._held_keys(machine_id, without_item))

    async def key_disagreements(self, machine_id: str) -> list[wire.KeyAnswer]:
        """Return keys placed at two instants; see :meth:`CloudClient.key_disagreements`."""
        return (await self._run(self._must(key_disagreements(machine_id)))).keys

    async def claim_owner(self, claim: wire.OwnerClaim) -> wire.OwnerAnswer:
        """Claim an item; ``answer.granted`` tells whether this machine owns it."""
        return await self._run(self._must(owner_claim(claim)))

    async def get_owner(self, item_id: str) -> wire.Owner | None:
        """Return the latest owner row of ``item_id``, or None when it was never claimed."""
        return await self._run(self._exchange(owner_get(item_id)))

    async def owner_history(self, item_id: str) -> list[wire.Owner]:
        """Return every owner row of ``item_id``, oldest first."""
        return await self._run(self._owner_history(item_id))

    async def list_owners(self) -> list[wire.Owner]:
        """Return the team's held items (current owners), by item id."""
        return await self._run(self._list_owners())

    async def release_owner(self, item_id: str, release: wire.OwnerRelease) -> wire.Owner:
        """Release ``item_id`` (owning machine only); raises CloudRefused otherwise."""
        return await self._run(self._must(owner_release(item_id, release)))

    async def repair_owner(self, item_id: str, release: wire.OwnerRelease) -> wire.Owner:
        """Re-send a free item's release; see :meth:`CloudClient.repair_owner`."""
        return await self._run(self._must(owner_repair(item_id, release)))

    async def make_offer(self, item_id: str, body: wire.OfferMake) -> wire.Offer:
        """Hand a released item to a pool; see :meth:`CloudClient.make_offer`."""
        return await self._run(self._must(offer_make(item_id, body)))

    async def offers(self, pool: str | None = None, *,
                     only_open: bool = True) -> list[wire.Offer]:
        """Return the team's offers; see :meth:`CloudClient.offers`."""
        return (await self._run(self._must(offer_list(pool, only_open=only_open)))).offers

    async def leave_offer(self, item_id: str, body: wire.OfferLeave) -> wire.Offer:
        """Leave an offer with why; see :meth:`CloudClient.leave_offer`."""
        return await self._run(self._must(offer_leave(item_id, body)))

    async def push(self, changes: list[wire.RecordChange]) -> wire.PushAnswer:
        """Push record changes in batches; see :meth:`CloudClient.push`."""
        return await self._run(self._push(changes))

    async def pull(self, since: int = 0, limit: int = wire.MAX_PULL) -> wire.PullAnswer:
        """Return one page of the team's record changes after cursor ``since``."""
        return await self._run(self._must(record_pull(since, limit)))

    async def pull_all(self, since: int = 0) -> wire.PullAnswer:
        """Return every change after ``since``, following pages until ``more`` is False."""
        return await self._run(self._pull_all(since))
