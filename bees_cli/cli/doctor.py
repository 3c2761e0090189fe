"""``bees doctor``: can this computer do its part? Engine, cloud, clock, folders, processes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from bees_cli.cli.options import JsonOpt, WorkspaceOpt

if TYPE_CHECKING:
    from bees_cli.usecases.models import CannotRun, Check


def doctor(workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Check this computer: the engine and its version, Bees Cloud (reachable, authorized,
    clock skew), folder links, add-on connections, and for each process whether it could
    run here now, and if not, why. Exit 1 when a check fails; 2 when the workspace is
    invalid (or -w names none).

    Example: bees doctor -w examples/weekly-report
    """
    import asyncio

    from bees_cli.cli import json_models as out
    from bees_cli.cli.context import bees_here
    from bees_cli.cli.errors import ExitCode, exit_code_of_code

    report = asyncio.run(bees_here().doctor(workspace))
    doc = out.doctor_out(report.to_json())
    if as_json:
        out.emit(doc)
    else:
        typer.echo(f"computer  {report.computer} ({report.person or 'no person set'})")
        for check in report.checks:
            mark = "ok  " if check.ok else "warn" if check.warning else "FAIL"
            typer.echo(f"{mark}  {check.check}: {check.detail}")
        for process in report.processes:
            if process.can_run:
                typer.echo(f"ok    process {process.process}: could run here now")
            else:
                why = "; ".join(cannot_run_text(r, process.stage, report.checks)
                                for r in process.reasons)
                typer.echo(f"no    process {process.process}: cannot run here now: {why}")
    # an invalid workspace, or a -w that names none, is exit 2 as for any command (the
    # exit-code table); without -w and none found, doctor checks this computer only
    codes = [exit_code_of_code(c.error) for c in doc.checks
             if c.check == "workspace" and c.error is not None
             and (workspace is not None or c.error == "invalid_workspace")]
    raise typer.Exit(ExitCode.OK if report.ok else max(codes, default=ExitCode.FAILURE))


AGENT_WHY = {"not_declared": "not declared in the workspace", "disabled": "disabled",
             "under_review": "did the work under review"}
"""How ``bees doctor`` words why agent choice did not use an agent (its add-ons apart)."""


def cannot_run_text(reason: CannotRun, stage: str, checks: list[Check]) -> str:
    """Return why a process cannot run here, as people read it: ``folder notes: not linked on
    this computer (bees link notes PATH)`` (how the folder resolves, from its check) or ``no
    enabled agent for Draft: writer disabled; mailer add-on mail not connected``."""
    if reason.code == "folder_not_linked":
        how = [c.detail for c in checks if c.check == f"folder {reason.folder}"]
        return f"folder {reason.folder}: {how[0] if how and how[0] else 'not linked here'}"
    whys = [f"{s.agent} " + (AGENT_WHY[s.why] if s.why in AGENT_WHY else ", ".join(
        f"add-on {addon} not connected" for addon in s.addons) or "add-ons not connected")
        for s in reason.skipped]
    return f"no enabled agent for {stage}: " + ("; ".join(whys) or
                                                 "the workspace declares no agents")


def register(app: typer.Typer) -> None:
    """Attach ``doctor`` to the root app."""
    app.command("doctor")(doctor)
