"""Handover commands: ``bees relinquish ITEM [--to POOL]``, ``bees continue ITEM`` and
``bees offers`` (the items handed to pools of runners)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from bees_cli.cli.context import bees_here
from bees_cli.cli.errors import touches_engine
from bees_cli.cli.options import ItemArg, JsonOpt, WholeItemArg, WorkspaceOpt
from bees_cli.cli.output import exit_hard, say
from bees_cli.errors import UserError


def _is_sha256(text: str) -> bool:
    """True when ``text`` is 64 hex characters (surrounding spaces ignored)."""
    text = text.strip()
    return len(text) == 64 and all(c in "0123456789abcdefABCDEF" for c in text)


@touches_engine
def relinquish(
    item: ItemArg,
    repair: Annotated[bool, typer.Option(
        "--repair", help="On the computer that relinquished the item: verify its run folder "
        "and re-send the release with that folder's checkpoint digest (when 'bees continue' "
        "says the checkpoint and the release disagree). Needs no 'bees run'.")] = False,
    timeout: Annotated[float | None, typer.Option(
        "--timeout", metavar="SECONDS", min=0, help="End the command after at most SECONDS "
        "(exit 1): while Bees Cloud cannot be reached before anything stops, nothing "
        "changed; once the run stopped, the handover goes on in the run. Default: wait "
        "until Bees Cloud answers or Ctrl-C.")] = None,
    to: Annotated[str | None, typer.Option(
        "--to", metavar="POOL", help="Hand it to a pool of runners: an offer naming the "
        "secrets its work needs (never their values); one runner of the pool that can run "
        "it claims it (docs/runners.md).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Stop an item this computer owns and hand it over: its stage stops, the checkpoint is
    written into the run folder, and Bees Cloud learns that the item is free. Needs
    'bees run' up. While Bees Cloud is unreachable it waits, saying so, and changes nothing
    until the cloud answers. Exit 3 when refused (another computer owns it, or the run
    folder breaks a limit: the item then goes on running, untouched).

    Example: bees relinquish 01JH3QX5Z8
    """
    import asyncio

    from bees_cli.cli import json_models as out

    if repair:
        fixed = asyncio.run(bees_here().repair_release(item))
        if as_json:
            out.emit(out.item_out(out.RepairOut, fixed.to_json()))
        else:
            where = "Bees Cloud told" if fixed.released else "no Bees Cloud: digest kept here"
            change = (f"was {fixed.before}" if fixed.changed
                      else "it was the released one already")
            say(f"{fixed.item}: release repaired to the checkpoint {fixed.checkpoint} "
                f"({change}; {where})")
            typer.echo(fixed.checkpoint_sha256)
        exit_hard(0)
    bees = bees_here()
    done = asyncio.run(bees.relinquish(item, timeout=timeout))
    offered = None if to is None else bees.offer_to_pool(done, to)
    if as_json:
        given = done.to_json()
        if offered is not None:
            given["offer"] = offered.model_dump(mode="json")
        out.emit(out.item_out(out.RelinquishOut, given))
    else:
        where = "Bees Cloud told" if done.released else "no Bees Cloud: digest kept here"
        say(f"{done.item}: relinquished at {done.stage or '-'}; free, restarts at "
            f"{done.restart} ({where})")
        say(f"checkpoint {done.checkpoint}: {done.files:,} files, {done.total_bytes:,} bytes")
        if offered is not None:
            secrets = ", ".join(offered.secrets) or "none"
            say(f"{done.item}: offered to pool {offered.pool} (secrets by name: {secrets})")
        typer.echo(done.checkpoint_sha256)
    exit_hard(0)


