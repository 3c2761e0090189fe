"""The Bees app: a Starlette application over one computer's :class:`Bees` (issue 17).

:func:`create_app` builds it from explicit dependencies (no global state, STYLE habit 17):
the :class:`~bees_cli.usecases.bees.Bees` object the CLI builds, the :class:`Guard` holding
the secrets and the port, and the workspace ``bees app -w`` named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast, get_args

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from bees_cli.app import actions, pages
from bees_cli.app.render import (
    AppState,
    error_page,
    live_part,
    no_news,
    page,
    part_response,
    state_of,
    templates,
    unchanged,
)
from bees_cli.app.security import Guard, GuardMiddleware
from bees_cli.app.views import MOST, PAGE, SHOWS, STATUSES, Show, item_list
from bees_cli.errors import BeesError
from bees_cli.usecases.bees import Bees

# -- the item list -----------------------------------------------------------------------


def _show(request: Request) -> Show:
    show = request.query_params.get("show", "all")
    if show not in get_args(Show):
        raise HTTPException(400, f"show={show}: one of {', '.join(SHOWS)}")
    return cast(Show, show)


def _shown(request: Request) -> int:
    """Return how many rows the list shows (``?n=``, :data:`PAGE` by default)."""
    text = request.query_params.get("n", str(PAGE))
    if not text.isdigit() or not 1 <= int(text) <= MOST:
        raise HTTPException(400, f"n={text}: a number of rows from 1 to {MOST}")
    return int(text)


async def _items_context(request: Request, *, rows: bool = True) -> dict[str, Any]:
    """Return the list under the request's filter, one page of it (``bees status`` with the
    filter's statuses and ``?n=`` rows, which reads whether ``bees run`` is alive once, with
    its warnings; whether more rows are left is read, not how many); ``rows=False``: only
    its notes (no row read: the notes' poll)."""
    app = state_of(request)
    show = _show(request)
    shown = _shown(request)
    view = await app.bees.status(mine=show == "mine" or not rows,
                                 limit=shown if rows else 0,
                                 statuses=sorted(STATUSES[show]) if show in STATUSES
                                 else None, exact=False)
    return {"list": item_list(view, show, here=app.bees.computer.computer, shown=shown)}


def _rows_url(request: Request) -> str:
    return f"/items/rows?show={_show(request)}&n={_shown(request)}"


def _rows_version(request: Request) -> str:
    return state_of(request).list_version(_show(request), _shown(request))


NOTES_URL = "/items/notes"
"""The item list's notes (``bees run`` not running, the sync's warnings), polled."""


async def home(request: Request) -> Response:
    """``GET /``: to the item list."""
    return RedirectResponse("/items", status_code=303)


async def items(request: Request) -> Response:
    """``GET /items?show=all|mine|waiting|failed&n=50``: this computer's and the team's
    items, ``n`` at most (a "more" link asks for 50 more)."""
    # read before the rows: a change after it shows at the next poll
    seen, noted = _rows_version(request), state_of(request).notes_version()
    try:
        context = await _items_context(request)
    except BeesError as error:
        return error_page(request, error)
    rows = live_part(request, "_rows.html", context, url=_rows_url(request),
                     element="tbody", element_id="rows", version=seen)
    notes = live_part(request, "_notes.html", context, url=NOTES_URL, element_id="notes",
                      version=noted)
    return page(request, "items.html", {**context, "rows": rows, "notes": notes,
                                        "shows": SHOWS})


async def item_rows(request: Request) -> Response:
    """``GET /items/rows?show=…&n=…``: the item list's rows (polled): 204 before any row is
    read while the record's version is the page's (issue 29, point 1)."""
    seen = _rows_version(request)
    if unchanged(request, seen):
        return no_news()
    context = await _items_context(request)
    return part_response(request, "_rows.html", context, url=_rows_url(request),
                         element="tbody", element_id="rows", version=seen)


async def item_notes(request: Request) -> Response:
    """``GET /items/notes``: the item list's notes (polled like its rows, so starting or
    stopping ``bees run`` shows or hides its note without a reload): 204 before anything is
    read while the versions are the page's (issue 29, point 1)."""
    noted = state_of(request).notes_version()
    if unchanged(request, noted):
        return no_news()
    context = await _items_context(request, rows=False)
    return part_response(request, "_notes.html", context, url=NOTES_URL, element_id="notes",
                         version=noted)


def create_app(bees: Bees, guard: Guard, *, workspace: Path | None = None) -> Starlette:
    """Return the Bees app over ``bees``, guarded by ``guard``.

    Args:
        bees: this computer's application (its record, cloud clients and engine).
        guard: the secrets and the port (the ``Host`` the app answers to).
        workspace: the workspace ``bees app -w`` named (``bees schedules``, ``bees doctor``
            and ``bees continue`` use it), or None: theirs by default.
    """
    routes = [
        Route("/", home),
        Route("/items", items),
        Route("/items/rows", item_rows),
        Route(NOTES_URL, item_notes),
        Route("/items/{item_id}", pages.item),
        Route("/items/{item_id}/live", pages.item_live),
        Route("/items/{item_id}/logs/{index:int}", pages.log),
        Route("/items/{item_id}/{verb}", actions.act, methods=["POST"]),
        Route("/items/{item_id}/{verb}", actions.confirm, methods=["GET"]),
        Route("/team", pages.team),
        Route("/schedules", pages.schedules),
        Route("/doctor", pages.doctor),
        Mount("/static", StaticFiles(packages=[("bees_cli.app", "static")]), name="static"),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(GuardMiddleware, guard=guard)])
    app.state.bees_app = AppState(bees=bees, guard=guard, workspace=workspace,
                                  templates=templates(), notes={},
                                  engine_pinned=bees.has_engine)
    return app
