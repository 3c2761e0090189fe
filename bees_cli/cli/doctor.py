"""``bees doctor``: can this computer do its part? Engine, cloud, clock, folders, processes."""

from __future__ import annotations

import typer

from bees_cli.cli.options import JsonOpt, WorkspaceOpt


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
            mark = "ok  " if check.ok else "FAIL"
            typer.echo(f"{mark}  {check.check}: {check.detail}")
        for process in report.processes:
            if process.can_run:
                typer.echo(f"ok    process {process.process}: could run here now")
            else:
                why = "; ".join(process.reasons)
                typer.echo(f"no    process {process.process}: cannot run here now: {why}")
    # an invalid workspace, or a -w that names none, is exit 2 as for any command (the
    # exit-code table); without -w and none found, doctor checks this computer only
    codes = [exit_code_of_code(c.error) for c in doc.checks
             if c.check == "workspace" and c.error is not None
             and (workspace is not None or c.error == "invalid_workspace")]
    raise typer.Exit(ExitCode.OK if report.ok else max(codes, default=ExitCode.FAILURE))


def register(app: typer.Typer) -> None:
    """Attach ``doctor`` to the root app."""
    app.command("doctor")(doctor)