@touches_engine
def continue_(
    item: WholeItemArg,
    from_dir: Annotated[Path | None, typer.Option(
        "--from", metavar="DIR", help="A copy of the run folder: verified, copied into this "
        "computer's run folder and verified again; the run uses the copy, so DIR may be "
        "deleted afterwards (default: the run folder in the workspace's linked run_folder).",
        show_default=False)] = None,
    digest: Annotated[str | None, typer.Option(
        "--digest", metavar="SHA256", help="The checkpoint's SHA-256 as printed by bees "
        "relinquish (needed without a Bees Cloud on another computer).")] = None,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Continue a relinquished item on this computer: verify its checkpoint and files, check
    eligibility, then claim it and start its unfinished stage from the top. Exit 3 when
    refused (owned elsewhere, checkpoint invalid, not eligible); the item then stays free.

    Example: bees continue 01JH3QX5Z8 -w ~/work/reports
    """
    from bees_cli.cli import json_models as out
    from bees_cli.cli.checkpoint import progress_printer

    if digest is not None and not _is_sha256(digest):
        raise UserError(f"--digest {digest}: not a SHA-256 (64 hex characters)",
                        hint="give the SHA-256 printed by bees relinquish")
    progress = progress_printer(sys.stderr)
    try:
        import asyncio

        done = asyncio.run(bees_here().continue_item(
            item, from_dir=from_dir, digest=digest, workspace_path=workspace,
            progress=progress))
    finally:
        if progress is not None:
            progress.close()
    if as_json:
        out.emit(out.item_out(out.ContinueOut, done.to_json()))
    else:
        state = "started" if done.started else "waiting for bees run"
        say(f"{done.item}: claimed here; {done.stage} restarts from the top ({state}); "
            f"run folder {done.run_folder}")
    exit_hard(0)


def offers(
    pool: Annotated[str | None, typer.Option("--pool", help="Only the offers to this pool.")
                    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Also the offers already claimed.")
                     ] = False,
    as_json: JsonOpt = False,
) -> None:
    """List the items handed to pools of runners (bees relinquish ITEM --to POOL): open ones
    first by age, the secrets each names (names only), who claimed it, and why each runner
    that could not run it left it ("runner-2: ... not linked on this computer").

    Example: bees offers --pool build
    """
    import asyncio

    from bees_cli.cli import json_models as out
    from bees_cli.utc import format_utc

    found = asyncio.run(bees_here().offers(pool, only_open=not every))
    if as_json:
        out.emit(out.OffersOut.model_validate(
            {"offers": [offer.model_dump(mode="json") for offer in found]}))
        return
    if not found:
        say("no open offers" if not every else "no offers")
        return
    for offer in found:
        state = "open" if offer.open else f"claimed by {offer.claimed_by or 'a person'}"
        secrets = ", ".join(offer.secrets) or "none"
        typer.echo(f"{offer.item_id}  pool {offer.pool}  {state}  offered by "
                   f"{offer.offered_by} at {format_utc(offer.offered_at)}  secrets: {secrets}")
        for note in offer.notes:
            typer.echo(f"  {note.runner}: {note.reason}")


def runners(as_json: JsonOpt = False) -> None:
    """List the team's runners: each one's pool, what it runs and when Bees Cloud last heard
    it ("runner-2: silent for 12 min"); nothing moves on its own (an admin may retire one).

    Each runner's sync vouches for it every 15 s; one not heard for more than 45 s is
    silent. A person decides; a team admin may retire a runner that is gone for good
    (bees cloud admin runner retire NAME).

    Example: bees runners
    """
    import asyncio

    from bees_cli.cli import json_models as out
    from bees_cli.rules import runner_silent
    from bees_cli.usecases.runner_words import runner_line

    found = asyncio.run(bees_here().runners())
    now = found.server_time
    if as_json:
        out.emit(out.RunnersOut.model_validate({
            "server_time": found.model_dump(mode="json")["server_time"],
            "runners": [{**view.model_dump(mode="json"),
                         "silent": runner_silent(view.heard_at, now)}
                        for view in found.runners]}))
        return
    if not found.runners:
        say("no runners in this team (bees cloud admin runner add NAME --pool POOL)")
        return
    for view in found.runners:
        typer.echo(runner_line(view.name, view.pool, heard=view.heard_at,
                               retired=view.retired_at, running=view.running, now=now))


def register(app: typer.Typer) -> None:
    """Attach ``relinquish``, ``continue``, ``offers`` and ``runners`` to the root app."""
    app.command("relinquish")(relinquish)
    app.command("continue")(continue_)
    app.command("offers")(offers)
    app.command("runners")(runners)
