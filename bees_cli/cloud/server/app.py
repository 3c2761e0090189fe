"""The Bees Cloud ASGI app (FastAPI) and ``serve``, which runs it on uvicorn.

Every request needs ``Authorization: Bearer <token>``; every answer to a request that
fails is ``{"error": {"code", "message", "hint"}}`` with a 4xx status (a 500 is a bug).
Bodies over 1 MiB are refused with 413 before they are read whole, and a body that
takes longer than :data:`BODY_SECONDS` to arrive is cut off with 408; :func:`serve` also
closes a connection whose request headers take longer than
:data:`~bees_cli.cloud.server.protocol.HEAD_SECONDS`. The storage's
refusals become HTTP statuses here only, by :data:`STATUS`.
"""

import contextlib
import json
import pathlib
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Annotated, Any

import anyio
import sqlalchemy.exc
from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from bees_cli.cloud import wire
from bees_cli.cloud.server import refusals
from bees_cli.cloud.server.claim_routes import ClaimRoutes
from bees_cli.cloud.server.storage import Storage

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

STATUS: dict[type[refusals.CloudRefusal], int] = {
    refusals.Unauthorized: 401,
    refusals.Forbidden: 403,
    refusals.NotFound: 404,
    refusals.Conflict: 409,
    refusals.Invalid: 422,
}
"""The HTTP status of each refusal of :mod:`bees_cli.cloud.server.refusals`."""


def status_of(refusal: refusals.CloudRefusal) -> int:
    """Return the HTTP status of ``refusal``: that of its nearest class in :data:`STATUS`.

    Raises:
        KeyError: the refusal's class has no status (a bug: every refusal needs one).
    """
    for kind in type(refusal).__mro__:
        if kind in STATUS:
            return STATUS[kind]
    raise KeyError(f"no HTTP status for {type(refusal).__name__}")


BODY_SECONDS = 10.0
"""Seconds a request body may take to arrive in full; a slower one is cut off with 408."""

_STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    408: "too_slow",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid",
}


