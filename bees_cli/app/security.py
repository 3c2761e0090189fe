"""The Bees app's guard: its own host name, the Host check (421), the secret that becomes a
cookie (403), CSRF.

Issue 17, point 1 (APP_CONTRACT.md, Security): the app listens on loopback only, yet another
local user or a web page in the same browser must not act through it. Issue 23, point 6:
cookies are scoped by host, not port, so a session cookie set by ``127.0.0.1:APP`` is sent
to every other program on ``127.0.0.1`` the browser visits; a page served there handed its
server the session, which read an item page and approved a held mail. So each ``bees app``
answers only under a name of its own, ``bees-<32 random hex>.localhost`` (browsers resolve
``*.localhost`` to loopback, RFC 6761), and its session cookie is host-only on that name:
no other port or program receives it unless it knows the name, which only the person's URL
holds. Every request passes, in this order:

1. ``Host`` is ``bees-….localhost:PORT``, this app's name and port (not ``127.0.0.1`` nor
   ``localhost``: a cookie there would reach their other ports; nor a foreign name: DNS
   rebinding), else **421**, which never says the name;
2. a valid ``bees_app_session`` cookie, or the right ``?secret=`` (which sets that cookie
   and answers 303 to the same path without it), else **403**;
3. each POST carries the form field ``csrf`` equal to the session's token, and comes from
   the app's own page (``Sec-Fetch-Site``, else ``Origin``: :meth:`Guard.same_origin`),
   else **403** (checked by :func:`checked_form`, the one way a handler reads a
   POST's form). Browsers send both on every POST; a client that sends neither (a script
   holding the cookie and the token) is judged by the token alone.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "bees_app_session"
"""The session cookie's name (host-only on the app's name, HttpOnly, SameSite=Strict,
Path=/)."""

HOST_SUFFIX = ".localhost"
"""The app's names end so: resolved to loopback by the browser itself (RFC 6761)."""


def new_host() -> str:
    """Return a fresh name for one ``bees app``: ``bees-<32 hex digits>.localhost``.

    Why random: a host-only cookie goes to every port of its host, so the name must be one
    that no other program is reached under; 128 random bits cannot be guessed. Hex, since
    browsers lower-case host names.
    """
    return f"bees-{secrets.token_hex(16)}{HOST_SUFFIX}"

CSRF_FIELD = "csrf"
"""The form field every POST carries (``<input type="hidden" name="csrf">``)."""

SECRET_PARAM = "secret"
"""The query parameter of the first URL (``/?secret=SECRET``)."""

HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", b"default-src 'self'; frame-ancestors 'none'; "
     b"form-action 'self'; base-uri 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"cache-control", b"no-store"),
)
"""Sent with every answer: no framing, no referrer (the first URL holds the secret), no
caching, and only this origin's scripts and styles."""


@dataclass(frozen=True)
class Guard:
    """The secrets of one ``bees app`` process and the name and port it answers on.

    Args:
        port: the TCP port the app listens on (the ``Host`` it accepts names it).
        host: the app's own name (``bees-<hex>.localhost``, random: :func:`new_host`).
        secret: the secret of the first URL (random, 32 bytes, URL-safe).
        session: the cookie's value once the secret was shown (random, another one).
        csrf: the token every POST carries (random, a third one).
    """

    port: int
    host: str = field(default_factory=new_host)
    secret: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    session: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    @property
    def origin(self) -> str:
        """Return the app's origin: ``http://bees-<hex>.localhost:PORT``."""
        return f"http://{self.host}:{self.port}"

    def host_ok(self, host: str | None) -> bool:
        """True when ``host`` (the ``Host`` header) is this app's name and port (the port
        may be left out only when it is 80, as browsers do)."""
        if host is None:
            return False
        given = host.lower()
        return given == f"{self.host}:{self.port}" or (self.port == 80 and given == self.host)

    def secret_ok(self, given: str | None) -> bool:
        """True when ``given`` is the first URL's secret (compared in constant time)."""
        return given is not None and hmac.compare_digest(given.encode(), self.secret.encode())

    def session_ok(self, given: str | None) -> bool:
        """True when ``given`` is the session cookie's value (constant time)."""
        return given is not None and hmac.compare_digest(given.encode(), self.session.encode())

    def same_origin(self, origin: str | None, fetch_site: str | None) -> bool:
        """True unless the request says it came from elsewhere.

        ``fetch_site`` (``Sec-Fetch-Site``, sent by current browsers) decides when present:
        ``same-origin`` or ``none`` (a person's own navigation); ``same-site`` is refused,
        as another port of the same name is another program. Without it, ``origin`` (the
        ``Origin`` header) must be absent, this app's :attr:`origin`, or ``null`` (what a
        browser sends for the app's own forms under ``Referrer-Policy: no-referrer``)."""
        if fetch_site is not None:
            return fetch_site.lower() in ("same-origin", "none")
        return origin is None or origin.lower() in (self.origin, "null")

    def csrf_ok(self, given: str | None) -> bool:
        """True when ``given`` is the session's CSRF token (constant time)."""
        return given is not None and hmac.compare_digest(given.encode(), self.csrf.encode())

    def url(self) -> str:
        """Return the first URL: ``http://bees-<hex>.localhost:PORT/?secret=SECRET``."""
        return f"{self.origin}/?{SECRET_PARAM}={self.secret}"


