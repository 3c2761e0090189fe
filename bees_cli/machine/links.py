"""Folder links: which directory each declared folder resolves to on this computer.

A folder is *linked* here when it resolves to an existing directory: through
``bees link FOLDER PATH`` (kept in ``state/links.json``), or else through the
folder's default ``path`` in the workspace, with ``~`` and ``${ENV}`` expanded.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from bees_cli.errors import NotFound, StateFileInvalid, UserError
from bees_cli.files import read_json_object, write_json_atomic
from bees_cli.machine.paths import state_dir
from bees_cli.suggest import did_you_mean

if TYPE_CHECKING:
    from bees_cli.workspace.models import Folder

_UNSET_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


FolderHow = Literal["linked", "default_path", "not_linked", "link_not_dir", "default_not_dir",
                    "env_unset"]
"""How a folder resolves here, as a code: linked with ``bees link``, its default path, or why
not (no link and no default path; the link or the default path is not a directory; the
default path names an environment variable that is not set)."""


@dataclass(frozen=True)
class FolderLink:
    """How a folder resolves here: ``path`` (absolute, or None), ``linked`` and the ``reason``
    (``"linked with bees link"``, ``"default path"``, or why it is not linked); ``how`` is
    the reason's code and ``env`` the unset variable of ``env_unset`` (``path`` then None,
    ``default`` the declared default path)."""

    name: str
    path: Path | None
    linked: bool
    reason: str
    how: FolderHow = "linked"
    env: str | None = None
    default: str | None = None


def _links_path() -> Path:
    return state_dir() / "links.json"


def read_links() -> dict[str, str]:
    """Return the folder links set on this computer: folder name → absolute path."""
    path = _links_path()
    hint = f"repair it, or move it aside and link again (mv {path} {path}.bad)"
    links = read_json_object(path, hint=hint)
    for name, target in links.items():
        if not isinstance(target, str) or not target:
            raise StateFileInvalid(f"{path}: the link of {name!r} is not a path", hint=hint)
    return links


def expand_path(text: str, base: Path | None = None) -> tuple[Path | None, str | None]:
    """Expand ``~`` and ``${ENV}`` in ``text``; a relative result starts at ``base`` (or the cwd).

    Returns:
        ``(absolute path, None)``, or ``(None, reason)`` when an environment variable is unset.
    """
    for match in _UNSET_VAR.finditer(text):
        if match.group(1) not in os.environ:
            return None, f"environment variable {match.group(1)} is not set"
    expanded = Path(os.path.expanduser(os.path.expandvars(text)))
    if not expanded.is_absolute() and base is not None:
        expanded = base / expanded
    return expanded.resolve(), None


def resolve_folder(name: str, folder: Folder | None, root: Path | None = None) -> FolderLink:
    """Resolve folder ``name`` (declared as ``folder``, or None if undeclared) on this computer.

    A relative default path is taken from the workspace folder ``root``.
    """
    links = read_links()
    if name in links:
        path = Path(links[name])
        if path.is_dir():
            return FolderLink(name, path, True, "linked with bees link", "linked")
        return FolderLink(
            name, path, False, f"linked to {path}, which is not an existing directory",
            "link_not_dir")
    if folder is not None and folder.path:
        path_or_none, problem = expand_path(folder.path, root)
        if path_or_none is None:
            unset = next(m.group(1) for m in _UNSET_VAR.finditer(folder.path)
                         if m.group(1) not in os.environ)
            return FolderLink(name, None, False, f"default path {folder.path}: {problem}",
                              "env_unset", env=unset, default=folder.path)
        if path_or_none.is_dir():
            return FolderLink(name, path_or_none, True, "default path", "default_path")
        return FolderLink(
            name, path_or_none, False, f"default path {path_or_none} is not an existing directory",
            "default_not_dir")
    return FolderLink(name, None, False, f"not linked on this computer (bees link {name} PATH)",
                      "not_linked")


def link_folder(name: str, path: Path, declared: list[str]) -> Path:
    """Link declared folder ``name`` to directory ``path`` here; return the absolute path.

    Raises:
        NotFound: ``name`` is not a folder declared in the workspace.
        UserError: ``path`` is not an existing directory.
    """
    if name not in declared:
        raise NotFound(
            f"no folder named '{name}' in the workspace{did_you_mean(name, declared)}",
            hint="declared folders are listed by `bees links`",
        )
    target = path.expanduser().resolve()
    if not target.is_dir():
        raise UserError(
            f"{path}: not an existing directory", hint="create it first, or pick another"
        )
    links = read_links()
    links[name] = str(target)
    write_json_atomic(_links_path(), links)
    return target


def unlink_folder(name: str) -> None:
    """Remove this computer's link of folder ``name``.

    Raises:
        NotFound: the folder has no link here.
    """
    links = read_links()
    if name not in links:
        raise NotFound(
            f"folder '{name}' is not linked with bees link on this computer"
            + did_you_mean(name, links)
        )
    del links[name]
    write_json_atomic(_links_path(), links)


def run_folder_root(workspace: object, runs_dir: Path) -> Path:
    """Return the folder that holds run folders: the directory of the workspace's
    ``run_folder`` folder when it names one, else ``runs_dir`` (created), this computer's
    default runs folder.

    Raises:
        UserError: the named folder is not linked on this computer.
    """
    config = workspace.config  # type: ignore[attr-defined]
    if not config.run_folder:
        runs_dir.mkdir(parents=True, exist_ok=True)
        return runs_dir
    name = config.run_folder
    link = resolve_folder(name, workspace.folders.get(name), workspace.root)  # type: ignore[attr-defined]
    if not link.linked or link.path is None:
        raise UserError(f"run folder {name}: {link.reason}", hint=f"bees link {name} PATH")
    return link.path