def error_response(
    status: int,
    code: str,
    message: str,
    hint: str | None = None,
    owner: wire.Owner | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """Return the JSON error answer ``{"error": {"code", "message", "hint"[, "owner"]}}``."""
    body = wire.ErrorBody(code=code, message=message, hint=hint, owner=owner)
    data = body.model_dump(mode="json")
    if owner is None:
        del data["owner"]
    return JSONResponse(
        {"error": data},
        status_code=status,
        headers=headers,
    )


class BodyLimit:
    """ASGI middleware: refuse request bodies larger than ``limit`` bytes with 413.

    Checks ``Content-Length`` first, then counts streamed chunks while buffering
    them, so an oversized body is never read whole and never reaches a handler.
    A body that has not arrived in full ``seconds`` after the request began is cut
    off with 408 and the connection closed (a slow sender cannot hold a worker), however
    it trickles in (``Content-Length`` or chunked; tests/cloud/test_slow_body.py).

    Why here: uvicorn has no deadline for a request body. Its ``timeout_keep_alive``
    runs only between requests on an idle connection, and ``h11_max_incomplete_event_size``
    bounds the size of the request line and headers (16 KiB), not their time.
    """

    def __init__(
        self, app: ASGIApp, limit: int = wire.MAX_BODY_BYTES, seconds: float = BODY_SECONDS
    ) -> None:
        self.app = app
        self.limit = limit
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or answer 413."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    length = self.limit + 1
                if length > self.limit:
                    await self._refuse(scope, receive, send)
                    return
        # Read the whole body (at most ``limit`` bytes) before the app sees any of it.
        chunks: list[bytes] = []
        seen = 0
        with anyio.move_on_after(self.seconds) as deadline:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return  # the client went away
                chunk = message.get("body", b"")
                seen += len(chunk)
                if seen > self.limit:
                    await self._refuse(scope, receive, send)
                    return
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
        if deadline.cancelled_caught:
            response = error_response(
                408,
                "too_slow",
                f"the request body did not arrive within {self.seconds:g} s",
                hint="check the network and try again",
                headers={"connection": "close"},
            )
            await response(scope, receive, send)
            return
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(
            413,
            "too_large",
            f"request body larger than {self.limit} bytes",
            hint="send fewer changes per batch",
            headers={"connection": "close"},
        )
        await response(scope, receive, send)


def _json(model: Any, *, only_set: bool = False) -> Response:
    """Serialise a wire model straight to a JSON response (no second validation).

    ``only_set`` leaves out the optional fields the answer did not set (schedule keys: the
    wall-clock fields go only to a Bees that sent or asked for them).
    """
    content = model.model_dump_json(exclude_unset=only_set)
    return Response(content=content, media_type="application/json")


def create_app(storage: Storage, *, threads: int = 8) -> FastAPI:
    """Return the Bees Cloud API v1 app over ``storage`` (see :mod:`bees_cli.cloud.wire`).

    ``threads`` caps the worker threads that run database calls (set at startup).
    Why: on 2 cores a few busy threads beat forty contending for the GIL.
    """

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        import anyio.to_thread

        anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        yield
        if storage.async_claims is not None:
            await storage.async_claims.close()

    app = FastAPI(
        lifespan=lifespan,
        title="Bees Cloud",
        version="1",
        summary="Owners, schedule keys and the shared record of a Bees team.",
        docs_url=None,
        redoc_url=None,
    )
    app.state.storage = storage

    @app.exception_handler(refusals.CloudRefusal)
    async def _refused(_request: Request, refusal: refusals.CloudRefusal) -> JSONResponse:
        return error_response(
            status_of(refusal), refusal.code, refusal.message, refusal.hint, refusal.owner
        )

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, error: RequestValidationError) -> JSONResponse:
        problems = error.errors()
        if any(p.get("type") == "json_invalid" for p in problems):
            return error_response(400, "bad_json", "the request body is not valid JSON")
        parts = []
        for problem in problems[:5]:
            where = ".".join(str(x) for x in problem.get("loc", ()) if x != "body")
            message = str(problem.get("msg", "invalid"))
            parts.append(f"{where or 'body'}: {message}")
        return error_response(
            422, "invalid", "; ".join(parts), hint="see /openapi.json for the request shapes"
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, error: StarletteHTTPException) -> JSONResponse:
        code = _STATUS_CODES.get(error.status_code, "error")
        return error_response(
            error.status_code, code, str(error.detail), headers=dict(error.headers or {})
        )

    @app.exception_handler(sqlalchemy.exc.OperationalError)
    async def _database(_request: Request, error: Exception) -> JSONResponse:
        print(f"database error: {error}", file=sys.stderr)
        return error_response(
            503, "unavailable", "the database is unavailable; try again", hint=None
        )

    @app.exception_handler(Exception)
    async def _bug(_request: Request, error: Exception) -> JSONResponse:  # pragma: no cover
        import traceback

        traceback.print_exception(error, file=sys.stderr)
        return error_response(500, "internal", "internal server error (a bug; see the server log)")

    async def bearer(request: Request) -> str:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise refusals.Unauthorized(
                "unauthorized",
                "no bearer token",
                hint="sign in with `bees login URL --with-token`",
            )
        return token.strip()

    # The token is checked inside each operation's own transaction (one connection).
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

    def item_path(item_id: str) -> str:
        try:
            return wire.check_id(item_id)
        except ValueError as error:
            raise refusals.Invalid("invalid", f"item id: {error}") from None

    responses: dict[int | str, dict[str, Any]] = {
        code: {"model": wire.ErrorResponse} for code in (400, 401, 403, 404, 408, 409, 413, 422)
    }

    @app.get("/v1/me", response_model=wire.Me, responses=responses)
    def me(who: Token) -> Response:
        """Who the token belongs to, the team, and the server clock (UTC)."""
        return _json(storage.me(who))

    @app.get("/v1/time", response_model=wire.ServerTime, responses=responses)
    def server_time(who: Token) -> Response:
        """The server clock (UTC), so a client can measure its skew."""
        storage.authenticate_or_refuse(who)
        return _json(wire.ServerTime(now=storage.clock()))

    @app.post("/v1/keys/claim", response_model=wire.KeyAnswer, responses=responses)
    def claim_key(claim: wire.KeyClaim, who: Token) -> Response:
        """Claim the schedule key (this person, schedule, time): granted or taken.

        With ``local_time`` and ``zone``, also one key per wall-clock time: a claim for it at
        another instant is ``taken`` and noted in ``disagreements``.
        """
        return _json(storage.claim_key(who, claim), only_set=True)

    @app.post("/v1/keys/item", response_model=wire.KeyAnswer, responses=responses)
    def report_key_item(report: wire.KeyItem, who: Token) -> Response:
        """The key's holder reports the item the key produced (repeats are safe)."""
        return _json(storage.report_key_item(who, report), only_set=True)

    @app.get("/v1/keys", response_model=wire.KeyList, responses=responses)
    def held_keys(
        who: Token,
        machine_id: Annotated[str, Query(pattern=wire.ID_PATTERN, min_length=1, max_length=200)],
        without_item: bool = False,
    ) -> Response:
        """This person's keys held by ``machine_id`` (only those without an item, if asked)."""
        machine = item_path(machine_id)
        held = storage.held_keys(who, machine, without_item=without_item)
        return _json(wire.KeyList(keys=held), only_set=True)

    @app.get("/v1/keys/disagreements", response_model=wire.KeyList, responses=responses)
    def key_disagreements(
        who: Token,
        machine_id: Annotated[str, Query(pattern=wire.ID_PATTERN, min_length=1, max_length=200)],
    ) -> Response:
        """This person's keys whose wall-clock time two computers placed at two instants
        (their tz databases disagree), newest first, with both sides."""
        found = storage.key_disagreements(who, item_path(machine_id))
        return _json(wire.KeyList(keys=found), only_set=True)

    @app.post("/v1/owners/claim", response_model=wire.OwnerAnswer, responses=responses)
    def claim_owner(claim: wire.OwnerClaim, who: Token) -> Response:
        """Claim an item for a machine: owner or taken (with who holds it)."""
        return _json(storage.claim_owner(who, claim))

    @app.get("/v1/owners", response_model=wire.OwnerList, responses=responses)
    def list_owners(who: Token) -> Response:
        """The team's items that are held now, by item id."""
        return _json(wire.OwnerList(owners=storage.list_owners(who)))

    @app.get("/v1/owners/{item_id}", response_model=wire.Owner, responses=responses)
    def get_owner(item_id: ItemId, who: Token) -> Response:
        """The latest owner row of one item of the team (404 when never claimed)."""
        return _json(storage.get_owner(who, item_path(item_id)))

    @app.get("/v1/owners/{item_id}/history", response_model=wire.OwnerList, responses=responses)
    def owner_history(item_id: ItemId, who: Token) -> Response:
        """Every owner row of one item, oldest first (owners are never deleted)."""
        return _json(wire.OwnerList(owners=storage.owner_history(who, item_path(item_id))))

    @app.post("/v1/owners/{item_id}/release", response_model=wire.Owner, responses=responses)
    def release_owner(item_id: ItemId, release: wire.OwnerRelease, who: Token) -> Response:
        """Release an item by its owning machine (403 with the owner for anyone else)."""
        return _json(storage.release_owner(who, item_path(item_id), release))

    @app.post("/v1/owners/{item_id}/repair", response_model=wire.Owner, responses=responses)
    def repair_owner(item_id: ItemId, release: wire.OwnerRelease, who: Token) -> Response:
        """Re-send a free item's release with its run folder's checkpoint digest (only the
        machine that released it last; 403 for anyone else, 409 while it is held)."""
        return _json(storage.repair_owner(who, item_path(item_id), release))

    @app.post("/v1/record/push", response_model=wire.PushAnswer, responses=responses)
    def push(batch: wire.RecordPush, who: Token, generations: bool = False) -> Response:
        """Push a batch of item changes; per item the later owner generation wins, then the
        later origin time.

        Changes that may not apply (another machine's item, a clock too far ahead,
        fields too large, another person's machine) are listed in ``refused``; with
        ``generations=true``, also those that lost to a greater key (``superseded``).
        """
        return _json(storage.push(who, batch, generations=generations))

    @app.get("/v1/record/pull", response_model=wire.PullAnswer, responses=responses)
    def pull(
        who: Token,
        since: Annotated[int, Query(ge=0, le=wire.MAX_INT)] = 0,
        limit: Annotated[int, Query(ge=1, le=wire.MAX_PULL)] = wire.MAX_PULL,
        generations: bool = False,
    ) -> Response:
        """The team's items changed after cursor ``since`` (at most ``limit``, and 1 MiB);
        with ``generations=true`` each carries its owner generation."""
        return _json(storage.pull(who, since, limit, generations=generations), only_set=True)

    from bees_cli.cloud.server import admin_api

    admin_api.register(app, storage, responses)
    return app


