"""What ``bees schedules`` and ``bees doctor`` show, as typed reports (no Temporal import).

``bees doctor`` checks, in order: the engine (running? its version), ``bees run`` (its
process alive, not only its file), lost items (``bees retry ITEM``), Bees Cloud
(reachable, authorized, clock skew against it — the last measured one when it does not
answer —, last shared-record sync, changes it refused), the time-zone database schedules are
computed with (its version and where it comes from), folder links,
add-on connections, and for each process whether this computer could run it now — the
eligibility check of its first stage (DESIGN.md, Rules: eligibility), with the reasons
when it could not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bees_cli.cloud.client import sync_cloud_for
from bees_cli.machine.computer import Computer
from bees_cli.record.sync import SKEW_WARN
from bees_cli.usecases.models import (
    AgentWhy,
    CannotRun,
    Check,
    DoctorReport,
    ProcessCheck,
    ScheduleRow,
    SkippedAgent,
    WhyNotHere,
)
from bees_cli.utc import format_utc

if TYPE_CHECKING:
    from bees_cli.machine.connections import AddonConnection
    from bees_cli.usecases.bees import Bees
    from bees_cli.workspace.loader import Workspace

NEXT_TIMES = 3
"""How many upcoming times ``bees schedules`` shows per schedule."""
LAST_FIRES = 5
"""How many past fires ``bees schedules`` shows per schedule."""


async def _schedules_report(bees: Bees, workspace_path: Path | None, *,
                           now: datetime | None = None) -> list[ScheduleRow]:
    """``bees schedules``: see :func:`schedules_rows` (run in a thread)."""
    return await asyncio.to_thread(schedules_rows, bees.computer, workspace_path, now=now)


def schedules_rows(here: Computer, workspace_path: Path | None, *,
                   now: datetime | None = None) -> list[ScheduleRow]:
    """Return every schedule of the workspace for ``bees schedules``.

    Each: ``schedule``, ``process``, ``owner``, ``timezone``, ``enabled``, ``fires_here``
    (owned by the person signed in here and enabled), ``why_not`` (when it does not fire
    here: ``disabled``, ``no_person``, ``not_owner``), ``next`` (the next three instants,
    UTC as :func:`~bees_cli.utc.format_utc` writes them; the text view shows them in the
    schedule's zone), ``last`` (this computer's latest fires, newest first, each with
    ``text``: ``ran here (ITEM)``, ``taken by COMPUTER``, ``skipped (late by N s)``…) and
    ``warnings`` (each wall-clock time two of the person's computers placed at two instants:
    :func:`bees_cli.schedules.disagreements.zone_warnings`, which asks Bees Cloud).

    Raises:
        UserError, WorkspaceInvalid: no workspace, or it does not load.
    """
    from bees_cli.record.fires import FireLog
    from bees_cli.schedules.disagreements import zone_warnings
    from bees_cli.schedules.times import fire_times
    from bees_cli.workspace.loader import load_workspace

    workspace = load_workspace(workspace_path)
    log = FireLog(here.record_path)
    moment = now or datetime.now(UTC)
    warnings = zone_warnings(here) if workspace.schedules else {}
    rows = []
    for name, schedule in workspace.schedules.items():
        mine = here.person is not None and schedule.owner.lower() == here.person.lower()
        why_not: WhyNotHere | None = None
        if not schedule.enabled:
            why_not = "disabled"
        elif here.person is None:
            why_not = "no_person"
        elif not mine:
            why_not = "not_owner"
        upcoming = fire_times(schedule, name, after=moment, count=NEXT_TIMES)
        rows.append(ScheduleRow(
            schedule=name, process=schedule.process, owner=schedule.owner,
            timezone=schedule.timezone, enabled=schedule.enabled,
            fires_here=why_not is None, why_not=why_not,
            next=[format_utc(f.utc) for f in upcoming],
            last=[f.to_json() for f in log.fires(name, limit=LAST_FIRES)],
            warnings=warnings.get(name, []),
        ))
    return rows


def _check(name: str, ok: bool, detail: str, **extra: Any) -> Check:
    """One check: ``detail`` is the text view's line, ``extra`` its machine values (the
    fields of :class:`bees_cli.cli.json_models.DoctorCheck`)."""
    return Check(check=name, ok=ok, detail=detail, **extra)


async def _doctor_report(bees: Bees, workspace_path: Path | None) -> DoctorReport:
    """``bees doctor``: see :func:`doctor_checks`."""
    return await doctor_checks(bees.computer, workspace_path, say=bees.say)


def _quiet(_: str) -> None:
    return None


async def doctor_checks(here: Computer, workspace_path: Path | None, *,
                        say: Callable[[str], None] = _quiet) -> DoctorReport:
    """Return ``{"ok", "checks", "processes"}`` for ``bees doctor``.

    ``checks``: one ``{"check", "ok", "detail"}`` each for the engine, the cloud, the
    clock skew, each folder link and each add-on. ``processes``: one ``{"process",
    "stage", "can_run", "reasons"}`` each. Without a workspace, only the computer's checks.
    ``ok`` is True when every check passed (processes that cannot run are reported, not
    counted as failures: they may simply wait for a folder link). ``person`` is this
    computer's person; signed in by ``BEES_TOKEN``, the token's person, which Bees Cloud
    names and which becomes this computer's (said once, :func:`_token_person`).

    Why: the blocking checks run in a thread; the add-ons are asked on this loop
    (:func:`~bees_cli.agents.mcp_addon.addon_connections`), so a cancel (Ctrl-C) stops
    their servers at once instead of waiting for a thread that waits for their bounds.
    """
    from bees_cli.agents.mcp_addon import addon_connections

    checks, person, workspace = await asyncio.to_thread(_computer_checks, here,
                                                        workspace_path, say)
    processes: list[ProcessCheck] = []
    if workspace is not None:
        addons = await addon_connections(workspace)
        for addon in addons:
            checks.append(_check(f"add-on {addon.name}", addon.connected, addon.words(),
                                 addon=addon.name, missing=list(addon.missing)))
        checks.extend(await asyncio.to_thread(_model_checks, workspace))
        processes = await asyncio.to_thread(_process_checks, workspace,
                                            {addon.name: addon for addon in addons})
    return DoctorReport(ok=all(c.ok or c.warning for c in checks), checks=checks,
                        processes=processes,
                        computer=here.computer, machine_id=here.machine_id, person=person)


def _computer_checks(here: Computer, workspace_path: Path | None, say: Callable[[str], None]
                     ) -> tuple[list[Check], str | None, Workspace | None]:
    """Return :func:`doctor_checks`' checks before the add-ons' (the engine, ``bees run``,
    lost items, the cloud, time zones, the workspace, its folder links), this computer's
    person, and the workspace (None when it did not load). Blocking."""
    from bees_cli.errors import BeesError
    from bees_cli.schedules.zones import tz_database

    cloud = _cloud_checks(here)
    person = _token_person(here, cloud, say)
    checks = [_engine_check(here.data_dir), _bees_run_check(here.data_dir),
              _lost_check(here.record_path), *cloud]
    zones = tz_database()
    checks.append(_check("time zones", True, zones.text, tz_version=zones.version,
                         tz_source=zones.source))  # information, never a failure
    try:
        from bees_cli.workspace.loader import load_workspace

        workspace = load_workspace(workspace_path)
    except BeesError as error:
        checks.append(_check("workspace", False, error.message, error=error.code,
                             message=error.message, hint=error.hint))
        return checks, person, None
    from_env = here.workspace_env is not None and workspace.root == here.workspace_env
    checks.append(_check("workspace", True, str(workspace.root) + (
        " (from BEES_WORKSPACE)" if from_env else ""), path=str(workspace.root),
        from_env=from_env))
    from bees_cli.machine.report import folder_links

    for link in folder_links(workspace):
        path = link.default if link.path is None else str(link.path)
        checks.append(_check(f"folder {link.name}", link.linked, link.reason,
                             folder=link.name, path=path, link=link.how, env=link.env))
    return checks, person, workspace


def _token_person(here: Computer, cloud: list[Check], say: Callable[[str], None]) -> str | None:
    """Return this computer's person once the cloud check learned who the token is: signed
    in by ``BEES_TOKEN``, the token's person becomes this computer's, as ``bees login``
    makes it (:func:`~bees_cli.machine.signin.take_token_person`; issue 23, point 8), so
    the report names one person. A ``machine.json`` that cannot be written is said, and
    the person shown is still the token's."""
    from bees_cli.errors import BeesError
    from bees_cli.machine.signin import TOKEN_VARIABLE, take_token_person

    signed = next((c for c in cloud if c.check == "cloud" and c.ok), None)
    person = (signed.model_extra or {}).get("person") if signed is not None else None
    if not isinstance(person, str):
        return here.person
    try:
        if take_token_person(person, login=here.login, current=here.person, state=here.state):
            say(f"this computer's person is now {person} (BEES_TOKEN's)")
    except BeesError as error:
        say(f"cannot make {person} this computer's person: {error.message}")
    if here.login is not None and here.login.token_from == TOKEN_VARIABLE:
        return person
    return here.person


