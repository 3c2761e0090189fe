"""The requests of the Bees Cloud API v1 and how their answers are read (both clients use them).

Answers map to the error tree of :mod:`bees_cli.errors`::

    connection failed, timed out (after retries)   -> CloudUnreachable
    HTTP 5xx (after retries)                       -> CloudError
    HTTP 401                                       -> CloudUnauthorized
    HTTP 403, 409                                  -> CloudRefused
    any other 4xx, or an answer that is not the
    expected JSON                                  -> CloudError

httpx is imported only by the functions that need it once a client exists, not with this
module: a command that makes no client (no sign-in) never loads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from bees_cli.cloud import wire
from bees_cli.errors import (
    CloudError,
    CloudRefused,
    CloudUnauthorized,
    CloudUnreachable,
    UserError,
)

if TYPE_CHECKING:
    import httpx

M = TypeVar("M", bound=BaseModel)


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
            # fields left unset are not sent, so an older server that does not know a
            # newer optional field (KeyClaim.local_time…) still reads the request
            content = self.body.model_dump_json(exclude_unset=True).encode("utf-8")
            headers["content-type"] = "application/json"
        return client.build_request(
            self.method, self.path, content=content, params=self.params or None, headers=headers
        )


def key_claim(claim: wire.KeyClaim) -> Call[wire.KeyAnswer]:
    """Build the schedule-key claim call."""
    return Call("POST", "/v1/keys/claim", wire.KeyAnswer, claim)


def key_item(report: wire.KeyItem) -> Call[wire.KeyAnswer]:
    """Build the call by which a key's holder reports the item the key produced."""
    return Call("POST", "/v1/keys/item", wire.KeyAnswer, report)


def held_keys(machine_id: str, *, without_item: bool) -> Call[wire.KeyList]:
    """Build the call that lists this person's keys held by ``machine_id``."""
    params: dict[str, Any] = {"machine_id": _item(machine_id)}
    if without_item:
        params["without_item"] = "true"
    return Call("GET", "/v1/keys", wire.KeyList, params=params)


def key_disagreements(machine_id: str) -> Call[wire.KeyList]:
    """Build the call that lists this person's keys two computers placed at two instants."""
    return Call("GET", "/v1/keys/disagreements", wire.KeyList,
                params={"machine_id": _item(machine_id)})


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


def owner_repair(item_id: str, release: wire.OwnerRelease) -> Call[wire.Owner]:
    """Build the call that re-sends a free item's release (its last releaser only)."""
    return Call("POST", f"/v1/owners/{_item(item_id)}/repair", wire.Owner, release)


def offer_make(item_id: str, body: wire.OfferMake) -> Call[wire.Offer]:
    """Build the call that hands a released item to a pool of runners."""
    return Call("POST", f"/v1/offers/{_item(item_id)}", wire.Offer, body)


def offer_list(pool: str | None, *, only_open: bool = True) -> Call[wire.OfferList]:
    """Build the call that lists the team's offers (a runner's token: its pool's)."""
    params: dict[str, Any] = {"open": "true" if only_open else "false"}
    if pool is not None:
        params["pool"] = _item(pool)
    return Call("GET", "/v1/offers", wire.OfferList, params=params)


def offer_leave(item_id: str, body: wire.OfferLeave) -> Call[wire.Offer]:
    """Build the call by which a runner leaves an offer with why."""
    return Call("POST", f"/v1/offers/{_item(item_id)}/leave", wire.Offer, body)


GENERATIONS = {"generations": "true"}
"""The query of record pushes and pulls: this Bees orders the record by owner generation
(:class:`~bees_cli.cloud.wire.RecordKey`), so it reads each entry's ``generation`` and the
``superseded`` refusal. An older server ignores it and answers in its older shape."""


def record_push(batch: wire.RecordPush) -> Call[wire.PushAnswer]:
    """Build one record push (at most :data:`~bees_cli.cloud.wire.MAX_BATCH` changes)."""
    return Call("POST", "/v1/record/push", wire.PushAnswer, batch, params=dict(GENERATIONS))


def record_pull(since: int, limit: int) -> Call[wire.PullAnswer]:
    """Build one page of a record pull."""
    return Call("GET", "/v1/record/pull", wire.PullAnswer,
                params={"since": since, "limit": limit, **GENERATIONS})


def read_answer(call: Call[M], response: httpx.Response) -> M | None:
    """Return the answer of ``call`` read from ``response``, or raise the mapped error.

    Raises:
        CloudUnauthorized: 401.
        CloudRefused: 403 or 409, with the server's ``code`` (the message names the owner
            when there is one).
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
    message, hint, code = _error_text(response)
    if status == 401:
        rejected = CloudUnauthorized(
            message or "Bees Cloud rejected the token",
            hint=hint or "sign in again with `bees login URL --with-token`",
        )
        if code == "runner_retired":  # a retired runner is told so by name (issue 27, 4)
            rejected.code = code
        raise rejected
    if status in (403, 409):
        raise CloudRefused(message or f"Bees Cloud refused ({status})", hint=hint, code=code,
                           status=status)
    failed = CloudError(
        f"Bees Cloud answered {status}: {message or response.reason_phrase}", hint=hint
    )
    failed.status = status
    raise failed


def _error_text(response: httpx.Response) -> tuple[str, str | None, str | None]:
    """Return the error answer's ``(message, hint, code)``; a body that is not the
    error shape gives its first 200 characters and no hint or code."""
    try:
        body = wire.ErrorResponse.model_validate_json(response.content)
    except ValidationError:
        return response.text[:200].strip(), None, None
    return body.error.message, body.error.hint, body.error.code


def retryable(response: httpx.Response) -> bool:
    """Return True when ``response`` is worth another attempt (a 5xx)."""
    return response.status_code >= 500


def backoff_delay(backoff: float, attempt: int) -> float:
    """Return seconds to wait after failed ``attempt`` (from 0): ``backoff`` doubled, <= 4 s."""
    return float(min(backoff * (2**attempt), 4.0))


def unreachable(base_url: str, error: Exception, *, timeout: float | None = None,
                tries: int = 1) -> CloudUnreachable:
    """Return the error for a server that could not be reached, naming ``base_url``: one
    that timed out says so with ``timeout`` (seconds per try) and the ``tries`` made."""
    import httpx  # loaded already: a client made the request that failed

    hint = "is the server up? check the URL with `bees login URL --with-token`"
    if isinstance(error, httpx.TimeoutException) and timeout is not None:
        made = f" ({tries} tries)" if tries > 1 else ""
        return CloudUnreachable(
            f"Bees Cloud at {base_url} did not answer within {timeout:g} s{made}", hint=hint)
    return CloudUnreachable(
        f"cannot reach Bees Cloud at {base_url}: {type(error).__name__}: {error}".rstrip(": "),
        hint=hint,
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
    import httpx  # a client is being made, or bees login was given a URL: both need it

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


def bad_base_url(base_url: str, problem: str) -> CloudUnreachable:
    """Return the error for a stored URL that is not valid (no request is sent)."""
    return CloudUnreachable(
        f"cannot reach Bees Cloud: the stored URL is not valid: {base_url} ({problem})",
        hint="run `bees logout`, then `bees login URL --with-token` with a valid URL",
    )


def auth_headers(token: str) -> dict[str, str]:
    """Return the headers of every request: the bearer ``token`` and JSON accepted."""
    return {"authorization": f"Bearer {token}", "accept": "application/json"}