def asgi(storage: Storage, *, body_seconds: float = BODY_SECONDS) -> ASGIApp:
    """Return the full ASGI stack: the body-size and body-time limits around the claim
    routes (:class:`ClaimRoutes`) around :func:`create_app`.

    Args:
        storage: the data.
        body_seconds: seconds a request body may take to arrive (:data:`BODY_SECONDS`).
    """
    return BodyLimit(ClaimRoutes(create_app(storage), storage), seconds=body_seconds)


def bind(host: str, port: int) -> socket.socket:
    """Return a listening TCP socket on ``host``:``port`` (``port`` 0 picks a free one).

    Raises:
        OSError: the address is in use or cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def serve(
    url: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    announce: Callable[[str], None] | None = None,
    admin_token_file: pathlib.Path | None = None,
) -> None:
    """Migrate the database at ``url``, then serve the API on ``host``:``port`` until stopped.

    At the first start the admin token is made and written to ``admin_token_file``
    (default: :func:`~bees_cli.cloud.server.admin_tokens.default_token_file`, mode 0600).
    ``announce`` receives where the admin token is, then ``listening on http://HOST:PORT``
    once the socket listens (with the real port when ``port`` is 0).

    Raises:
        UserError: unsupported database URL.
        OSError: the port cannot be bound.
        sqlalchemy.exc.OperationalError: the database cannot be reached.
    """
    import uvicorn

    from bees_cli.cloud.server.admin_tokens import AdminTokens, default_token_file
    from bees_cli.cloud.server.protocol import head_deadline

    storage = Storage(url)
    try:
        first = AdminTokens(storage.db).ensure(admin_token_file or default_token_file())
        if announce is not None:
            announce(first.line)
        sock = bind(host, port)
        real_port = sock.getsockname()[1]
        shown_host = f"[{host}]" if ":" in host else host
        if announce is not None:
            announce(f"listening on http://{shown_host}:{real_port}")
        config = uvicorn.Config(
            asgi(storage),
            http=head_deadline(),
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=5,
        )
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        storage.close()


def openapi_json(storage: Storage) -> str:
    """Return the OpenAPI document of the app as JSON text (for docs and tests)."""
    return json.dumps(create_app(storage).openapi(), indent=2, sort_keys=True)
