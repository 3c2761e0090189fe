"""``bees delegate``: an agent's program hands a piece of its stage to another agent."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from bees_cli.cli.context import bees_here
from bees_cli.cli.errors import touches_engine
from bees_cli.cli.options import JsonOpt
from bees_cli.cli.output import exit_hard


@touches_engine
def delegate(
    agent: Annotated[str, typer.Argument(metavar="AGENT", help="The agent to hand it to.")],
    task: Annotated[str, typer.Option("--task", metavar="TEXT",
                                      help="What the agent should do.")],
    input: Annotated[str | None, typer.Option(  # noqa: A002 - the option is --input
        "--input", metavar="JSON|@FILE", help="Data the agent needs: JSON, or @file with JSON.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Hand a piece of this stage to another agent and wait for its answer (inside a stage).

    Prints the piece's final text and the files in its folder (--json: the whole result).
    A failed piece exits 1 with its reason; a refusal (a cycle of agents, the workspace's
    max_piece_depth, the stage not running) exits 3 with the reason on stderr.

    Example: bees delegate researcher --task "find last week's figures" --input '{"week": 2}'
    """
    import asyncio
    import os

    from bees_cli.ids import check_item_id
    from bees_cli.usecases.actions import parse_input

    if os.environ.get("BEES_ITEM_ID"):  # checked before this computer's files are opened
        check_item_id(os.environ["BEES_ITEM_ID"], prefix=False)
    data = parse_input(input)
    done = asyncio.run(bees_here().delegate(agent, task, data, env=dict(os.environ)))
    if as_json:
        from bees_cli.cli import json_models as out

        out.emit(out.DelegateOut.model_validate(done.to_json()))
    else:
        sys.stdout.write(done.render())
    exit_hard(0)


def register(app: typer.Typer) -> None:
    """Attach ``delegate``."""
    app.command("delegate")(delegate)
