"""Engine commands: ``bees run``, ``bees item create|show``, ``bees status``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from bees_cli.cli.complete import complete_agents, complete_folders, complete_processes
from bees_cli.cli.context import bees_here
from bees_cli.cli.errors import error_answer, touches_engine
from bees_cli.cli.options import ItemArg, JsonOpt, WorkspaceOpt
from bees_cli.cli.output import exit_hard, say
from bees_cli.errors import UserError
from bees_cli.utc import display_utc, parse_utc

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from bees_cli.usecases.bees import Bees
    from bees_cli.usecases.item_details import ItemDetails
    from bees_cli.usecases.models import CreatedItem

item_app = typer.Typer(
    name="item", help="Work items: create one, show one, watch one live.", no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]}, rich_markup_mode=None,
)


@touches_engine
def run(
    workspace: WorkspaceOpt = None,
    temporal_address: Annotated[
        str | None,
        typer.Option("--temporal-address", metavar="HOST:PORT",
                     help="Use this Temporal server instead of the embedded one."),
    ] = None,
    exit_when_idle: Annotated[
        bool,
        typer.Option("--exit-when-idle",
                     help="Return once no item of this computer is running or about to run "
                     "(an item waiting for approval or for a person does not keep it up)."),
    ] = False,
    runner: Annotated[
        str | None,
        typer.Option("--runner", metavar="POOL",
                     help="Run as a runner of POOL (a headless computer signed in with a "
                     "runner's token): beside its work, ask Bees Cloud for the pool's offers "
                     "and take those this computer can run (docs/runners.md)."),
    ] = None,
    runner_every: Annotated[
        float | None,
        typer.Option("--runner-every", metavar="SECONDS", min=0.1,
                     help="With --runner: seconds between looks at the pool's offers "
                     "(default 15)."),
    ] = None,
    runner_slots: Annotated[
        int,
        typer.Option("--runner-slots", metavar="N", min=1, max=1000,
                     help="With --runner: the most items under way here at once; it claims "
                     "offers only while it has room (default 1)."),
    ] = 1,
) -> None:
    """Run this computer's engine and worker until Ctrl-C.

    Starts the embedded Temporal engine (or reuses the one this computer runs), starts
    items created while it was down, and runs their stages. Prints one line per event on
    stderr: UTC time, level, what happened.

    Example: bees run -w examples/weekly-report --exit-when-idle
    """
    import asyncio

    from bees_cli.cli.logs import RUN_LOG, engine_logs_in_one_line, run_lines

    bees = bees_here(run_lines())
    engine_logs_in_one_line(bees.computer.data_dir / RUN_LOG)
    code = asyncio.run(bees.run(workspace_path=workspace, address=temporal_address,
                                exit_when_idle=exit_when_idle, runner_pool=runner,
                                runner_every=runner_every, runner_slots=runner_slots))
    exit_hard(code)


@item_app.command("create")
@touches_engine
def item_create(
    process: Annotated[str, typer.Argument(help="The process the item goes through.",
                                           autocompletion=complete_processes)],
    title: Annotated[str | None, typer.Option(
        "--title", show_default=False,
        help="The item's title: one line of plain text, at most 200 characters "
             "(default: the process's title, else its name).")] = None,
    agent: Annotated[list[str] | None, typer.Option(
        "--agent", metavar="AGENT", autocompletion=complete_agents,
        help="An agent for the item's work stages (repeatable, in order).")] = None,
    folder: Annotated[list[str] | None, typer.Option(
        "--folder", metavar="FOLDER", autocompletion=complete_folders,
        help="A folder the item reads (repeatable).")] = None,
    wait: Annotated[bool, typer.Option(
        "--wait", help="Wait until the item is done (exit 0), failed (exit 1) or waiting "
        "for a person (exit 3, as item watch --until-waiting); while bees run is down it "
        "waits for it to start.")] = False,
    timeout: Annotated[float | None, typer.Option(
        "--timeout", metavar="SECONDS", min=0, help="With --wait: give up after SECONDS "
        "(exit 1). Default: wait as long as it takes.")] = None,
    on: Annotated[str | None, typer.Option(
        "--on", metavar="POOL", help="Offer it to a pool of runners from the start: made "
        "and claimed here, released at once with its checkpoint (nothing runs here), offered "
        "naming the secrets its work needs (docs/runners.md). Needs Bees Cloud, not bees "
        "run.")] = None,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a work item and start its run; print its id on stdout.

    With --on POOL the item is offered to the pool instead of started here ("started"
    false, "offer" in --json).

    With --json, stdout is {"version", "item_id", "process", "title", "run_folder",
    "started"} instead; with --wait --json, printed once the wait ended, with "final":
    the item's row then.

    With --wait, follows the item until it is done or stops for a person; --timeout SECONDS
    bounds the wait (exit 1: timed out, the error names the item and, with --json, carries
    its "item_status" and "stage"; without --wait it is a usage error, exit 2). With
    --json, every answer has "item_id" at the top, an error too (null: no item was made).

    Example: bees item create weekly-report --title "Week 2" -w examples/weekly-report
    """
    import asyncio

    from bees_cli.cli import json_models as out

    answer = error_answer(out.ItemCreateErrorOut, item_id=None)
    if on is not None and wait:
        raise UserError("--wait follows a run on this computer; an item made --on a pool "
                        "runs on a runner", hint="bees offers shows who claimed it")
    if timeout is not None and not wait:
        raise UserError("--timeout needs --wait",
                        hint=f"bees item create {process} --wait --timeout {timeout:g}")
    bees = bees_here()

    def made(item_id: str) -> None:  # an error from here on names the item
        answer["item_id"] = item_id

    async def create_then_wait() -> int:
        created, offer = await _created(bees, workspace, process, on, title=title,
                                        agents=agent, folders=folder, made=made)
        done = out.ItemCreateOut(item_id=created.id, process=created.process,
                                 title=created.title, run_folder=str(created.run_folder),
                                 started=created.started, offer=offer)
        if not as_json:
            typer.echo(created.id)
        say(f"created {created.id} ({created.process}); run folder {created.run_folder}")
        code = await bees.wait_for_item(created.id, timeout=timeout) if wait else 0
        if as_json and wait:
            row = await bees.async_record.item(created.id)
            final = {key: value for key, value in row.to_json().items()
                     if key not in out.DISPLAY_KEYS}
            done = done.model_copy(update={"final": out.ItemView.model_validate(final)})
        if as_json:
            out.emit(done)
        return code

    exit_hard(asyncio.run(create_then_wait()))


