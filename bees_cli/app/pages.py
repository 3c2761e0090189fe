"""The Bees app's reading pages: an item (and its live part and logs), schedules, doctor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from bees_cli.app.item_page import item_page
from bees_cli.app.render import error_page, live_part, page, part_response, state_of
from bees_cli.errors import BeesError
from bees_cli.usecases.models import TeamItemDetails

LOG_BYTES = 1024 * 1024
"""A log page shows at most the last this many bytes of its file."""


def item_id_of(request: Request) -> str:
    """Return the path's item id once it is one (or a prefix of one).

    Raises:
        HTTPException: 404 when it is not an item id.
    """
    from bees_cli.ids import check_item_id

    text = str(request.path_params["item_id"])
    try:
        return check_item_id(text, prefix=True)
    except BeesError as error:
        raise HTTPException(404, error.message) from None


async def _item_context(request: Request) -> dict[str, Any]:
    import asyncio

    from bees_cli.record.listing import process_stages

    app = state_of(request)
    details = await app.bees.item_details(item_id_of(request))
    item_id = details.id if isinstance(details, TeamItemDetails) else details.item.item_id
    stages = await asyncio.to_thread(process_stages, app.bees.record.path, item_id)
    return {"item": item_page(details, here=app.bees.computer.computer, stages=stages)}


async def item(request: Request) -> Response:
    """``GET /items/ITEM_ID``: the item page (a POST's refusal or news from ``?note=``)."""
    note = state_of(request).notes.get(request.query_params.get("note", ""))
    try:
        context = await _item_context(request)
    except BeesError as error:
        return error_page(request, error, note=note)
    found = context["item"]
    live = live_part(request, "_item_live.html", context,
                     url=f"/items/{found.item_id}/live")
    return page(request, "item.html", {**context, "live": live, "note": note})


async def item_live(request: Request) -> Response:
    """``GET /items/ITEM_ID/live``: the item page's live part (polled)."""
    context = await _item_context(request)
    return part_response(request, "_item_live.html", context,
                         url=f"/items/{context['item'].item_id}/live")


async def log(request: Request) -> Response:
    """``GET /items/ITEM_ID/logs/INDEX``: one of the item's log or transcript files (as
    ``bees item show`` lists them), as plain text; at most its last :data:`LOG_BYTES`."""
    app = state_of(request)
    try:
        details = await app.bees.item_details(item_id_of(request))
    except BeesError as error:
        return error_page(request, error)
    logs: list[str] = getattr(details, "logs", [])
    index = int(request.path_params["index"])
    if not 0 <= index < len(logs):
        raise HTTPException(404, "no such log")
    path = Path(logs[index])
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            handle.seek(max(0, size - LOG_BYTES))
            data = handle.read()
    except OSError as error:
        raise HTTPException(404, f"{path.name}: {error.strerror or error}") from None
    head = f"({path.name}: the last {LOG_BYTES:,} bytes)\n" if size > LOG_BYTES else ""
    return PlainTextResponse(head + data.decode("utf-8", errors="replace"))


async def schedules(request: Request) -> Response:
    """``GET /schedules``: what ``bees schedules`` says."""
    app = state_of(request)
    try:
        rows = await app.bees.schedules(app.workspace)
    except BeesError as error:
        return error_page(request, error)
    return page(request, "schedules.html", {"schedules": rows})


async def doctor(request: Request) -> Response:
    """``GET /doctor``: what ``bees doctor`` says about this computer."""
    app = state_of(request)
    try:
        report = await app.bees.doctor(app.workspace)
    except BeesError as error:
        return error_page(request, error)
    return page(request, "doctor.html", {"report": report})


async def team(request: Request) -> Response:
    """``GET /team``: every computer of the team: this one (its items under way from its
    record, whether ``bees run`` runs), then the others from the shared record (what each
    runs, when it was last heard from), then the team's runners as the last sync heard them
    (issue 27, point 4: their pool, what each runs, silent for how long)."""
    import asyncio

    from bees_cli.app.views import ComputerView, item_list, team_view
    from bees_cli.record.listing import team_computers
    from bees_cli.record.states import Status
    from bees_cli.usecases.runner_words import kept_runner_lines

    app = state_of(request)
    under_way = sorted(s for s in Status if s not in (Status.DONE, Status.CANCELLED,
                                                      Status.FREE))
    try:
        view = await app.bees.status(mine=True, limit=50, statuses=under_way)
        others = await asyncio.to_thread(team_computers, app.bees.record.path,
                                         skip=app.bees.computer.machine_id)
        runners = await asyncio.to_thread(kept_runner_lines, app.bees.record.path)
    except BeesError as error:
        return error_page(request, error)
    here = app.bees.computer.computer
    mine = item_list(view, "mine", here=here)
    me = ComputerView(computer=here, person=app.bees.computer.person or "-", here=True,
                      heard="bees run is running" if view.bees_run
                      else "bees run is not running", under_way=len(mine.rows) + mine.more,
                      running=mine.rows)
    return page(request, "team.html", {"computers": team_view(me, others), "runners": [
        (line.split(":", 1)[0], line) for line in runners]})
