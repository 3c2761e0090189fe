"""Typed clients of the Bees Cloud API v1: :class:`CloudClient` and :class:`AsyncCloudClient`.

Both build the same requests (:class:`Call`) and read answers with the same wire
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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from bees_cli.cloud import wire
from bees_cli.errors import (
    CloudError,
    CloudRefused,
    CloudUnauthorized,
    CloudUnreachable,
    UserError,
)

M = TypeVar("M", bound=BaseModel)

DEFAULT_TIMEOUT = 10.0
"""Seconds allowed for connecting, and for each read and write."""
DEFAULT_RETRIES = 4
"""Extra attempts after a connection error or a 5xx answer."""
DEFAULT_BACKOFF = 0.25
"""Seconds before the first retry; doubled before each next one (capped at 4 s)."""


@dataclass(frozen=True)
class Call(Generic[M]):
    """One API request and the model its 2xx answer is read into."""

    method: str
    path: str
    model: type[M]
    body: BaseModel | None = None
    params: dict[str, Any] = field(default_factory=dict)
    missing_ok: bool = False
    """When True a 404 answer means None instead of an error."""

    def request(self, client: httpx.Client | httpx.AsyncClient) -> httpx.Request:
        """Return the ``httpx.Request`` for ``client`` (its base URL and auth header)."""
        content = None
        headers = {}
        if self.body is not None:
            content = self.body.model_dump_json().encode("utf-8")
            headers["content-type"] = "application/json"
        return client.build_request(
            self.method, self.path, content=content, params=self.params or None, headers=headers
        )


def key_claim(claim: wire.KeyClaim) -> Call[wire.KeyAnswer]:
    """Build the schedule-key claim call."""
    return Call("POST", "/v1/keys/claim", wire.KeyAnswer, claim)


def owner_claim(claim: wire.OwnerClaim) -> Call[wire.OwnerAnswer]:
    """Build the owner claim call."""
    return Call("POST", "/v1/owners/claim", wire.OwnerAnswer, claim)


def _item(item_id: str) -> str:
    try:
        return wire.check_id(item_id)
    except ValueError as error:
        raise UserError(f"bad item id {item_id!r}: {error}") from None


def owner_get(item_id: str) -> Call[wire.Owner]:
    """Build the call that reads the latest owner of one item (None when never claimed)."""
    return Call("GET", f"/v1/owners/{_item(item_id)}", wire.Owner, missing_ok=True)


def owner_history(item_id: str) -> Call[wire.OwnerList]:
    """Build the call that reads every owner row of one item."""
    return Call("GET", f"/v1/owners/{_item(item_id)}/history", wire.OwnerList)


def owner_release(item_id: str, release: wire.OwnerRelease) -> Call[wire.Owner]:
    """Build the release call for one item."""
    return Call("POST", f"/v1/owners/{_item(item_id)}/release", wire.Owner, release)


def record_pull(since: int, limit: int) -> Call[wire.PullAnswer]:
    """Build one page of a record pull."""
    return Call("GET", "/v1/record/pull", wire.PullAnswer, params={"since": since, "limit": limit})


def read_answer(call: Call[M], response: httpx.Response) -> M | None:
    """Return the answer of ``call`` read from ``response``, or raise the mapped error.

    Raises:
        CloudUnauthorized: 401.
        CloudRefused: 403 or 409 (the message names the owner when there is one).
        CloudError: any other non-2xx answer, or a body that is not the expected JSON.
    """
    status = response.status_code
    if 200 <= status < 300:
        try:
            return call.model.model_validate_json(response.content)
        except ValidationError as error:
            raise CloudError(
                f"Bees Cloud sent an unexpected answer to {call.method} {call.path}: "
                f"{error.error_count()} problem(s)",
                hint="the server may run another version of Bees",
            ) from None
    if status == 404 and call.missing_ok:
        return None
    message, hint = _error_text(response)
    if status == 401:
        raise CloudUnauthorized(
            message or "Bees Cloud rejected the token",
            hint=hint or "sign in again with `bees login URL --token T`",
        )
    if status in (403, 409):
        raise CloudRefused(message or f"Bees Cloud refused ({status})", hint=hint)
    raise CloudError(
        f"Bees Cloud answered {status}: {message or response.reason_phrase}", hint=hint
    )


def _error_text(response: httpx.Response) -> tuple[str, str | None]:
    try:
        body = wire.ErrorResponse.model_validate_json(response.content)
    except ValidationError:
        return response.text[:200].strip(), None
    return body.error.message, body.error.hint


def _retryable(response: httpx.Response) -> bool:
    return response.status_code >= 500


def _delay(backoff: float, attempt: int) -> float:
    return float(min(backoff * (2**attempt), 4.0))


def _unreachable(base_url: str, error: Exception) -> CloudUnreachable:
    return CloudUnreachable(
        f"cannot reach Bees Cloud at {base_url}: {type(error).__name__}: {error}".rstrip(": "),
        hint="is the server up? check the URL with `bees login URL --token T`",
    )


def url_problem(url: str) -> str | None:
    """Return why ``url`` is not a usable Bees Cloud URL, or None when it is.

    A usable URL has the scheme http or https, a host, and no port or a numeric
    port from 1 to 65535.
    """
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
    except ValueError as error:
        text = str(error)
        return text[:1].lower() + text[1:]
    if parts.scheme not in ("http", "https"):
        return "the scheme must be http or https"
    if not parts.hostname:
        return "no host"
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port is not None and not 1 <= port <= 65535:
        return "the port must be a number from 1 to 65535"
    try:
        httpx.URL(url)
    except httpx.InvalidURL as error:
        text = str(error)
        return text[:1].lower() + text[1:]
    return None


def check_url(url: str) -> str:
    """Return ``url`` stripped of blanks and a trailing slash, when it is usable.

    Raises:
        UserError: see :func:`url_problem`.
    """
    given = url.strip()
    url = given.rstrip("/")
    problem = url_problem(url)
    if problem is not None:
        raise UserError(
            f"not a valid URL: {given} ({problem})",
            hint="e.g. https://cloud.example.com or http://127.0.0.1:8765",
        )
    return url


def _bad_base_url(base_url: str, problem: str) -> CloudUnreachable:
    return CloudUnreachable(
        f"cannot reach Bees Cloud: the stored URL is not valid: {base_url} ({problem})",
        hint="run `bees logout`, then `bees login URL --token T` with a valid URL",
    )


def _headers(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}", "accept": "application/json"}


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


class CloudClient:
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
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.backoff = backoff
        self._sleep = sleep
        self._clock = clock
        self._bad_url = url_problem(self.base_url)
        self._http = httpx.Client(
            base_url="" if self._bad_url else self.base_url,
            headers=_headers(token),
            timeout=timeout,
            transport=transport,
        )

    def __enter__(self) -> CloudClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def call(self, call: Call[M]) -> M | None:
        """Send ``call`` with retries and return its answer (see :func:`read_answer`).

        Raises:
            CloudUnreachable: every attempt failed to connect or timed out, or the
                base URL is not valid (no request is sent).
            CloudError, CloudUnauthorized, CloudRefused: see :func:`read_answer`.
        """
        if self._bad_url is not None:
            raise _bad_base_url(self.base_url, self._bad_url)
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self._http.send(call.request(self._http))
            except httpx.TransportError as error:
                if last:
                    raise _unreachable(self.base_url, error) from None
                self._sleep(_delay(self.backoff, attempt))
                continue
            if _retryable(response) and not last:
                self._sleep(_delay(self.backoff, attempt))
                continue
            return read_answer(call, response)
        raise AssertionError("unreachable")  # pragma: no cover

    def _must(self, call: Call[M]) -> M:
        answer = self.call(call)
        assert answer is not None
        return answer

    def me(self) -> wire.Me:
        """Return who the token is, the team and the server clock."""
        return self._must(Call("GET", "/v1/me", wire.Me))

    def skew(self) -> Skew:
        """Measure the server clock against the local one (see :class:`Skew`)."""
        before = self._clock()
        me = self.me()
        return _skew(me, before, self._clock())

    def server_time(self) -> datetime:
        """Return the server's clock (UTC)."""
        return self._must(Call("GET", "/v1/time", wire.ServerTime)).now

    def claim_key(self, claim: wire.KeyClaim) -> wire.KeyAnswer:
        """Claim a schedule key; ``answer.granted`` tells whether this machine holds it."""
        return self._must(key_claim(claim))

    def claim_owner(self, claim: wire.OwnerClaim) -> wire.OwnerAnswer:
        """Claim an item; ``answer.granted`` tells whether this machine owns it."""
        return self._must(owner_claim(claim))

    def get_owner(self, item_id: str) -> wire.Owner | None:
        """Return the latest owner row of ``item_id``, or None when it was never claimed."""
        return self.call(owner_get(item_id))

    def owner_history(self, item_id: str) -> list[wire.Owner]:
        """Return every owner row of ``item_id``, oldest first."""
        return self._must(owner_history(item_id)).owners

    def list_owners(self) -> list[wire.Owner]:
        """Return the team's held items (current owners), by item id."""
        return self._must(Call("GET", "/v1/owners", wire.OwnerList)).owners

    def release_owner(self, item_id: str, release: wire.OwnerRelease) -> wire.Owner:
        """Release ``item_id`` (owning machine only).

        Raises:
            CloudRefused: another machine owns it (the message names it).
        """
        return self._must(owner_release(item_id, release))

    def push(self, changes: list[wire.RecordChange]) -> wire.PushAnswer:
        """Push record changes in batches of :data:`wire.MAX_BATCH`; return the totals.

        Raises:
            CloudRefused: a change is for an item another machine owns (that batch and
                the ones after it are not written).
        """
        received = applied = 0
        for start in range(0, len(changes), wire.MAX_BATCH):
            batch = wire.RecordPush(changes=changes[start : start + wire.MAX_BATCH])
            answer = self._must(Call("POST", "/v1/record/push", wire.PushAnswer, batch))
            received += answer.received
            applied += answer.applied
        return wire.PushAnswer(received=received, applied=applied)

    def pull(self, since: int = 0, limit: int = wire.MAX_PULL) -> wire.PullAnswer:
        """Return one page of the team's record changes after cursor ``since``."""
        return self._must(record_pull(since, limit))

    def pull_all(self, since: int = 0) -> wire.PullAnswer:
        """Return every change after ``since``, following pages until ``more`` is False."""
        entries: list[wire.RecordEntry] = []
        while True:
            page = self.pull(since)
            entries.extend(page.changes)
            since = page.cursor
            if not page.more:
                return wire.PullAnswer(changes=entries, cursor=since, more=False)


