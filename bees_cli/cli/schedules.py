"""``bees schedules``: each schedule, its next times in its own zone, and its last fires here."""

from __future__ import annotations

import typer

from bees_cli.cli.options import JsonOpt, WorkspaceOpt
from bees_cli.cli.output import print_table, say


def schedules(workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """List the workspace's schedules: whether they fire here, their next three times in
    their own time zone, and this computer's last fires with their outcome (ran here,
    taken by another computer, skipped, missed, gave up, not eligible, failed). Warns
    when two of your computers placed one wall-clock time at two instants (their
    time-zone databases disagree; it still ran once).

    Example: bees schedules -w examples/weekly-report --json
    """
    import asyncio

    from bees_cli.cli import json_models as out
    from bees_cli.cli.context import bees_here

    found = asyncio.run(bees_here().schedules(workspace))
    rows = [r.to_json() for r in found]
    if as_json:
        out.emit(out.SchedulesOut(schedules=[out.ScheduleOut.model_validate(
            {**r, "last": [{k: v for k, v in f.items() if k not in ("schedule", "text")}
                           for f in r["last"]],
             "warnings": [{k: v for k, v in w.items() if k != "schedule_id"}
                          for w in r["warnings"]]}) for r in rows]))
        return
    if not rows:
        say("no schedules in this workspace (add one under schedules/)")
        return
    print_table(
        [(r["schedule"], r["process"], r["owner"], "yes" if r["fires_here"] else
          f"no: {why_not_text(r['why_not'], r['owner'])}",
          "\n".join(in_zone(t, r["timezone"]) for t in r["next"]))
         for r in rows],
        headers=["schedule", "process", "owner", "fires here", "next (own zone)"],
    )
    for row in rows:
        if row["last"]:
            typer.echo(f"\nlast fires of {row['schedule']}")
            print_table([(f["local"].replace("T", " "), f["scheduled"], f["text"])
                         for f in row["last"]], headers=["time", "scheduled (UTC)", "outcome"])
    for schedule in found:
        for warning in schedule.warnings:
            say(f"warning: {schedule.schedule}: {warning.warning}")


def why_not_text(why_not: str, owner: str) -> str:
    """Return why a schedule does not fire here, as people read it (the one wording of
    ``bees schedules``' ``why_not``)."""
    return {"disabled": "disabled",
            "no_person": "no person signed in here (bees whoami --set-person EMAIL)",
            "not_owner": f"owned by {owner}"}.get(why_not, why_not)


def in_zone(moment: str, zone: str) -> str:
    """Return the UTC time ``moment`` as people read it in ``zone``: ``2025-01-13 09:00 CET``."""
    from zoneinfo import ZoneInfo

    from bees_cli.utc import parse_utc

    return parse_utc(moment).astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M %Z")


def register(app: typer.Typer) -> None:
    """Attach ``schedules`` to the root app."""
    app.command("schedules")(schedules)