async def _created(bees: Bees, workspace: Path | None, process: str, pool: str | None, *,
                   title: str | None, agents: list[str] | None, folders: list[str] | None,
                   made: Callable[[str], None]) -> tuple[CreatedItem, Any]:
    """Make the item of ``bees item create``: started here, or with ``--on POOL`` offered to
    the pool from the start (said, and returned as its ``--json`` part)."""
    from bees_cli.cli import json_models as out

    if pool is None:
        return await bees.create_item(workspace, process, title=title, agents=agents,
                                      folders=folders, made=made), None
    created, _, offered = await bees.create_offered(workspace, process, pool, title=title,
                                                    agents=agents, folders=folders, made=made)
    say(f"{created.id}: offered to pool {offered.pool} (secrets by name: "
        f"{', '.join(offered.secrets) or 'none'})")
    return created, out.OfferOut.model_validate(offered.model_dump(mode="json"))


@item_app.command("show", short_help="Show an item: status, run folder, logs, its story.")
def item_show(
    item: ItemArg,
    as_json: JsonOpt = False,
) -> None:
    """Show an item: its status, run folder, logs and the history of its stages and picks.

    Example: bees item show 01JH3
    """
    from bees_cli.cli.quick import item_show as show

    show(item, as_json=as_json)


def echo_item(found: ItemDetails) -> None:
    """Print ``bees item show``'s text of an item of this computer on stdout
    (:func:`bees_cli.cli.quick.echo_item`)."""
    from bees_cli.cli.quick import echo_item as echo

    echo(found)


