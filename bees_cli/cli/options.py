"""Shared ``Annotated`` option and argument aliases: every command spells and checks them alike."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from bees_cli.cli.complete import complete_items
from bees_cli.cli.errors import ParseRefusal
from bees_cli.cli.quick import WORKSPACE_ENV
from bees_cli.errors import UserError

WorkspaceOpt = Annotated[
    Path | None,
    typer.Option(
        "--workspace",
        "-w",
        envvar=WORKSPACE_ENV,
        help="Workspace folder (default: the current folder or the nearest parent with bees.yaml).",
        show_default=False,
    ),
]

MAX_THREADS = 256
"""Most generating threads ``--threads`` takes (``bees model serve``, ``bees demo``).

Why: llama.cpp holds the count in a C ``int32``; a larger number crashed the server's start
with an ``OverflowError``. No computer Bees runs on has more cores than this."""

MAX_CONTEXT = 1_048_576
"""Most tokens of context ``bees model serve --context`` takes (1 Mi tokens).

Why: llama.cpp holds it in a C ``int32`` (a larger number crashed with an ``OverflowError``)
and sizes its KV cache for it up front; no open model is trained on a longer context."""

JsonOpt = Annotated[
    bool,
    typer.Option("--json", help="Print machine-readable JSON on stdout."),
]


def _item_id(*, prefix: bool) -> Callable[[str], Any]:
    """Return the parser of an item id argument (:func:`bees_cli.ids.check_item_id`).

    The parser returns a prefix as typed (the local record matches it in any case, and
    messages quote it as typed) and a whole id in upper case (it names a run folder and a
    Bees Cloud row as is). A refused id becomes a :class:`~bees_cli.cli.errors.ParseRefusal`,
    which the error boundary raises before the command runs: the message is rendered like
    any error (``error:``/``hint:``, or JSON with ``--json``), exit 2, and nothing touched
    the disk.
    """

    def parse(text: str) -> str | ParseRefusal:
        from bees_cli.ids import check_item_id

        try:
            checked = check_item_id(text, prefix=prefix)
        except UserError as error:
            return ParseRefusal(error)
        return text.strip() if prefix else checked

    return parse


ItemArg = Annotated[
    str,
    typer.Argument(metavar="ITEM", parser=_item_id(prefix=True), show_default=False,
                   autocompletion=complete_items,
                   help="The item id (26 letters and digits; its first 6 or more are enough)."),
]
"""An item id, or a unique prefix of 6 or more characters, checked before the command runs."""

WholeItemArg = Annotated[
    str,
    typer.Argument(metavar="ITEM", parser=_item_id(prefix=False), show_default=False,
                   autocompletion=complete_items,
                   help="The item's whole id (26 letters and digits)."),
]
"""A whole item id (no prefix: the item may not be on this computer yet), checked before the
command runs."""