def _engine_check(data: Path) -> Check:
    from bees_cli.engine.server import running_engine
    from bees_cli.files import read_json

    engine = running_engine(data)
    if engine is None:
        return _check("engine", False, "not running (start it with `bees run`)")
    info = read_json(data / "engine.json", {}) or {}
    known = info.get("version")
    version = known or "version unknown (external server)"
    return _check("engine", True, f"{engine.address}, {version}", address=engine.address,
                  version=str(known) if known else None)


def _bees_run_check(data: Path) -> Check:
    """Issue 12, point 8: ``bees run`` is checked by its live process, not by its file (a
    ``bees run`` killed with kill -9 leaves ``worker.json`` and maybe its engine behind)."""
    from bees_cli.usecases.liveness import bees_run_state

    state = bees_run_state(data)
    detail = state.text.removeprefix("bees run is ")
    if not state.running and not state.stopped_without_cleanup:
        detail += " (start it with `bees run`)"
    run = ("starting" if state.starting else "running" if state.running
           else "stopped_without_cleanup" if state.stopped_without_cleanup else "not_running")
    return _check("bees run", state.running, detail, state=run, pid=state.pid)


LOST_HINT = "bees retry ITEM"
"""What starts a lost item's stage again from the top (issue 12, point 7)."""


def _lost_check(record_path: Path) -> Check:
    """The lost items (:attr:`~bees_cli.record.states.Status.LOST`: the engine's database
    was replaced while they were under way), counted, each with the stage it was at, and
    the hint ``bees retry ITEM``; the check fails while any is lost.

    Why: a lost item waits for a person, but nothing else calls for one after the ``bees
    run`` that found it; ``bees doctor`` is where a person looks for what is wrong.
    """
    from bees_cli.errors import BeesError
    from bees_cli.record.local import LocalRecord
    from bees_cli.record.states import LOST_TEXT, Status

    try:
        lost = LocalRecord(record_path).items(statuses=frozenset({Status.LOST}))
    except BeesError as error:
        return _check("lost items", False, f"cannot read the local record: {error.message}",
                      lost=None, hint=error.hint, error=error.code, message=error.message)
    if not lost:
        return _check("lost items", True, "none", lost=0, hint=None)
    where = ", ".join(f"{row.id} at {row.stage or '-'}" for row in lost)
    return _check("lost items", False,
                  f"{len(lost)} lost ({LOST_TEXT}): {where}; `{LOST_HINT}` starts each "
                  "at its stage again", lost=len(lost), hint=LOST_HINT,
                  items=[{"item_id": row.id, "stage": row.stage} for row in lost])


