"""What the two clients of the Bees Cloud API v1 share (:class:`BaseCloudClient`, all but I/O).

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

from collections.abc import Callable, Generator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from bees_cli.cloud import wire
from bees_cli.cloud.calls import (
    Call,
    M,
    auth_headers,
    backoff_delay,
    bad_base_url,
    check_url,
    held_keys,
    owner_history,
    read_answer,
    record_pull,
    record_push,
    retryable,
    unreachable,
    url_problem,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["BaseCloudClient", "Call", "Pause", "Skew", "check_url", "read_answer",
           "url_problem"]

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


# quoted: httpx is imported when a client is made (the two clients' __init__), not here
Step: TypeAlias = "httpx.Request | Pause"
"""What a plan asks for next: send a request, or wait."""
Outcome: TypeAlias = "httpx.Response | httpx.TransportError | None"
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
    timeout: float | None = None
    """Seconds for connecting, and for each read and write (set with the ``httpx`` client)."""

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
        self.timeout = timeout
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
        import httpx  # loaded already: the client that runs this plan holds an httpx client

        if self._bad_url is not None:
            raise bad_base_url(self.base_url, self._bad_url)
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            outcome = yield call.request(self._http)
            if isinstance(outcome, httpx.TransportError):
                if last:
                    raise unreachable(self.base_url, outcome, timeout=self.timeout,
                                      tries=self.retries + 1) from None
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
            answer = yield from self._must(record_push(batch))
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
