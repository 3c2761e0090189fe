"""Work items: ``bees item create``, ``bees status``, ``bees item show`` (``--wait``: watch)."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bees_cli.errors import NotFound, UserError
from bees_cli.machine.computer import Computer
from bees_cli.record.local import ItemRow, LocalRecord
from bees_cli.record.states import Status, WaitKind
from bees_cli.usecases.models import (
    CreatedItem,
    StatusView,
    StatusWarning,
    TeamItemDetails,
)

if TYPE_CHECKING:
    from bees_cli.usecases.bees import Bees
    from bees_cli.usecases.item_details import ItemDetails

Say = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


def create_item(workspace_path: Path | None, process: str, *, title: str | None,
                agents: list[str], folders: list[str], record: LocalRecord,
                computer: Computer, say: Say = _quiet, offered: bool = False) -> CreatedItem:
    """Make a work item of ``process`` on ``computer``: snapshot, run folder, local record
    row and owner claim; its run is not started (``started`` False: pending; ``offered``:
    recorded ``free`` instead, to be handed to a pool at once, so it never starts here).

    Blocking (files, SQLite, the blocking cloud client); :func:`_create` runs it in a thread.

    Raises:
        UserError: ``title`` is empty, holds control or bidi characters or is too long
            (:func:`bees_cli.text.title_problem`); no workspace, or the run folder is not
            linked.
        WorkspaceInvalid: the workspace does not load.
        NotFound: the process, an agent or a folder is not declared.
    """
    from ulid import ULID

    from bees_cli.text import title_problem

    problem = None if title is None else title_problem(title)
    if problem is not None:
        raise UserError(problem, hint="bees item create PROCESS --title 'Week 12 report'")

    from bees_cli.agents.snapshot import make_snapshot
    from bees_cli.engine.items import make_item
    from bees_cli.machine.links import run_folder_root
    from bees_cli.machine.paths import run_folder_of
    from bees_cli.schedules import owners
    from bees_cli.workspace.loader import load_workspace

    workspace = load_workspace(workspace_path)
    snapshot = make_snapshot(workspace, process, item_agents=agents, item_folders=folders)
    item_id = str(ULID())
    item_title = title or snapshot.process.title or process
    folder = run_folder_of(run_folder_root(workspace, computer.runs_dir), item_id)
    folder.mkdir(parents=True, exist_ok=False)
    try:
        make_item(record, snapshot, item_id=item_id, title=item_title, run_folder=folder,
                  workspace=str(workspace.root),
                  status=Status.FREE if offered else Status.PENDING)
        claim = owners.claim_at_create(computer, record, item_id)
    except BaseException:
        # a half-made item is no item: no row, no run folder
        _undo_create(record, item_id, folder)
        raise
    if claim.reason:
        say(f"{item_id}: waiting: {claim.reason}")
    return CreatedItem(id=item_id, process=process, title=item_title, run_folder=folder,
                       started=False)


def _undo_create(record: LocalRecord, item_id: str, folder: Path) -> None:
    with contextlib.suppress(Exception):
        record.remove_item(item_id)
    shutil.rmtree(folder, ignore_errors=True)


async def _create(bees: Bees, workspace_path: Path | None, process: str, *,
                 title: str | None, agents: list[str], folders: list[str],
                 made: Callable[[str], None] | None = None) -> CreatedItem:
    """``bees item create``: make the item (:func:`create_item`) and start its run now when
    this computer's engine answers; otherwise it stays ``pending`` and ``bees run`` starts it.

    ``made`` is called with the item's id as soon as the item exists (before its run is
    started), so an error after it can still name the item (``item create --json``).

    Raises:
        UserError, WorkspaceInvalid, NotFound: see :func:`create_item`.
        EngineError: the engine answers but refused the start.
    """
    import asyncio

    from bees_cli.usecases.run import start_pending

    created = await asyncio.to_thread(
        create_item, workspace_path, process, title=title, agents=agents, folders=folders,
        record=bees.async_record.sync, computer=bees.computer, say=bees.say)
    if made is not None:
        made(created.id)
    if not bees.has_engine and await asyncio.to_thread(bees.engine_address) is None:
        bees.say("the engine is not running: the item starts when `bees run` starts")
        return created
    engine = await bees.engine()
    await start_pending(engine, bees.async_record, bees.computer, only=created.id)
    return created.model_copy(update={"started": True})


def describe(row: ItemRow) -> str:
    """Return one line for a stage move: ``ITEM Draft: running (writer)``."""
    agent = f" ({row.agent})" if row.agent and row.status == "running" else ""
    return f"{row.id} {row.stage}: {row.status_text}{agent}"


def status_rows(record: LocalRecord, machine_id: str) -> list[dict[str, Any]]:
    """Return every item of this computer for ``bees status --all --mine`` (the rows of
    :func:`local_status`)."""
    return local_status(record, machine_id, limit=None, team=False).rows


def local_status(record: LocalRecord, machine_id: str, *, limit: int | None,
                 team: bool, statuses: Sequence[str] | None = None,
                 exact: bool = True) -> StatusView:
    """Return this computer's rows for ``bees status`` (the record row plus ``since_human``,
    ``"2m ago"``, and ``pieces``, how many of its run's pieces wait or run), then
    (``team``) the team's, ``limit`` rows in all (None: every row).
    Reads only the local record, and of it only the listed rows
    (:mod:`bees_cli.record.listing`).

    An item this computer relinquished (``free``) that another computer has since changed
    in the shared record is left out, so ``bees status`` shows the team's newer row
    ("Draft, running on maya-desktop") instead of the stale ``free``.

    Args:
        limit: how many rows at most: this computer's most relevant first, then the team's
            latest changed; ``more`` counts the others. None: every row.
        team: list the team's rows after this computer's.
        statuses: list only items in one of these statuses (the app's filters, applied
            before ``limit``); None: any status.
        exact: count the rows not shown; False: ``more`` only says whether any is left
            (0 or 1; :func:`~bees_cli.record.listing.local_page`).
    """
    from bees_cli.handover.store import taken_over
    from bees_cli.record.listing import free_rows, local_page, team_page
    from bees_cli.record.local import human_since
    from bees_cli.utc import utc_now

    with record.reading() as db:  # one connection, one snapshot (issue 29, point 1)
        free = free_rows(record.path, db)
        moved = sorted(taken_over(record.path, free, machine_id, db=db)) if free else []
        page = local_page(record.path, limit=limit, hide=moved, statuses=statuses,
                          exact=exact, db=db)
        now = utc_now()
        live = record.live_pieces()  # issue 14: each run's pieces waiting or running
        rows = [dict(row.to_json(), since_human=human_since(row.since, now),
                     pieces=live.get(row.id, 0)) for row in page.rows]
        held = _queued_shown(record, rows, dict(page.held))
        more = page.more
        if team:
            others = team_page(record.path, limit=None if limit is None else max(
                0, limit - len(rows)), show=moved, statuses=statuses, exact=exact, db=db)
            rows += [dict(r, since_human=r["since"]) for r in others.rows]
            more += others.more
    return StatusView(rows=rows, more=more, held=held)


def _queued_shown(record: LocalRecord, rows: list[dict[str, Any]],
                  held: dict[str, str]) -> dict[str, str]:
    """Add to each row of an item with decisions queued while ``bees run`` was down its
    ``queued_decisions`` (JSON); when they answer every request that waited, its ``wait``
    becomes ``engine_not_running`` and nothing is held for a person (issue 23, point 2).
    Returns ``held`` (item id → what its approval waits for) without what they answered."""
    from bees_cli.record.listing import held_what
    from bees_cli.record.states import DECIDE_UPDATE

    if not record.queued_payloads(DECIDE_UPDATE):  # none (the usual): no models imported
        return held
    from bees_cli.usecases.approvals import queued_decisions, with_decisions

    queued = queued_decisions(record)
    for row in rows:
        decisions = queued.get(row["id"])
        if not decisions:
            continue
        row["queued_decisions"] = [d.model_dump(mode="json") for d in decisions]
        left = [r for r in with_decisions(record.approvals(row["id"]), decisions)
                if r["status"] == "waiting"]
        held.pop(row["id"], None)
        if left:
            held[row["id"]] = held_what(left[0])
        elif row["status"] == Status.WAITING_FOR_APPROVAL:
            row["wait"] = str(WaitKind.ENGINE_NOT_RUNNING)
    return held


async def _status(bees: Bees, *, mine: bool = False, limit: int | None = None,
                 now: datetime | None = None,
                 statuses: Sequence[str] | None = None,
                 exact: bool = True) -> StatusView:
    """``bees status``: :func:`status_now` in a worker thread (it reads files and SQLite).

    Args:
        limit: how many rows at most, this computer's most relevant first, then the team's
            latest changed (``more`` counts the others); None: every row.
        now: this computer's clock (UTC), for the age of the team rows; default: now.
        statuses: list only items in one of these statuses (applied before ``limit``);
            None: any status.
        exact: count the rows not shown; False: ``more`` is 0 or 1 (see
            :func:`local_status`).
    """
    import asyncio

    return await asyncio.to_thread(status_now, bees, mine=mine, limit=limit, now=now,
                                   statuses=statuses, exact=exact)


def status_now(bees: Bees, *, mine: bool = False, limit: int | None = None,
               now: datetime | None = None,
               statuses: Sequence[str] | None = None,
               exact: bool = True) -> StatusView:
    """``bees status``, blocking: this computer's items, then (unless ``mine``) the team's
    from the shared record ("Draft, running on maya-laptop"), and the warnings: ``bees run
    is not running (last seen pid N, stopped without cleanup)`` when it was killed, then
    those of :func:`~bees_cli.usecases.status_warnings.status_warnings`. The CLI calls it
    without an event loop (issue 16, point 4: ``asyncio`` is not imported on the path of
    ``bees status``).

    Args:
        limit: how many rows at most, this computer's most relevant first, then the team's
            latest changed (``more`` counts the others); None: every row.
        now: this computer's clock (UTC), for the age of the team rows; default: now.
        statuses: list only items in one of these statuses (applied before ``limit``);
            None: any status.
        exact: count the rows not shown; False: ``more`` is 0 or 1 (see
            :func:`local_status`).
    """
    from bees_cli.usecases.liveness import bees_run_state
    from bees_cli.usecases.status_warnings import status_warning_values, warning_lines

    # issue 12, point 8: a bees run killed with kill -9 is said to be gone
    worker = bees_run_state(bees.computer.data_dir)
    moment = now or datetime.now(UTC)
    values = [StatusWarning(code="bees_run_gone", pid=worker.pid)] \
        if worker.stopped_without_cleanup else []
    # one connection and one read transaction for every part (issue 29, point 1)
    with bees.record.reading() as db:
        view = local_status(bees.record, bees.computer.machine_id, limit=limit,
                            team=not mine, statuses=statuses, exact=exact)
        values += status_warning_values(bees.record.path, moment, db=db)
    lines = warning_lines(values, moment)
    return view.model_copy(update={"warning": "\n".join(lines) or None, "warnings": values,
                                   "bees_run": worker.running})


async def _item_details(bees: Bees, item_id: str) -> ItemDetails | TeamItemDetails:
    """``bees item show``: :func:`_item_details_now` in a worker thread (it reads files and
    SQLite)."""
    import asyncio

    return await asyncio.to_thread(_item_details_now, bees, item_id)


def _item_details_now(bees: Bees, item_id: str) -> ItemDetails | TeamItemDetails:
    """``bees item show``, blocking: the row, its history (oldest first), each stage's
    stdout and stderr files, the engine log, the journal of its add-on actions and every
    approval request (any status); for a team item another computer runs, its team row and
    where it runs (:class:`TeamItemDetails`). The CLI calls it without an event loop (issue
    29, point 3: ``asyncio`` is not imported on the path of ``bees item show``).

    Raises:
        NotFound, Ambiguous: no such item here nor in the team, or the prefix matches
            several.
    """
    from bees_cli.record.local import OwnedElsewhere

    try:
        return _details(bees.record, bees.computer, item_id)
    except OwnedElsewhere as elsewhere:
        held = _team_details(bees.record.path, elsewhere.item_id)
        if held is None:  # the row went between the two reads: the refusal stands
            raise
        return held
    except NotFound:
        # a team item no computer holds (relinquished: free) is still the team's to show
        found = _team_details(bees.record.path, item_id)
        if found is None:
            raise
        return found


def _team_details(record_path: Path, wanted: str) -> TeamItemDetails | None:
    """Return the team row whose id is ``wanted`` (or that a prefix of at least 6 characters
    names alone) as :class:`TeamItemDetails`; None when there is no such single row."""
    from bees_cli.record.shared import team_rows

    wanted = wanted.upper()  # ids are ULIDs; a prefix may be typed in lower case
    rows = [r for r in team_rows(record_path, set())
            if r["id"] == wanted or (len(wanted) >= 6 and r["id"].startswith(wanted))]
    exact = [r for r in rows if r["id"] == wanted]
    if len(exact or rows) != 1:
        return None
    row = (exact or rows)[0]
    return TeamItemDetails.model_validate(
        {key: row[key] for key in TeamItemDetails.model_fields if key in row})


def _details(record: LocalRecord, computer: Computer, item_id: str) -> ItemDetails:
    from bees_cli.files import logs_dir
    from bees_cli.record.local import human_since
    from bees_cli.usecases.approvals import queued_decisions, with_decisions
    from bees_cli.usecases.item_details import ItemDetails  # record.views: off bees status

    row = record.item(item_id, with_input=False)
    history = [event.to_json() for event in record.events(row.id)]
    logs: list[str] = []
    for event in history:
        for key in ("stdout", "stderr"):
            path = event.get(key)
            if isinstance(path, str) and path not in logs:
                logs.append(path)
    # every attempt's logs, also those of an attempt that never ended (interrupted)
    folder = logs_dir(row.run_folder)
    if folder.is_dir():
        found = sorted((f for f in folder.iterdir() if f.suffix in (".stdout", ".stderr")),
                       key=lambda f: (f.stat().st_mtime, f.name))
        logs += [str(f) for f in found if str(f) not in logs]
    # -- issue 13, point 8: each model stage's transcript and what it used --
    from bees_cli.engine.transcript import SUFFIX, stage_usage

    if folder.is_dir():
        logs += sorted(str(f) for f in folder.glob(f"*{SUFFIX}"))
    models = [usage.model_dump(mode="json") for usage in stage_usage(row.run_folder)]
    item = {**row.to_json(), "created_on": row.created_on or computer.computer}
    # issue 23, point 2: decisions given while bees run was down, shown until delivered
    decisions = queued_decisions(record, row.id).get(row.id, [])
    approvals = with_decisions(record.approvals(row.id, status=None), decisions)
    if decisions:
        item["queued_decisions"] = [d.model_dump(mode="json") for d in decisions]
        if row.status == Status.WAITING_FOR_APPROVAL and not any(
                r["status"] == "waiting" for r in approvals):
            item["wait"] = str(WaitKind.ENGINE_NOT_RUNNING)
    return ItemDetails.model_validate({
        "item": item, "since_human": human_since(row.since), "history": history, "logs": logs,
        "engine_log": str(computer.engine_log), "journal": record.journal(row.id),
        "approvals": approvals, "models": models,
        "pieces": [p.model_dump(mode="json") for p in record.pieces(row.id)]})
