"""Shared ``Annotated`` option aliases, so every command spells them the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

WorkspaceOpt = Annotated[
    Path | None,
    typer.Option(
        "--workspace",
        "-w",
        help="Workspace folder (default: the current folder or the nearest parent with bees.yaml).",
        show_default=False,
    ),
]

JsonOpt = Annotated[
    bool,
    typer.Option("--json", help="Print machine-readable JSON on stdout."),
]
