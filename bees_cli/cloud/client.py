"""Typed clients of the Bees Cloud API v1: :class:`CloudClient` and :class:`AsyncCloudClient`.

Like httpx's ``BaseClient``, :class:`BaseCloudClient` holds everything but I/O: each
API method is a *plan*, a generator that yields the next step (an ``httpx.Request`` to
send, or a :class:`Pause` before a retry) and receives its outcome. The two clients
only run plans: :class:`CloudClient` sends and sleeps blocking, :class:`AsyncCloudClient`
awaits; their public methods are one line each. Both read answers with the same wire
models and the same error mapping::

    connection failed, timed out (after retries)   -> CloudUnreachable
    HTTP 5xx (after retries)                       -> CloudError
    HTTP 401                                       -> CloudUnauthorized
    HTTP 403, 409                                  -> CloudRefused
    any other 4xx, or an answer that is not the
    expected JSON                                  -> CloudError

A base URL that is not a valid http(s) URL (a stored sign-in written by hand or by
an older Bees) does not fail when the client is made: every call raises
:class:`CloudUnreachable` naming the URL, with the hint ``bees logout``.

Only connection errors and 5xx answers are retried, with exponential backoff; every
call of the API is safe to repeat (a repeated claim or release returns the same answer).
A claim that someone else holds is not an error: the answer's ``status`` is ``taken``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import httpx

from bees_cli.cloud import wire
from bees_cli.cloud.calls import (
    Call,
    M,
    auth_headers,
    backoff_delay,
    bad_base_url,
    check_url,
    held_keys,
    key_claim,
    key_disagreements,
    key_item,
    owner_claim,
    owner_get,
    owner_history,
    owner_release,
    owner_repair,
    read_answer,
    record_pull,
    retryable,
    unreachable,
    url_problem,
)
from bees_cli.utc import utc_now

if TYPE_CHECKING:
    from bees_cli.machine.computer import Computer

__all__ = [
    "AsyncCloudClient",
    "BaseCloudClient",
    "Call",
    "CloudClient",
    "Pause",
    "Skew",
    "check_url",
    "read_answer",
    "url_problem",
]

R = TypeVar("R")

DEFAULT_TIMEOUT = 10.0
"""Seconds allowed for connecting, and for each read and write."""
DEFAULT_RETRIES = 4
"""Extra attempts after a connection error or a 5xx answer."""
DEFAULT_BACKOFF = 0.25
"""Seconds before the first retry; doubled before each next one (capped at 4 s)."""


@dataclass(frozen=True)
class Skew:
    """The server's clock against ours, measured around one request.

    ``skew_seconds`` is server minus local (positive: the server is ahead), taken
    at the middle of the round trip; ``round_trip_seconds`` bounds its error.
    """

    me: wire.Me
    skew_seconds: float
    round_trip_seconds: float


def _skew(me: wire.Me, before: datetime, after: datetime) -> Skew:
    middle = before + (after - before) / 2
    return Skew(
        me=me,
        skew_seconds=(me.server_time - middle).total_seconds(),
        round_trip_seconds=(after - before).total_seconds(),
    )


@dataclass(frozen=True)
class Pause:
    """A plan's step: wait ``seconds`` before the next attempt."""

    seconds: float


Step: TypeAlias = httpx.Request | Pause
"""What a plan asks for next: send a request, or wait."""
Outcome: TypeAlias = httpx.Response | httpx.TransportError | None
"""What a step gave: the response, the transport error of a send, or None after a pause."""
Plan: TypeAlias = Generator[Step, Outcome, R]
"""A generator of steps whose return value is the method's result."""


