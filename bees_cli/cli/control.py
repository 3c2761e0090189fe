"""A person's commands to the local run: ``bees retry``, ``bees approvals``, ``bees approve``,
``bees deny``, ``bees item accept|cancel``, and the agents' ``bees action``."""

from __future__ import annotations

import sys
from typing import Annotated, Literal

import typer

from bees_cli.cli.complete import complete_actions, complete_requests
from bees_cli.cli.context import bees_here
from bees_cli.cli.errors import touches_engine
from bees_cli.cli.options import ItemArg, JsonOpt
from bees_cli.cli.output import exit_hard, say
from bees_cli.errors import UserError


@touches_engine
def retry(item: ItemArg, as_json: JsonOpt = False) -> None:
    """Start a failed stage again from the top, as a new attempt (or, for an item stopped at
    the review limit, one more round from the work stage). Needs 'bees run' up. A lost item
    (the engine's database was replaced) starts its stage again in a new run.

    Example: bees retry 01JH3
    """
    import asyncio

    from bees_cli.cli import json_models as out

    done = asyncio.run(bees_here().retry(item))
    if as_json:
        out.emit(out.PersonDoneOut(item_id=done.item, stage=done.stage, who=done.who,
                                   at=done.at))
    say(f"{done.item}: {done.stage} starts again (asked by {done.who})")
    exit_hard(0)


@touches_engine
def item_accept(item: ItemArg, as_json: JsonOpt = False) -> None:
    """Take the work of an item stopped at the review limit as it is, and move past the review.

    Example: bees item accept 01JH3
    """
    import asyncio

    from bees_cli.cli import json_models as out

    done = asyncio.run(bees_here().accept(item))
    if as_json:
        out.emit(out.PersonDoneOut(item_id=done.item, stage=done.stage, who=done.who,
                                   at=done.at))
    say(f"{done.item}: the work under review at {done.stage} is accepted (by {done.who})")
    exit_hard(0)


@touches_engine
def item_cancel(item: ItemArg, as_json: JsonOpt = False) -> None:
    """Cancel an item: stop its running stage, free its agent slots, mark it cancelled.

    Example: bees item cancel 01JH3
    """
    import asyncio

    from bees_cli.cli import json_models as out

    done = asyncio.run(bees_here().cancel(item))
    if as_json:
        out.emit(out.CancelOut(item_id=done.item, requested=done.requested,
                               cancelled=done.cancelled))
    if not done.requested:
        say(f"{done.item}: cancelled")
    elif done.cancelled:
        say(f"{done.item}: cancel requested; cancelled")
    else:
        say(f"{done.item}: cancel requested; still stopping (see bees item show {done.item})")
    exit_hard(0)


approvals_app = typer.Typer(  # its help is its callback's: the listing below
    name="approvals", invoke_without_command=True, subcommand_metavar="[COMMAND [ARGS]...]",
    no_args_is_help=False, context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
)


@approvals_app.callback(invoke_without_command=True)
def approvals(ctx: typer.Context, as_json: JsonOpt = False, wide: Annotated[bool, typer.Option(
        "--wide", help="Every cell whole (no cut to the terminal's width), times in UTC.")
        ] = False) -> None:
    """List what waits for a person's approval on this computer: the action and its input,
    recipients first (each field on its own line: bees approvals show ITEM).

    With --json, each request's "input" is the JSON object the agent gave.

    Example: bees approvals --json
    """
    import asyncio

    from bees_cli.cli import json_models as out
    from bees_cli.cli.status_view import approval_lines
    from bees_cli.cli.table import table_width
    from bees_cli.utc import utc_now

    if ctx.invoked_subcommand is not None:
        return
    rows = asyncio.run(bees_here().approvals())
    if as_json:
        out.emit(out.ApprovalsOut(approvals=[out.approval_out(r.to_json()) for r in rows]))
        return
    if not rows:
        say("nothing waits for approval on this computer")
        return
    lines = approval_lines(rows, now=utc_now(), width=table_width(), wide=wide)
    sys.stdout.write("".join(f"{line}\n" for line in lines))