def _cloud_checks(here: Computer) -> list[Check]:
    from bees_cli.errors import CloudError, CloudUnauthorized

    if here.login is None:
        return [_check("cloud", True, "none configured: no keys, owners or shared record",
                       configured=False)]
    login = here.login
    # issue 15, point 4: say where the URL and token came from (saved, or the environment)
    where = {"configured": True, "url": login.url, "url_from": login.url_from,
             "token_from": login.token_from}
    sources = f" ({login.sources})" if login.sources else ""
    api = sync_cloud_for(here, retries=1)
    assert api is not None
    try:
        skew = api.skew()
    except CloudUnauthorized as error:
        return [_check("cloud", False, f"{login.url}: not authorized: {error.message}{sources}",
                       error=error.code, message=error.message, **where), *_record_checks(here)]
    except CloudError as error:
        return [_check("cloud", False, f"{login.url}: {error.message}{sources}",
                       error=error.code, message=error.message, **where),
                *_record_checks(here)]
    finally:
        api.close()
    return [
        _check("cloud", True, f"{login.url}: signed in as {skew.me.person} "
               f"(team {skew.me.team}){sources}", person=skew.me.person, team=skew.me.team,
               **where),
        _clock_check(skew.skew_seconds, "now"),
        *_record_checks(here, measured_now=True),
    ]


def _clock_check(seconds: float, measured: str) -> Check:
    """The clock check: the measured offset (server minus local, seconds) against Bees
    Cloud, ``measured`` saying when (``now``, ``at the last sync``)."""
    side = "ahead" if seconds < 0 else "behind"
    return _check("clock", abs(seconds) <= SKEW_WARN,
                  f"{seconds:+.1f} s against Bees Cloud, measured {measured}" + (
                      "" if abs(seconds) <= SKEW_WARN else
                      f" (this clock is {abs(seconds):.0f} s {side}; over {SKEW_WARN:g} s "
                      "the shared record trusts a wrong clock: fix it)"),
                  skew_seconds=round(seconds, 3),
                  measured="now" if measured == "now" else "last_sync")


