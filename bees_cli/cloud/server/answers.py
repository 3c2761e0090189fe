"""How Bees Cloud answers what it refuses: the status of each refusal and the JSON error body.

Every answer to a request that fails is ``{"error": {"code", "message", "hint"}}`` with a
4xx status (a 500 is a bug). The storage's refusals become HTTP statuses here only, by
:data:`STATUS`.
"""

from __future__ import annotations

import sys
from typing import Any

import sqlalchemy.exc
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from bees_cli.cloud import wire
from bees_cli.cloud.server import refusals

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


def json_answer(model: Any, *, only_set: bool = False) -> Response:
    """Serialise a wire model straight to a JSON response (no second validation).

    ``only_set`` leaves out the optional fields the answer did not set (schedule keys: the
    wall-clock fields go only to a Bees that sent or asked for them).
    """
    content = model.model_dump_json(exclude_unset=only_set)
    return Response(content=content, media_type="application/json")


def add_error_handlers(app: FastAPI) -> None:
    """Make ``app`` answer refusals, invalid requests, HTTP errors, a database that is down
    (503) and bugs (500) with :func:`error_response`."""

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