@approvals_app.command("show", short_help="Show what waits on an item, each field whole.")
def approvals_show(
    item: ItemArg,
    action: Annotated[int | None, typer.Option(
        "--action", metavar="ID", autocompletion=complete_requests,
        help="Only this request (see bees approvals); default: every one of the item.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show what waits for approval on an item, whole: each field of the input on its own
    line, recipients first (to, cc, bcc…), nothing cut; then how to decide.

    Example: bees approvals show 01JH3 --action 1
    """
    import asyncio

    from bees_cli.cli import json_models as out
    from bees_cli.cli.status_view import request_lines

    rows = asyncio.run(bees_here().approvals_of(item, request_id=action))
    if as_json:
        out.emit(out.ApprovalsOut(approvals=[out.approval_out(r.to_json()) for r in rows]))
        return
    from bees_cli.text import printable

    # an agent's input or another computer's title may hold control characters: not raw
    sys.stdout.write("\n\n".join("\n".join(printable(line) for line in request_lines(row))
                                 for row in rows) + "\n")


def _decide(item: str, *, approve: bool, action: int | None, reason: str | None,
            answer: str | None = None, as_json: bool = False,
            input_text: str | None = None) -> None:
    import asyncio

    from bees_cli.cli import json_models as out

    done = asyncio.run(bees_here().decide(item, approve=approve, request_id=action,
                                          reason=reason, answer=answer,
                                          input_text=input_text))
    verb: Literal["approved", "denied"] = "approved" if approve else "denied"
    if as_json:
        out.emit(out.DecisionOut(item_id=done.item, decision=verb, who=done.who, at=done.at,
                                 decided=done.decided or [], queued=done.queued,
                                 input=done.input))
    if done.input is not None:
        say(f"{done.item}: runs with your corrected input, not the agent's")
    if done.queued:
        say(f"{done.item}: {verb} by {done.who}; bees run delivers it when it starts")
    else:
        ids = ", ".join(str(i) for i in done.decided or [])
        say(f"{done.item}: request {ids} {verb} by {done.who}")
    exit_hard(0)


ActionOpt = Annotated[int | None, typer.Option(
    "--action", metavar="ID", autocompletion=complete_requests,
    help="The request to decide (see bees approvals); default: all of the item.")]


@touches_engine
def approve(
    item: ItemArg,
    action: ActionOpt = None,
    ran: Annotated[bool, typer.Option(
        "--ran", help="An action that may already have run: it did; record it as run (the "
        "agent gets the journal's answer).")] = False,
    again: Annotated[bool, typer.Option(
        "--again", help="An action that may already have run: run it once more.")] = False,
    input: Annotated[str | None, typer.Option(  # noqa: A002 - the option is --input
        "--input", metavar="JSON|@FILE|@-",
        help="A held action's corrected input (JSON, @file, or @- for stdin): the action "
        "runs with it instead of the agent's, and the agent is told what changed.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Approve what waits on an item (a held action, or its stage's finish).

    Example: bees approve 01JH3 --action 1 --input @edited.json
    """
    if ran and again:
        raise UserError("--ran and --again exclude each other",
                        hint=f"bees approve {item} --ran (it ran) or --again (run it again)")
    answer = "ran" if ran else "again" if again else None
    _decide(item, approve=True, action=action, reason=None, answer=answer, as_json=as_json,
            input_text=input)


@touches_engine
def deny(
    item: ItemArg,
    reason: Annotated[str, typer.Option("--reason", help="Why: the agent is told.")],
    action: ActionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Deny what waits on an item: the agent's action is refused with the reason.

    Example: bees deny 01JH3 --reason "wrong recipients"
    """
    _decide(item, approve=False, action=action, reason=reason, as_json=as_json)


@touches_engine
def action(
    name: Annotated[str, typer.Argument(metavar="ADDON.ACTION", help="The add-on action.",
                                        autocompletion=complete_actions)],
    input: Annotated[str | None, typer.Option(  # noqa: A002 - the option is --input
        "--input", metavar="JSON|@FILE", help="The action's input: JSON, or @file with JSON.")
    ] = None,
) -> None:
    """Run an add-on action from inside a stage, once the item's run allows it.

    Prints the add-on's output and exits with its exit code; a refusal or denial exits 3
    with the reason on stderr. Gated actions (send, post, delete, pay) on a stage with
    approval: required wait for a person's 'bees approve'.

    Example: bees action mail.send --input @mail.json
    """

    # the stage's environment names the item and this computer's home (the worker set it)
    import asyncio
    import os

    from bees_cli.ids import check_item_id

    if os.environ.get("BEES_ITEM_ID"):  # checked before this computer's files are opened
        check_item_id(os.environ["BEES_ITEM_ID"], prefix=False)
    outcome = asyncio.run(bees_here().action(name, input, env=dict(os.environ)))
    sys.stdout.write(outcome.stdout)
    if outcome.edited is not None:  # the agent's program reads what the person changed
        say(f"{name}: {outcome.edited}")
    if outcome.from_journal:
        say(f"{name}: answered from the journal (it ran at {outcome.ran_at}); not run again")
    exit_hard(outcome.exit_code)


def register(app: typer.Typer) -> None:
    """Attach ``retry``, the ``approvals`` group (its listing and ``show``), ``approve``,
    ``deny``, ``action`` and ``item accept|cancel``."""
    from bees_cli.cli.engine import item_app

    app.command("retry")(retry)
    app.add_typer(approvals_app, name="approvals")
    app.command("approve")(approve)
    app.command("deny")(deny)
    app.command("action")(action)
    if "accept" not in {command.name for command in item_app.registered_commands}:
        # once, however many apps are built: a second copy would miss the error boundary
        item_app.command(
            "accept", short_help="Take the work of an item stopped at the review limit.")(
            item_accept)
        item_app.command("cancel", short_help="Cancel an item and stop its running stage.")(
            item_cancel)