def _record_checks(here: Computer, *, measured_now: bool = False) -> list[Check]:
    """The shared-record checks that need no cloud: the last sync, the last measured skew
    when the cloud did not answer now, and the changes Bees Cloud refused (issue 11,
    point 4: "your changes are refused: this computer's clock is N s ahead")."""
    from bees_cli.record.shared import SharedRecord
    from bees_cli.record.sync_notes import refusal_lines

    shared = SharedRecord(here.record_path)
    synced = shared.meta("last_sync")
    last = synced or "never (is `bees run` up?)"
    failed = shared.meta("error")
    refused = refusal_lines(here.record_path)
    changes = [{"item_id": r.item_id, "code": r.code, "message": r.message,
                "offset_seconds": r.offset_seconds, "owner": r.owner}
               for r in shared.refused()]
    skew = [] if measured_now or shared.skew is None else [
        _clock_check(shared.skew, "at the last sync")]
    return [
        *skew,
        _check("shared record", failed is None,
               f"last sync {last}" + (f"; last error: {failed}" if failed else ""),
               last_sync=synced, error=shared.meta("error_code") if failed else None,
               message=failed),
        _check("refused changes", not refused, "; ".join(refused) or "none",
               refused=changes),
    ]


MODEL_SERVE_HINT = "start it with bees model serve"
"""What starts a model server on this computer (the embedded model, at Ollama's address)."""


def _model_checks(workspace: Any) -> list[Check]:
    """Each enabled model agent, by name: does its model server answer (one ``GET
    {base_url}/models`` per URL, :func:`~bees_cli.agents.model_http.server_unreachable`)?

    One that does not is a warning, not a failure: the agent stays eligible (DESIGN.md,
    Rules: eligibility, which never asks the network), but its stage would fail to reach
    the model, so doctor says it before ``bees run`` does.
    """
    from bees_cli.workspace.runners import ModelRunner

    answers: dict[str, str | None] = {}
    checks = []
    for name, agent in sorted(workspace.agents.items()):
        if not agent.enabled or not isinstance(agent.runner, ModelRunner):
            continue
        from bees_cli.agents.model_http import (  # httpx: only with a model agent to probe
            is_loopback,
            server_unreachable,
        )
        url = str(agent.runner.model.base_url)
        if url not in answers:
            answers[url] = server_unreachable(url)
        why = answers[url]
        if why is None:
            checks.append(_check(f"agent {name}", True, f"model server {url} answers",
                                 agent=name, url=url))
            continue
        hint = MODEL_SERVE_HINT if is_loopback(url) else "check the URL and the network"
        checks.append(_check(f"agent {name}", False,
                             f"model server {url} not reachable: {hint}", warning=True,
                             agent=name, url=url, error="model_unreachable", message=why,
                             hint=hint))
    return checks


def _asked_first(asked: dict[str, AddonConnection], live: Callable[[str], AddonConnection]
                 ) -> Callable[[str], AddonConnection]:
    """Return an add-on's connection by name: the one already ``asked`` when there is one,
    else the ``live`` check's."""
    return lambda name: asked[name] if name in asked else live(name)


def _process_checks(workspace: Any, asked: dict[str, AddonConnection]) -> list[ProcessCheck]:
    """Each process: could its first stage run here now, and if not, the machine reasons
    (:class:`~bees_cli.usecases.models.CannotRun`: the folders not linked, then no agent).
    ``asked`` holds the add-ons' connections the report already asked for (an MCP server is
    started once per report, not again per process)."""
    from bees_cli.agents.eligibility import check_eligibility, connection_check, item_reads
    from bees_cli.agents.selection import WHY_DISABLED, WHY_REVIEWED, WHY_UNDECLARED, tool_addons
    from bees_cli.agents.snapshot import make_snapshot

    codes: dict[str, AgentWhy] = {WHY_UNDECLARED: "not_declared", WHY_DISABLED: "disabled",
             WHY_REVIEWED: "under_review"}
    rows = []
    for name, process in workspace.processes.items():
        stage = process.stages[0].name
        snapshot = make_snapshot(workspace, name)
        connected = _asked_first(asked, connection_check(snapshot))
        result = check_eligibility(snapshot=snapshot, stage_name=stage, reviewed_by=None,
                                   connected=connected)
        reasons = [CannotRun(code="folder_not_linked", folder=folder)
                   for folder in item_reads(snapshot) if folder not in result.folders]
        if result.pick is not None and result.pick.agent is None:
            skipped = []
            for passed in result.pick.skipped:
                why: AgentWhy = codes.get(passed.why, "addons_not_connected")
                agent = snapshot.agents.get(passed.agent)
                addons = [] if why != "addons_not_connected" or agent is None else [
                    addon for addon in tool_addons(agent) if not connected(addon).connected]
                skipped.append(SkippedAgent(agent=passed.agent, why=why, addons=addons))
            reasons.append(CannotRun(code="no_agent", skipped=skipped))
        rows.append(ProcessCheck(process=name, stage=stage, can_run=result.ok,
                                 reasons=reasons))
    return rows
