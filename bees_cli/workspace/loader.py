"""Find and load a workspace folder into :class:`Workspace`, collecting every problem in one pass.

Files read: ``bees.yaml`` and ``KIND/NAME.yaml`` for each kind of
:data:`~bees_cli.workspace.models.KINDS`. Stray files are judged so:

- ``bees.yml`` in the root, or a ``.yml`` (or ``.YAML``…) file in a kind folder, is an
  **error**: it was surely meant as a workspace file and would otherwise be ignored.
- any other non-hidden file or folder inside a kind folder, and a root folder whose name
  is close to a kind (``agent/``), is a **warning**: the workspace still loads.
- other files in the root (scripts, notes, README) and hidden files are ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bees_cli.errors import UserError, WorkspaceInvalid
from bees_cli.workspace.checks import RESERVED_NAMES, Loaded, Source, cross_check
from bees_cli.workspace.models import (
    KINDS,
    NAME_RE,
    Addon,
    Agent,
    Folder,
    Process,
    Schedule,
    WorkspaceConfig,
)
from bees_cli.workspace.problems import Problem
from bees_cli.workspace.validation import validate
from bees_cli.workspace.yamlio import read_document


@dataclass(frozen=True)
class Workspace:
    """A loaded, cross-checked workspace; each mapping is name → model, sorted by name.

    ``warnings`` holds problems of severity ``"warning"`` (stray files) that did not stop
    the load.
    """

    root: Path
    config: WorkspaceConfig
    processes: dict[str, Process]
    agents: dict[str, Agent]
    schedules: dict[str, Schedule]
    folders: dict[str, Folder]
    addons: dict[str, Addon]
    warnings: tuple[Problem, ...] = field(default=())


def find_workspace(start: Path | None = None) -> Path:
    """Return the workspace folder: ``start``, or else the nearest parent of cwd with ``bees.yaml``.

    Raises:
        UserError: ``start`` does not exist, is not a folder, has no ``bees.yaml`` or has
            a folder by that name; or no parent of the cwd has ``bees.yaml``.
    """
    if start is not None:
        root = start.expanduser().resolve()
        if not root.exists():
            raise UserError(
                f"{start}: no such folder",
                hint="check the path, or create a workspace with `bees init DIR`",
            )
        if not root.is_dir():
            raise UserError(
                f"{start}: not a folder",
                hint="give the workspace folder, the one holding bees.yaml",
            )
        if (root / "bees.yaml").is_dir():
            raise UserError(
                f"{start / 'bees.yaml'} is a folder, not a file",
                hint="bees.yaml is a file holding the workspace's name; "
                "`bees init DIR` writes one",
            )
        if not (root / "bees.yaml").is_file():
            hint = "pass the workspace folder with -w, or create one with `bees init DIR`"
            if (root / "bees.yml").is_file():
                hint = "rename bees.yml to bees.yaml"
            raise UserError(f"{start}: no bees.yaml here", hint=hint)
        return root
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "bees.yaml").is_file():
            return folder
    raise UserError(
        "no workspace: neither this folder nor a parent holds bees.yaml",
        hint="pass the workspace folder with -w, or create one with `bees init DIR`",
    )


def workspace_argument(directory: Path | None, option: Path | None) -> Path | None:
    """Return the workspace a command was given, as the ``DIR`` argument or with ``-w``.

    Returns:
        ``directory`` or ``option`` (None when neither: the cwd's workspace is meant).

    Raises:
        UserError: both are given and name different folders.
    """
    if directory is not None and option is not None:
        if directory.expanduser().resolve() != option.expanduser().resolve():
            raise UserError(
                "give the workspace either as DIR or with -w, not both",
                hint=f"got {directory} and -w {option}",
            )
    return directory if directory is not None else option


def load_workspace(start: Path | None = None) -> Workspace:
    """Load the workspace at ``start`` (see :func:`find_workspace`), checking every file.

    Returns:
        The workspace, with any warnings in ``Workspace.warnings``.

    Raises:
        UserError: no workspace found.
        WorkspaceInvalid: one or more errors; carries every problem found (errors and
            warnings), sorted by file, line and column.
    """
    root = find_workspace(start)
    problems = check_folder(root)
    errors = [p for p in problems.problems if p.severity == "error"]
    if errors or problems.loaded.config is None:
        raise _invalid(problems.problems, len(errors))
    objects = problems.loaded.objects
    return Workspace(
        root=root,
        config=problems.loaded.config,
        processes=objects["processes"],
        agents=objects["agents"],
        schedules=objects["schedules"],
        folders=objects["folders"],
        addons=objects["addons"],
        warnings=tuple(problems.problems),
    )


def _invalid(problems: list[Problem], error_count: int) -> WorkspaceInvalid:
    """The exception for ``problems``, its message counting errors and warnings apart."""
    invalid = WorkspaceInvalid(
        problems, hint="fix each problem listed, then run `bees validate`"
    )
    warning_count = len(problems) - error_count
    message = f"the workspace has {error_count} problem{'' if error_count == 1 else 's'}"
    if warning_count:
        message += f" and {warning_count} warning{'' if warning_count == 1 else 's'}"
    invalid.message = message
    invalid.args = (message,)
    return invalid


@dataclass
class Checked:
    """Result of :func:`check_folder`: what loaded and every problem (sorted)."""

    loaded: Loaded
    problems: list[Problem]


def check_folder(root: Path) -> Checked:
    """Read and check every workspace file under ``root`` without raising.

    Args:
        root: a folder holding ``bees.yaml``.

    Returns:
        The objects that validated on their own and every problem, sorted.
    """
    problems: list[Problem] = []
    config: WorkspaceConfig | None = None
    config_source: Source | None = None
    document = read_document(root / "bees.yaml", "bees.yaml")
    if isinstance(document, Problem):
        problems.append(document)
    else:
        config, found = validate(WorkspaceConfig, document, "bees.yaml")
        problems += found
        config_source = Source("bees.yaml", document)
    problems += _root_strays(root)

    objects: dict[str, dict[str, Any]] = {}
    sources: dict[str, dict[str, Source]] = {}
    broken: dict[str, set[str]] = {}
    unvalidated: dict[str, dict[str, Source]] = {}
    for kind, model in KINDS.items():
        objects[kind], sources[kind], broken[kind], unvalidated[kind] = {}, {}, set(), {}
        folder = root / kind
        if not folder.is_dir():
            continue
        seen: dict[str, str] = {}
        for path in sorted(folder.iterdir()):
            if path.name.startswith("."):
                continue
            rel = f"{kind}/{path.name}"
            stray = _stray(path, rel)
            if stray is not None:
                problems.append(stray)
                continue
            name = path.stem
            name_problem = _name_problem(name, rel, seen)
            document = read_document(path, rel)
            if isinstance(document, Problem):
                problems.append(document)
                broken[kind].add(name)
                continue
            instance, found = validate(model, document, rel)
            problems += found
            if name_problem is not None:
                problems.append(name_problem)
                broken[kind].add(name)
                continue
            seen[name.casefold()] = name
            if instance is None:
                broken[kind].add(name)
                unvalidated[kind][name] = Source(rel, document)
                continue
            objects[kind][name] = instance
            sources[kind][name] = Source(rel, document)
    loaded = Loaded(config, config_source, objects, sources, broken, root, unvalidated)
    problems += cross_check(loaded)
    return Checked(loaded, sorted(set(problems)))


def _name_problem(name: str, rel: str, seen: dict[str, str]) -> Problem | None:
    if not NAME_RE.match(name):
        return Problem(
            rel,
            1,
            1,
            "",
            f"'{name}' is not a valid name for a file: use letters, digits, "
            "'-' and '_', start with a letter or digit, at most 64 characters",
        )
    if name.casefold() in RESERVED_NAMES:
        return Problem(
            rel, 1, 1, "", f"'{name}' is a reserved file name on Windows; choose another name"
        )
    if name.casefold() in seen:
        return Problem(
            rel,
            1,
            1,
            "",
            f"'{name}' differs only in case from '{seen[name.casefold()]}'; names must be unique",
        )
    return None


def _stray(path: Path, rel: str) -> Problem | None:
    """A problem for anything in a kind folder that is not ``NAME.yaml``; None if it is one."""
    if path.is_dir():
        return Problem(
            rel, 1, 1, "", "folder not read: a kind folder holds only NAME.yaml files", "warning"
        )
    if path.suffix == ".yaml":
        return None
    if path.suffix.lower() in (".yml", ".yaml"):
        return Problem(
            rel, 1, 1, "", f"Bees reads only '.yaml' files; rename it to '{path.stem}.yaml'"
        )
    return Problem(
        rel, 1, 1, "", "file not read: a kind folder holds only NAME.yaml files", "warning"
    )


_MISSPELT_KINDS = {
    **{kind: kind for kind in KINDS},
    **{kind.removesuffix("es" if kind == "processes" else "s"): kind for kind in KINDS},
}
"""Root folder names (case folded) that surely meant a kind folder: ``Agents``, ``agent``."""


def _root_strays(root: Path) -> list[Problem]:
    problems: list[Problem] = []
    if (root / "bees.yml").exists():
        problems.append(
            Problem(
                "bees.yml",
                1,
                1,
                "",
                "Bees reads only bees.yaml; merge this file into it and delete it",
            )
        )
    for path in sorted(root.iterdir()):
        if not path.is_dir() or path.name in KINDS or path.name.startswith("."):
            continue
        meant = _MISSPELT_KINDS.get(path.name.casefold())
        if meant:
            problems.append(
                Problem(
                    f"{path.name}/",
                    1,
                    1,
                    "",
                    f"folder not read — did you mean '{meant}'?",
                    "warning",
                )
            )
    return problems
