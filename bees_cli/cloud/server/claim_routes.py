"""The claim routes (owners, schedule keys) answered without the framework's per-request work.

Why: a claim is the server's hot path (every computer asks before it works), and FastAPI's
routing, dependency solving and middleware cost more CPU per claim than the claim itself
(issue 16). :class:`ClaimRoutes` answers a well-formed claim itself: the same body parsing
and validation as FastAPI (``json.loads``, then the wire model), the same bearer rule, the
same storage call in the same worker threads, the same answer bytes, and the app's own
exception handlers for every refusal. Anything else, and any claim it would refuse before
the storage call (no token, not JSON, invalid), goes to the FastAPI app unchanged, which
also keeps documenting both routes in its OpenAPI.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread
from fastapi import FastAPI
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from bees_cli.cloud import wire
from bees_cli.cloud.server.storage import Storage

JSON_TYPES = frozenset({b"application/json", b"application/json; charset=utf-8"})
"""Content types taken here; FastAPI decides about any other."""
JSON_HEADER = (b"content-type", b"application/json")
"""The content type of every answer (Starlette's for ``media_type="application/json"``)."""


class ClaimRoute(BaseModel):
    """One claim route: its body model, its storage call, whether the answer leaves out
    the optional fields it did not set (see ``answers.json_answer``), and the storage's
    call on the event loop, if any (None from it: take the thread path)."""

    model: type[BaseModel]
    call: Callable[[str, Any], BaseModel]
    only_set: bool
    on_loop: Callable[[str, Any], Awaitable[BaseModel | None]] | None = None


def bearer_token(headers: list[tuple[bytes, bytes]]) -> str | None:
    """Return the bearer token of ``Authorization: Bearer T`` (as the app's ``bearer``), or
    None when there is none (the app then refuses it)."""
    for name, value in headers:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            return None
    return None


class ClaimRoutes:
    """ASGI middleware: answer ``POST /v1/owners/claim`` and ``POST /v1/keys/claim``.

    Args:
        app: the FastAPI app (``create_app``); it answers everything not taken here, and
            its exception handlers turn refusals into answers.
        storage: the data the app serves.
    """

    def __init__(self, app: FastAPI, storage: Storage) -> None:
        self.app = app
        self.handlers: dict[Any, Any] = app.exception_handlers
        self.routes = {
            "/v1/owners/claim": ClaimRoute(
                model=wire.OwnerClaim,
                call=storage.claim_owner,
                only_set=False,
                on_loop=storage.async_claims.claim if storage.async_claims else None,
            ),
            "/v1/keys/claim": ClaimRoute(
                model=wire.KeyClaim, call=storage.claim_key, only_set=True
            ),
        }

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Answer a claim, or pass the request on."""
        route = None
        if scope["type"] == "http" and scope["method"] == "POST":
            route = self.routes.get(scope["path"])
        if route is None:
            await self.app(scope, receive, send)
            return
        headers = scope["headers"]
        token = bearer_token(headers)
        kind = next((value for name, value in headers if name == b"content-type"), None)
        chunks: list[bytes] = []
        while True:  # BodyLimit hands the whole body over in one message
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        claim = None
        if token is not None and kind is not None and kind.lower() in JSON_TYPES:
            try:
                claim = route.model.model_validate(json.loads(body))
            except (ValueError, ValidationError):
                claim = None  # FastAPI answers it (400 or 422)
        if token is None or claim is None:
            await self.app(scope, _replay(body, receive), send)
            return
        try:
            answer = None if route.on_loop is None else await route.on_loop(token, claim)
            if answer is None:
                answer = await anyio.to_thread.run_sync(route.call, token, claim)
        except Exception as error:
            response = await self._refusal(scope, error)
            await response(scope, receive, send)
            return
        # The answer Response(content, media_type="application/json") sends, without it.
        content = answer.model_dump_json(exclude_unset=route.only_set).encode()
        headers = [(b"content-length", b"%d" % len(content)), JSON_HEADER]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    async def _refusal(self, scope: Any, error: Exception) -> Response:
        """The app's answer to ``error``: its handler for the nearest class of the error."""
        for kind in type(error).__mro__:
            if kind in self.handlers:
                response: Response = await self.handlers[kind](Request(scope), error)
                return response
        raise error  # pragma: no cover - the app handles Exception


def _replay(body: bytes, receive: Any) -> Callable[[], Any]:
    """Return a ``receive`` that gives ``body`` once, then what ``receive`` gives."""
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        message: dict[str, Any] = await receive()
        return message

    return replay
