"""Shell completion values: workspace names, item ids and add-on actions, read fast and quietly.

Each ``complete_*`` function is a typer ``autocompletion`` callback (``ctx``, the text typed
so far), offered as ``(value, help)`` pairs; typer keeps those that start with the typed
text. They read only what they need: the file names of a kind folder (the file name is the
object's name, DESIGN.md "The workspace"), the add-on files for ``bees action``, and the
``items``, ``team_items`` and ``approvals`` tables of ``record.db`` opened read-only.
Nothing here imports the engine, the cloud client or the workspace's models, and nothing
is created on disk.

Why quiet: a completion runs inside the user's shell on every Tab; a missing workspace, a
missing or locked record, or any other error must offer nothing rather than print a
traceback into the command line (:func:`quiet`).
"""

from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from typer import _click as click  # typer vendors click: a context's parent is of this class

Offer = list[tuple[str, str]]
"""Completion values, each with a short help text (shown by zsh and fish)."""

RECORD_TIMEOUT = 0.5
"""Seconds a completion waits for a record that another process is writing, then gives up."""


def quiet(fn: Callable[..., Offer]) -> Callable[..., Offer]:
    """Wrap completion callback ``fn``: any error it raises gives no values.

    Why: an absent workspace or record, or a file another process is writing, must never
    put a traceback into the user's shell (issue 15, point 1).
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Offer:
        try:
            return fn(*args, **kwargs)
        except Exception:  # noqa: BLE001 - a completion offers nothing rather than fail
            return []

    return wrapper


def workspace_root(ctx: click.Context | None) -> Path | None:
    """Return the workspace folder a completion is for, or None when there is none.

    The command's ``-w/--workspace`` when typed before the word being completed, else
    ``BEES_WORKSPACE`` (set in a stage's environment, where ``bees action`` runs), else
    the current folder or its nearest parent holding ``bees.yaml`` (as
    :func:`bees_cli.workspace.loader.find_workspace`, without loading anything).
    """
    given = None
    while ctx is not None and given is None:
        given = ctx.params.get("workspace")
        ctx = ctx.parent
    if given is None and os.environ.get("BEES_WORKSPACE"):
        given = Path(os.environ["BEES_WORKSPACE"])
    if given is not None:
        root = Path(given).expanduser().resolve()
        return root if (root / "bees.yaml").is_file() else None
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "bees.yaml").is_file():
            return folder
    return None


def kind_names(root: Path | None, kind: str) -> list[str]:
    """Return the names of the objects of ``kind`` (``processes``, ``agents``…) in the
    workspace at ``root``, sorted: the stems of ``KIND/*.yaml`` (hidden files left out)."""
    if root is None or not (root / kind).is_dir():
        return []
    return sorted(path.stem for path in (root / kind).glob("*.yaml")
                  if not path.name.startswith(".") and path.is_file())


@quiet
def complete_processes(ctx: typer.Context, incomplete: str) -> Offer:
    """Offer the workspace's process names (``bees item create PROCESS``)."""
    return [(name, "process") for name in kind_names(workspace_root(ctx), "processes")]


@quiet
def complete_agents(ctx: typer.Context, incomplete: str) -> Offer:
    """Offer the workspace's agent names (``--agent``)."""
    return [(name, "agent") for name in kind_names(workspace_root(ctx), "agents")]


@quiet
def complete_folders(ctx: typer.Context, incomplete: str) -> Offer:
    """Offer the workspace's folder names (``--folder``, ``bees link FOLDER``)."""
    return [(name, "folder") for name in kind_names(workspace_root(ctx), "folders")]


@quiet
def complete_linked_folders(ctx: typer.Context, incomplete: str) -> Offer:
    """Offer the folders linked on this computer (``bees unlink FOLDER``): the keys of
    ``state/links.json``, read without creating the state folder."""
    import json

    path = _state_folder() / "links.json"
    if not path.is_file():
        return []
    links = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(links, dict):
        return []
    return [(str(name), f"linked to {target}") for name, target in sorted(links.items())]


@quiet
def complete_actions(ctx: typer.Context, incomplete: str) -> Offer:
    """Offer the workspace's add-on actions as ``ADDON.ACTION`` (``bees action``), read with
    the workspace's own safe YAML reader; a file that does not read offers nothing."""
    from bees_cli.workspace.yamlio import Document, read_document

    root = workspace_root(ctx)
    offered: Offer = []
    for addon in kind_names(root, "addons"):
        assert root is not None
        document = read_document(root / "addons" / f"{addon}.yaml", f"addons/{addon}.yaml")
        if not isinstance(document, Document):
            continue
        actions = document.data.get("actions")
        if not isinstance(actions, dict):
            continue
        for action, spec in sorted(actions.items()):
            kind = spec.get("kind") if isinstance(spec, dict) else None
            offered.append((f"{addon}.{action}", f"{kind} action" if kind else "action"))
    return offered


@quiet
def complete_items(ctx: typer.Context, incomplete: str) -> Offer:
    """Offer item ids: this computer's record first, then the team's rows of the shared
    record not held here, each with its title and status. A missing record offers none."""
    local = _read_record("SELECT id, title, status FROM items ORDER BY id")
    team = _read_record(
        "SELECT item_id, json_extract(fields, '$.title'), json_extract(fields, '$.status')"
        " FROM team_items ORDER BY item_id")
    offered: Offer = []
    seen: set[str] = set()
    for item_id, title, status in [*local, *team]:
        if item_id in seen:
            continue
        seen.add(item_id)
        offered.append((str(item_id), " - ".join(str(p) for p in (title, status) if p)))
    return offered


@quiet
def complete_requests(ctx: typer.Context, incomplete: str) -> Offer:
    """Offer the ids of the requests waiting on the item typed before (``bees approve ITEM
    --action ID``), each with its stage and what it holds; none until the item's id (or a
    prefix naming one item) is typed."""
    item = ctx.params.get("item")
    if not isinstance(item, str):
        # an option still waiting for its value (``--action`` itself) stops click's parse
        # before the positional arguments: the item typed is then left in ``ctx.args``
        typed = [word for word in ctx.args if not word.startswith("-")]
        item = typed[0] if typed else ""
    if not item.strip().isalnum():
        return []
    named = _read_record("SELECT id FROM items WHERE upper(id) LIKE ?",
                         (item.strip().upper() + "%",))
    if len(named) != 1:
        return []
    rows = _read_record(
        "SELECT id, stage, json_extract(data, '$.action'), json_extract(data, '$.kind')"
        " FROM approvals WHERE status = 'waiting' AND item_id = ? ORDER BY id", named[0])
    return [(str(request), f"{stage}: {action or kind}") for request, stage, action, kind
            in rows]


def _read_record(query: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of ``query`` on this computer's ``record.db``, opened read-only; none when the
    record does not exist (it is never created here)."""
    path = _data_folder() / "record.db"
    if not path.is_file():
        return []
    db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=RECORD_TIMEOUT)
    try:
        return db.execute(query, args).fetchall()
    finally:
        db.close()


def _home() -> Path | None:
    from bees_cli.machine.paths import bees_home

    return bees_home()


def _state_folder() -> Path:
    """The state folder as :func:`bees_cli.machine.paths.state_dir` names it, not created."""
    home = _home()
    if home is not None:
        return home / "state"
    import platformdirs

    from bees_cli.machine.paths import APP_NAME

    return Path(platformdirs.user_config_dir(APP_NAME))


def _data_folder() -> Path:
    """The data folder as :func:`bees_cli.machine.paths.data_dir` names it, not created."""
    home = _home()
    if home is not None:
        return home / "data"
    import platformdirs

    from bees_cli.machine.paths import APP_NAME

    return Path(platformdirs.user_data_dir(APP_NAME))