@item_app.command("watch", short_help="Follow an item live until it is done or fails.")
def item_watch(
    item: ItemArg,
    until_waiting: Annotated[bool, typer.Option(
        "--until-waiting", help="Also stop when the item waits for a person (an approval, "
        "the review limit): exit 3.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Follow an item live: print each new fact as it happens, then end with its outcome.

    Facts are those of bees item show: each stage started and finished, each pick and its
    reason, a model stage's turns, approvals waiting and answered, a handover. The facts
    already recorded come first. An item another computer runs is followed in the shared
    record (its stage and status). Exit 0 when the item is done, 1 when it failed (or was
    cancelled or lost), 3 when it waits for a person and --until-waiting was given;
    without it, the watch goes on while a person answers from another terminal. With
    --json, each line of stdout is one JSON object, the last one of kind "end".

    Example: bees item watch 01JH3 --until-waiting
    """
    import asyncio

    from bees_cli.cli import json_models as out
    from bees_cli.cli.pipes import write_stdout
    from bees_cli.text import printable

    async def watch() -> int:
        code = 1
        async for seen in bees_here().watch_item(item, until_waiting=until_waiting):
            write_stdout(out.watch_line(seen) if as_json
                         else printable(_watch_text(seen)) + "\n")
            sys.stdout.flush()
            if seen.kind == "end":
                code = seen.exit_code
        return code

    raise typer.Exit(asyncio.run(watch()))


def _watch_text(seen: Any) -> str:
    """One line of ``bees item watch`` for people (see :mod:`bees_cli.usecases.watch`)."""
    if seen.kind == "fact":
        return f"{display_utc(parse_utc(seen.fact.at))}  {seen.text}"
    if seen.kind == "status":
        return f"{'now':>20}  {seen.text}"
    if seen.kind == "model":
        from bees_cli.handover.problems import plural

        used = seen.usage
        return (f"{'model':>20}  {used.stage}: {used.model}, {plural(used.turns, 'turn')}, "
                f"{used.tokens_in} tokens in, {used.tokens_out} out")
    return f"{seen.outcome:>20}  {seen.text} (exit {seen.exit_code})"


AllOpt = Annotated[bool, typer.Option(
    "--all", help="Every item; default: the 50 most relevant (not ended first, then the "
    "latest changed).")]
WideOpt = Annotated[bool, typer.Option(
    "--wide", help="Every cell whole (no cut to the terminal's width) and times in UTC.")]


def status(
    as_json: JsonOpt = False,
    mine: Annotated[bool, typer.Option(
        "--mine", help="Only this computer's items, not the team's.")] = False,
    show_all: AllOpt = False,
    wide: WideOpt = False,
    watch: Annotated[bool, typer.Option(
        "--watch", help="Redraw the table in place every 2 seconds until Ctrl-C.")] = False,
) -> None:
    """List work items with stage, status, agent and since when: this computer's, then the
    team's from the shared record ("Draft, running on maya-laptop").

    Lists the 50 most relevant items (with --all, every one); the table fits the
    terminal's width, cutting long cells with …, unless --wide.

    Example: bees status --mine --json
    """
    from bees_cli.cli.quick import status as show

    if watch:
        if as_json:
            raise UserError("--watch redraws the table; it has no --json",
                            hint="poll `bees status --json` instead")
        _watch(mine=mine, show_all=show_all, wide=wide)
        return
    show(as_json=as_json, mine=mine, show_all=show_all, wide=wide)


def _watch(*, mine: bool, show_all: bool, wide: bool) -> None:
    """``bees status --watch``: the table (and its footer and warnings) redrawn every 2 s."""
    import asyncio
    import shutil
    import time

    from bees_cli.cli.status_view import more_line, status_lines, watch
    from bees_cli.cli.table import colour_on, table_width
    from bees_cli.utc import display_utc, utc_now

    bees = bees_here()
    terminal = sys.stdout.isatty()

    def frame(height: int) -> list[str]:
        now = utc_now()
        view = asyncio.run(bees.status(mine=mine, limit=None if show_all else max(1, height - 7)))
        head = [f"bees status, every 2 s: {display_utc(now)} (Ctrl-C to stop)", ""]
        table = status_lines(view.rows, view.held, now=now, width=table_width(), wide=wide,
                             colour=colour_on()) if view.rows else [
            "no work items on this computer yet (bees item create PROCESS)"]
        tail = [line for line in (more_line(view.more), view.warning) if line]
        return head + table + tail

    height = shutil.get_terminal_size((80, 24)).lines if terminal else 1_000_000
    watch(frame, sys.stdout, every=2.0, wait=time.sleep, height=height, terminal=terminal)


def register(app: typer.Typer) -> None:
    """Attach ``run``, ``status`` and the ``item`` group to the root app."""
    app.command("run")(run)
    app.command("status")(status)
    app.add_typer(item_app, name="item")
