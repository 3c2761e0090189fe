"""The Bees Cloud ASGI app (FastAPI) and ``serve``, which runs it on uvicorn.

Every request needs ``Authorization: Bearer <token>``; every answer to a request that
fails is ``{"error": {"code", "message", "hint"}}`` with a 4xx status (a 500 is a bug).
Bodies over 1 MiB are refused with 413 before they are read whole, and a body that
takes longer than :data:`BODY_SECONDS` to arrive is cut off with 408; :func:`serve` also
closes a connection whose request headers take longer than
:data:`~bees_cli.cloud.server.protocol.HEAD_SECONDS`. The routes are in
:mod:`~bees_cli.cloud.server.routes` (one router per area) and
:mod:`~bees_cli.cloud.server.admin_api`; the error answers, and the HTTP status of each
of the storage's refusals, in :mod:`~bees_cli.cloud.server.answers`.
"""

import asyncio
import contextlib
import json
import pathlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import FastAPI

from bees_cli.cloud import wire
from bees_cli.cloud.server import routes
from bees_cli.cloud.server.answers import add_error_handlers, error_response
from bees_cli.cloud.server.claim_routes import ClaimRoutes
from bees_cli.cloud.server.storage import Storage

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

BODY_SECONDS = 10.0
"""Seconds a request body may take to arrive in full; a slower one is cut off with 408."""


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
        # The deadline is asyncio's own (a timer per request): anyio's cancel scope cost
        # more CPU than the rest of this middleware (issue 29, point 5).
        chunks: list[bytes] = []
        seen = 0
        late = False
        try:
            async with asyncio.timeout(self.seconds):
                while True:
                    message = await receive()
                    if message["type"] != "http.request":
                        return  # the client went away
                    chunk = message.get("body", b"")
                    seen += len(chunk)
                    if seen > self.limit:
                        break
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            late = True
        if seen > self.limit:
            await self._refuse(scope, receive, send)
            return
        if late:
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

    add_error_handlers(app)
    for router in (
        routes.clock_routes(storage),
        routes.key_routes(storage),
        routes.owner_routes(storage),
        routes.record_routes(storage),
        routes.offer_routes(storage),
    ):
        app.include_router(router)

    from bees_cli.cloud.server import admin_api

    admin_api.register(app, storage, routes.RESPONSES)
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