class BaseCloudClient:
    """Everything of a Bees Cloud client but I/O: requests, retries, answers, plans.

    Args:
        base_url: e.g. ``https://cloud.example.com`` (the API lives under ``/v1``).
        retries: extra attempts after a connection error or a 5xx.
        backoff: seconds before the first retry, doubled each time (at most 4 s).
        clock: local clock (UTC) for skew measurement.
    """

    _http: httpx.Client | httpx.AsyncClient

    def __init__(
        self, base_url: str, *, retries: int, backoff: float, clock: Callable[[], datetime]
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.backoff = backoff
        self._clock = clock
        self._bad_url = url_problem(self.base_url)

    def _http_options(self, token: str, timeout: float) -> dict[str, Any]:
        """Return the keyword arguments shared by the ``httpx`` client of each subclass."""
        return {
            "base_url": "" if self._bad_url else self.base_url,
            "headers": auth_headers(token),
            "timeout": timeout,
        }

    def _exchange(self, call: Call[M]) -> Plan[M | None]:
        """Plan one call: send, retry after a connection error or a 5xx, read the answer.

        Raises:
            CloudUnreachable: every attempt failed to connect or timed out, or the
                base URL is not valid (no request is sent).
            CloudError, CloudUnauthorized, CloudRefused: see :func:`read_answer`.
        """
        if self._bad_url is not None:
            raise bad_base_url(self.base_url, self._bad_url)
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            outcome = yield call.request(self._http)
            if isinstance(outcome, httpx.TransportError):
                if last:
                    raise unreachable(self.base_url, outcome) from None
            elif isinstance(outcome, httpx.Response) and (last or not retryable(outcome)):
                return read_answer(call, outcome)
            yield Pause(backoff_delay(self.backoff, attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def _must(self, call: Call[M]) -> Plan[M]:
        answer = yield from self._exchange(call)
        assert answer is not None
        return answer

    def _skew(self) -> Plan[Skew]:
        before = self._clock()
        me = yield from self._must(Call("GET", "/v1/me", wire.Me))
        return _skew(me, before, self._clock())

    def _server_time(self) -> Plan[datetime]:
        return (yield from self._must(Call("GET", "/v1/time", wire.ServerTime))).now

    def _owner_history(self, item_id: str) -> Plan[list[wire.Owner]]:
        return (yield from self._must(owner_history(item_id))).owners

    def _list_owners(self) -> Plan[list[wire.Owner]]:
        return (yield from self._must(Call("GET", "/v1/owners", wire.OwnerList))).owners

    def _held_keys(self, machine_id: str, without_item: bool) -> Plan[list[wire.KeyAnswer]]:
        return (yield from self._must(held_keys(machine_id, without_item=without_item))).keys

    def _push(self, changes: list[wire.RecordChange]) -> Plan[wire.PushAnswer]:
        received = applied = 0
        refused: list[wire.RefusedChange] = []
        for start in range(0, len(changes), wire.MAX_BATCH):
            batch = wire.RecordPush(changes=changes[start : start + wire.MAX_BATCH])
            answer = yield from self._must(Call("POST", "/v1/record/push", wire.PushAnswer, batch))
            received += answer.received
            applied += answer.applied
            refused.extend(answer.refused)
        return wire.PushAnswer(received=received, applied=applied, refused=refused)

    def _pull_all(self, since: int) -> Plan[wire.PullAnswer]:
        entries: list[wire.RecordEntry] = []
        while True:
            page = yield from self._must(record_pull(since, wire.MAX_PULL))
            entries.extend(page.changes)
            since = page.cursor
            if not page.more:
                return wire.PullAnswer(changes=entries, cursor=since, more=False)


class CloudClient(BaseCloudClient):
    """Blocking client of one Bees Cloud (for the CLI and for threads).

    Args:
        base_url: e.g. ``https://cloud.example.com`` (the API lives under ``/v1``).
        token: the person's bearer token.
        transport: an httpx transport (tests pass ``httpx.MockTransport`` or a WSGI one).
        timeout: seconds for connect, read and write.
        retries: extra attempts after a connection error or a 5xx.
        backoff: seconds before the first retry, doubled each time (at most 4 s).
        sleep: how to wait between retries (tests pass a recorder).
        clock: local clock (UTC) for skew measurement.
    """

    _http: httpx.Client

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        super().__init__(base_url, retries=retries, backoff=backoff, clock=clock)
        self._sleep = sleep
        self._http = httpx.Client(**self._http_options(token, timeout), transport=transport)

    def __enter__(self) -> CloudClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def _run(self, plan: Plan[R]) -> R:
        """Run ``plan``: send its requests and sleep its pauses, blocking; return its result."""
        outcome: Outcome = None
        while True:
            try:
                step = plan.send(outcome)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            if isinstance(step, Pause):
                self._sleep(step.seconds)
                outcome = None
                continue
            try:
                outcome = self._http.send(step)
            except httpx.TransportError as error:
                outcome = error

    def call(self, call: Call[M]) -> M | None:
        """Send ``call`` with retries and return its answer (see :func:`read_answer`).

        Raises:
            CloudUnreachable: every attempt failed to connect or timed out, or the
                base URL is not valid (no request is sent).
            CloudError, CloudUnauthorized, CloudRefused: see :func:`read_answer`.
        """
        return self._run(self._exchange(call))

    def me(self) -> wire.Me:
        """Return who the token is, the team and the server clock."""
        return self._run(self._must(Call("GET", "/v1/me", wire.Me)))

    def skew(self) -> Skew:
        """Measure the server clock against the local one (see :class:`Skew`)."""
        return self._run(self._skew())

    def server_time(self) -> datetime:
        """Return the server's clock (UTC)."""
        return self._run(self._server_time())

    def claim_key(self, claim: wire.KeyClaim) -> wire.KeyAnswer:
        """Claim a schedule key; ``answer.granted`` tells whether this machine holds it."""
        return self._run(self._must(key_claim(claim)))

    def report_key_item(self, report: wire.KeyItem) -> wire.KeyAnswer:
        """Report the item a held key produced; safe to repeat with the same item.

        Raises:
            CloudRefused: another machine holds the key, the machine id is another
                person's, or the key already produced another item.
            CloudError: no such key (404).
        """
        return self._run(self._must(key_item(report)))

    def held_keys(self, machine_id: str, *, without_item: bool = False) -> list[wire.KeyAnswer]:
        """Return this person's keys held by ``machine_id``, oldest scheduled time first.

        With ``without_item`` only the keys whose item was never reported (to make
        on start after a crash).
        """
        return self._run(self._held_keys(machine_id, without_item))

    def key_disagreements(self, machine_id: str) -> list[wire.KeyAnswer]:
        """Return this person's keys whose wall-clock time two computers placed at two
        instants (newest first, with both sides); ``machine_id`` is the asking machine."""
        return self._run(self._must(key_disagreements(machine_id))).keys

    def claim_owner(self, claim: wire.OwnerClaim) -> wire.OwnerAnswer:
        """Claim an item; ``answer.granted`` tells whether this machine owns it."""
        return self._run(self._must(owner_claim(claim)))

    def get_owner(self, item_id: str) -> wire.Owner | None:
        """Return the latest owner row of ``item_id``, or None when it was never claimed."""
        return self._run(self._exchange(owner_get(item_id)))

    def owner_history(self, item_id: str) -> list[wire.Owner]:
        """Return every owner row of ``item_id``, oldest first."""
        return self._run(self._owner_history(item_id))

    def list_owners(self) -> list[wire.Owner]:
        """Return the team's held items (current owners), by item id."""
        return self._run(self._list_owners())

    def release_owner(self, item_id: str, release: wire.OwnerRelease) -> wire.Owner:
        """Release ``item_id`` (owning machine only).

        Raises:
            CloudRefused: another machine owns it (the message names it).
        """
        return self._run(self._must(owner_release(item_id, release)))

    def repair_owner(self, item_id: str, release: wire.OwnerRelease) -> wire.Owner:
        """Re-send the release of free item ``item_id`` with a new checkpoint digest (the
        machine that released it last only).

        Raises:
            CloudRefused: another machine released it last or holds it (403), or it is held
                (409).
        """
        return self._run(self._must(owner_repair(item_id, release)))

    def push(self, changes: list[wire.RecordChange]) -> wire.PushAnswer:
        """Push record changes in batches of :data:`wire.MAX_BATCH`; return the totals.

        Changes the server refused (another machine's item, a clock too far ahead,
        fields too large, another person's machine) come back in ``answer.refused``
        with their code and reason; the caller keeps them.
        """
        return self._run(self._push(changes))

    def pull(self, since: int = 0, limit: int = wire.MAX_PULL) -> wire.PullAnswer:
        """Return one page of the team's record changes after cursor ``since``."""
        return self._run(self._must(record_pull(since, limit)))

    def pull_all(self, since: int = 0) -> wire.PullAnswer:
        """Return every change after ``since``, following pages until ``more`` is False."""
        return self._run(self._pull_all(since))


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

    async def push(self, changes: list[wire.RecordChange]) -> wire.PushAnswer:
        """Push record changes in batches; see :meth:`CloudClient.push`."""
        return await self._run(self._push(changes))

    async def pull(self, since: int = 0, limit: int = wire.MAX_PULL) -> wire.PullAnswer:
        """Return one page of the team's record changes after cursor ``since``."""
        return await self._run(self._must(record_pull(since, limit)))

    async def pull_all(self, since: int = 0) -> wire.PullAnswer:
        """Return every change after ``since``, following pages until ``more`` is False."""
        return await self._run(self._pull_all(since))


def cloud_for(
    computer: Computer, *, retries: int = 0, timeout: float = 5.0, backoff: float = 0.25
) -> AsyncCloudClient | None:
    """Return an async client for ``computer``'s sign-in, or None when it has none.

    Args:
        computer: the computer whose sign-in (and, in tests, transport and sleep) to use.
        retries: the client's own extra attempts (callers that count tries pass 0).
        timeout: seconds for connect, read and write.
        backoff: seconds before the client's first retry.
    """
    if computer.login is None:
        return None
    kwargs: dict[str, Any] = {}
    if computer.cloud_sleep is not None:
        kwargs["sleep"] = computer.cloud_sleep
    return AsyncCloudClient(
        computer.login.url, computer.login.token, transport=computer.transport,
        retries=retries, timeout=timeout, backoff=backoff, **kwargs)


def sync_cloud_for(
    computer: Computer, *, retries: int = 0, timeout: float = 5.0
) -> CloudClient | None:
    """Return a blocking client for ``computer``'s sign-in (the CLI), or None without one."""
    if computer.login is None:
        return None
    return CloudClient(computer.login.url, computer.login.token, retries=retries,
                       timeout=timeout)