class GuardMiddleware:
    """ASGI middleware applying :class:`Guard`'s Host and secret/cookie rules to every
    HTTP request before any route (static files included) sees it."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer 421 or 403 itself, 303 for the secret, else pass on with the headers."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        answer = self._answer(scope)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        if answer is not None:
            await answer(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def _answer(self, scope: Scope) -> Response | None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if not self.guard.host_ok(headers.get("host")):
            # never says the name: a program asking 127.0.0.1:PORT must not learn it
            return PlainTextResponse("421 Misdirected Request: this app answers only at the "
                                     "address bees app printed", status_code=421)
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"),
                          keep_blank_values=True)
        given = dict(query).get(SECRET_PARAM)
        if given is not None and scope["method"] == "GET" and self.guard.secret_ok(given):
            path = scope["path"]
            rest = urlencode([(k, v) for k, v in query if k != SECRET_PARAM])
            target = "/items" if path == "/" else path + (f"?{rest}" if rest else "")
            response = RedirectResponse(target, status_code=303)
            response.set_cookie(COOKIE, self.guard.session, httponly=True, samesite="strict",
                                path="/")
            return response
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header is no session
            cookie = SimpleCookie()
        morsel = cookie.get(COOKIE)
        if not self.guard.session_ok(None if morsel is None else morsel.value):
            return PlainTextResponse("403 Forbidden: open the URL bees app printed (it holds "
                                     "the secret)", status_code=403)
        return None


FORM_BYTES = 256 * 1024
"""The largest form a POST may carry (a denial's reason is its longest field)."""


async def checked_form(request: Request, guard: Guard) -> FormData:
    """Return the POST's form (``application/x-www-form-urlencoded``, as the app's forms
    send it) once its ``csrf`` field is the session's token.

    Why parsed here: Starlette's ``request.form()`` needs python-multipart, and the app's
    forms are never multipart.

    Raises:
        HTTPException: 403 when the POST came from another site (module docstring, 3) or
            the field is missing or wrong; 413 past :data:`FORM_BYTES`.
    """
    if not guard.same_origin(request.headers.get("origin"),
                             request.headers.get("sec-fetch-site")):
        raise HTTPException(403, "403 Forbidden: the form was sent from another site")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_BYTES:
            raise HTTPException(413, "413 Content Too Large: the form is too large")
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    pairs: list[tuple[str, str | UploadFile]] = []
    if kind == "application/x-www-form-urlencoded":
        pairs += parse_qsl(body.decode("utf-8", errors="replace"), keep_blank_values=True)
    form = FormData(pairs)
    token = form.get(CSRF_FIELD)
    if not isinstance(token, str) or not guard.csrf_ok(token):
        raise HTTPException(403, "403 Forbidden: the form's csrf token is missing or wrong "
                            "(reload the page)")
    return form