class AsyncCloudClient:
    """The asyncio twin of :class:`CloudClient` (for engine activities); same arguments.

    ``transport`` is an ``httpx.AsyncBaseTransport`` and ``sleep`` an async function.
    """

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
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        limits: httpx.Limits | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.backoff = backoff
        self._sleep = sleep
        self._clock = clock
        self._bad_url = url_problem(self.base_url)
        self._http = httpx.AsyncClient(
            base_url="" if self._bad_url else self.base_url,
            headers=_headers(token),
            timeout=timeout,
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

    async def call(self, call: Call[M]) -> M | None:
        """Send ``call`` with retries; see :meth:`CloudClient.call`."""
        if self._bad_url is not None:
            raise _bad_base_url(self.base_url, self._bad_url)
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = await self._http.send(call.request(self._http))
            except httpx.TransportError as error:
                if last:
                    raise _unreachable(self.base_url, error) from None
                await self._sleep(_delay(self.backoff, attempt))
                continue
            if _retryable(response) and not last:
                await self._sleep(_delay(self.backoff, attempt))
                continue
            return read_answer(call, response)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _must(self, call: Call[M]) -> M:
        answer = await self.call(call)
        assert answer is not None
        return answer

    async def me(self) -> wire.Me:
        """Return who the token is, the team and the server clock."""
        return await self._must(Call("GET", "/v1/me", wire.Me))

    async def skew(self) -> Skew:
        """Measure the server clock against the local one (see :class:`Skew`)."""
        before = self._clock()
        me = await self.me()
        return _skew(me, before, self._clock())

    async def server_time(self) -> datetime:
        """Return the server's clock (UTC)."""
        return (await self._must(Call("GET", "/v1/time", wire.ServerTime))).now

    async def claim_key(self, claim: wire.KeyClaim) -> wire.KeyAnswer:
        """Claim a schedule key; ``answer.granted`` tells whether this machine holds it."""
        return await self._must(key_claim(claim))

    async def claim_owner(self, claim: wire.OwnerClaim) -> wire.OwnerAnswer:
        """Claim an item; ``answer.granted`` tells whether this machine owns it."""
        return await self._must(owner_claim(claim))

    async def get_owner(self, item_id: str) -> wire.Owner | None:
        """Return the latest owner row of ``item_id``, or None when it was never claimed."""
        return await self.call(owner_get(item_id))

    async def owner_history(self, item_id: str) -> list[wire.Owner]:
        """Return every owner row of ``item_id``, oldest first."""
        return (await self._must(owner_history(item_id))).owners

    async def list_owners(self) -> list[wire.Owner]:
        """Return the team's held items (current owners), by item id."""
        return (await self._must(Call("GET", "/v1/owners", wire.OwnerList))).owners

    async def release_owner(self, item_id: str, release: wire.OwnerRelease) -> wire.Owner:
        """Release ``item_id`` (owning machine only); raises CloudRefused otherwise."""
        return await self._must(owner_release(item_id, release))

    async def push(self, changes: list[wire.RecordChange]) -> wire.PushAnswer:
        """Push record changes in batches; see :meth:`CloudClient.push`."""
        received = applied = 0
        for start in range(0, len(changes), wire.MAX_BATCH):
            batch = wire.RecordPush(changes=changes[start : start + wire.MAX_BATCH])
            answer = await self._must(Call("POST", "/v1/record/push", wire.PushAnswer, batch))
            received += answer.received
            applied += answer.applied
        return wire.PushAnswer(received=received, applied=applied)

    async def pull(self, since: int = 0, limit: int = wire.MAX_PULL) -> wire.PullAnswer:
        """Return one page of the team's record changes after cursor ``since``."""
        return await self._must(record_pull(since, limit))

    async def pull_all(self, since: int = 0) -> wire.PullAnswer:
        """Return every change after ``since``, following pages until ``more`` is False."""
        entries: list[wire.RecordEntry] = []
        while True:
            page = await self.pull(since)
            entries.extend(page.changes)
            since = page.cursor
            if not page.more:
                return wire.PullAnswer(changes=entries, cursor=since, more=False)
