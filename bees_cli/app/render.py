"""The Bees app's rendering: its state, the templates, pages, live parts and error pages.

Pages are server-rendered Jinja2 templates and read without JavaScript; the vendored htmx
polls each page's live part every second (:data:`POLL`) and swaps it only when it changed
(the server answers 204 when the part's version is the one the page has). A part's version
is a digest of its markup, or, for the item list, of the record's version
(:meth:`AppState.list_version`), so an unchanged list is answered before anything is read.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import jinja2
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.templating import Jinja2Templates

from bees_cli.app.security import CSRF_FIELD, Guard
from bees_cli.errors import BeesError, NotFound, Refused, UserError
from bees_cli.record.listing import RecordVersion
from bees_cli.usecases.bees import Bees

POLL = "every 1s"
"""How often the pages' live parts ask for news (htmx ``hx-trigger``)."""

NOTES_EVERY = 10
"""Seconds: the item list's notes are read again at least this often (see
:meth:`AppState.notes_version`)."""



@dataclass
class AppState:
    """What every handler reads: the application, the guard, the workspace, the templates,
    and the notes (refusals, confirmations) kept for the page a POST redirects to."""

    bees: Bees
    guard: Guard
    workspace: Path | None
    templates: Jinja2Templates
    notes: dict[str, Any]
    engine_pinned: bool = False
    """``bees`` came with its engine (a test, an embedding): actions use it as it is."""
    record_version: RecordVersion | None = None
    """The record's version (made on first use)."""
    clock: Callable[[], float] = time.time
    """Seconds since the epoch: the list's ages (``3m ago``) are current to the minute."""
    boot: str = field(default_factory=lambda: secrets.token_hex(8))
    """This app's start: a version given by an earlier app is never taken as current."""

    def list_version(self, *parts: object) -> str:
        """Return the item list's version: 16 hex digits of this app's start, the record's
        version, the minute of :attr:`clock` (the ages the rows show) and ``parts`` (the
        list's query). Costs one ``PRAGMA``, whatever the number of items (issue 29, point
        1)."""
        if self.record_version is None:
            from bees_cli.record.shared import SharedRecord

            # its tables and the outbox's seed first: the first list read changes nothing
            SharedRecord(self.bees.record.path)
            self.record_version = RecordVersion(self.bees.record.path)
        key = (self.boot, self.record_version(), int(self.clock() // 60), *parts)
        return hashlib.sha256(repr(key).encode()).hexdigest()[:16]

    def notes_version(self) -> str:
        """Return the list's notes' version: as :meth:`list_version`, with ``worker.json``'s
        identity (``bees run`` starting or stopping writes or removes it) and the clock to
        :data:`NOTES_EVERY` seconds instead of the minute (a ``bees run`` killed with
        ``kill -9`` leaves its file: the note says so within that time)."""
        from bees_cli.usecases.liveness import worker_file

        try:
            found = worker_file(self.bees.computer.data_dir).stat()
            worker: tuple[int, ...] = (found.st_ino, found.st_mtime_ns, found.st_size)
        except OSError:
            worker = ()
        return self.list_version("notes", worker, int(self.clock() // NOTES_EVERY))

    def acting(self) -> Bees:
        """Return the application an action runs on: ``bees`` itself when its engine was
        given, else a new one over the same computer, which connects to the engine this
        computer runs now.

        Why: ``bees run`` starts its engine on a new port each time, and the app outlives
        it; a gateway kept from an earlier ``bees run`` would talk to nobody.
        """
        if self.engine_pinned:
            return self.bees
        return Bees(self.bees.computer, say=self.bees.say)


def state_of(request: Request) -> AppState:
    """Return the :class:`AppState` of the app serving ``request``."""
    return cast(AppState, request.app.state.bees_app)


def templates() -> Jinja2Templates:
    """Return the app's templates (``bees_cli/app/templates``, autoescaped)."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("bees_cli.app", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    return Jinja2Templates(env=env)


def version_of(markup: str) -> str:
    """Return the version of a live part: the first 16 hex digits of its markup's SHA-256."""
    return hashlib.sha256(markup.encode()).hexdigest()[:16]


def render_part(request: Request, name: str, context: dict[str, Any]) -> str:
    """Return template ``name`` rendered with ``context`` (and the csrf token)."""
    app = state_of(request)
    return app.templates.env.get_template(name).render(
        request=request, csrf=app.guard.csrf, csrf_field=CSRF_FIELD, **context)


def _wrap(inner: str, *, url: str, element: str, element_id: str,
          version: str | None = None) -> Markup:
    return Markup(
        '<{el} id="{id}" hx-get="{url}" hx-trigger="{poll}" hx-swap="outerHTML" '
        "hx-vals='{{\"v\": \"{v}\"}}'>{inner}</{el}>").format(
            el=Markup(element), id=element_id, url=url, poll=POLL,
            v=version or version_of(inner), inner=Markup(inner))


def live_part(request: Request, name: str, context: dict[str, Any], *, url: str,
              element: str = "div", element_id: str = "live",
              version: str | None = None) -> Markup:
    """Return the live part ``name`` wrapped in the element htmx polls at ``url``.

    The wrapper carries the part's version (``hx-vals``; ``version``, read before the
    context was, or a digest of the markup); polled with that version, the server answers
    204 and htmx leaves the part (and the focus in it) alone.
    """
    return _wrap(render_part(request, name, context), url=url, element=element,
                 element_id=element_id, version=version)


def unchanged(request: Request, version: str) -> bool:
    """True when the poll ``request`` names ``version`` (``?v=``): answer it with
    :func:`no_news`, before reading anything."""
    return request.query_params.get("v") == version


def no_news() -> Response:
    """The answer to a poll whose part did not change: 204, no body (htmx swaps nothing)."""
    return Response(status_code=204)


def part_response(request: Request, name: str, context: dict[str, Any], *, url: str,
                  element: str = "div", element_id: str = "live",
                  version: str | None = None) -> Response:
    """Answer a poll: 204 when the part is the version the page has, else the new part
    (with ``version``, when given, as its version instead of its markup's digest)."""
    inner = render_part(request, name, context)
    if version is None and unchanged(request, version_of(inner)):
        return no_news()
    return HTMLResponse(str(_wrap(inner, url=url, element=element, element_id=element_id,
                                  version=version)))


def page(request: Request, name: str, context: dict[str, Any], *,
         status_code: int = 200) -> Response:
    """Render the whole page ``name``."""
    app = state_of(request)
    return app.templates.TemplateResponse(
        request, name, {"csrf": app.guard.csrf, "csrf_field": CSRF_FIELD,
                        "computer": app.bees.computer.computer, **context},
        status_code=status_code)


def status_of(error: BeesError) -> int:
    """Return the HTTP status a page answers with when its use case raised ``error``."""
    if isinstance(error, NotFound):
        return 404
    if isinstance(error, Refused):
        return 409
    if isinstance(error, UserError):
        return 400
    return 503


def error_page(request: Request, error: BeesError, *, note: Any = None) -> Response:
    """Render a use case's error as the page, its message and hint in an alert (after the
    note of the POST that led here, if any)."""
    return page(request, "error.html", {"error": error, "note": note},
                status_code=status_of(error))
