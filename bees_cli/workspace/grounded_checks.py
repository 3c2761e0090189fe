"""The checks of an add-on action's ``enum_from`` (issue 26, point 6): its form, and the
stages that use the action without reading the folder it names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bees_cli.workspace.problems import Problem, field_path

if TYPE_CHECKING:
    from bees_cli.workspace.checks import Loaded, Source

GROUND_MESSAGES = {
    "folder": "enum_from.folder must be a folder name: a folder the item reads or a folder "
              "of the run folder such as an earlier stage's",
    "glob": "enum_from.glob must be a file-name pattern such as '*.md' (no '/')",
    "field": "enum_from.field must be 'name' or a front-matter or JSON key such as 'id'",
}
"""What is wrong with each part of an ``enum_from`` that does not parse."""
GROUNDED_UNREAD = ("folder '{folder}' is not read by stage '{stage}' (process {process}), "
                   "whose agent {agent} uses {tool}: add it to the stage's reads")
"""Warning on an ``enum_from`` folder that a stage using the action neither reads nor has
in its run folder as a stage's folder (issue 26, point 6)."""


def check_grounded(loaded: Loaded, addon_name: str, addon: Any,
                   source: Source) -> list[Problem]:
    """Check each ``enum_from`` of the add-on's actions' input schemas (issue 26, point 6):
    its form (:class:`~bees_cli.workspace.grounded.EnumFrom`) is an error at the field; a
    folder not read (``reads``/``writes``) by a stage whose agent holds the action, and not
    a stage of that process, is a warning."""
    from pydantic import ValidationError

    from bees_cli.workspace.grounded import EnumFrom, references

    problems: list[Problem] = []
    for action_name, action in addon.actions.items():
        here: tuple[str | int, ...] = ("actions", action_name, "input")
        for path, raw in references(action.input or {}, here):
            if not isinstance(raw, dict):
                problems.append(source.at(path, "enum_from must be a mapping "
                                                "{folder, glob, field}"))
                continue
            try:
                ref = EnumFrom.model_validate(raw)
            except ValidationError as error:
                for item in error.errors():
                    key = str(item["loc"][0]) if item["loc"] else ""
                    if item["type"] == "missing":
                        message = f"enum_from needs '{key}' (it takes folder, glob and field)"
                    elif item["type"] == "extra_forbidden":
                        message = (f"unknown key '{key}' (enum_from takes folder, glob and "
                                   "field)")
                    else:
                        message = f"{GROUND_MESSAGES[key]}: {raw.get(key)!r}"
                    problems.append(source.at((*path, key) if key else path, message))
                continue
            problems += _grounded_unread(loaded, f"{addon_name}.{action_name}", ref,
                                         source, (*path, "folder"))
    return problems


def _grounded_unread(loaded: Loaded, tool: str, ref: Any, source: Source,
                     path: tuple[str | int, ...]) -> list[Problem]:
    """Warn once per stage whose agent holds ``tool`` and that does not read ``ref.folder``
    (:data:`GROUNDED_UNREAD`)."""
    agents = loaded.objects.get("agents", {})
    config = loaded.config
    default = config.default_agent if config is not None else None
    problems: list[Problem] = []
    for process_name, process in loaded.objects.get("processes", {}).items():
        if ref.folder in {stage.name for stage in process.stages}:
            continue
        for stage in process.stages:
            if stage.kind == "done" or ref.folder in (*stage.reads, *stage.writes):
                continue  # a done stage runs no agent
            named = list(stage.agents) or ([default] if default else [])
            user = next((a for a in named if a in agents and tool in agents[a].tools), None)
            if user is None:
                continue
            line, column = source.document.positions.value(path)
            problems.append(Problem(source.rel, line, column, field_path(path),
                                    GROUNDED_UNREAD.format(
                                        folder=ref.folder, stage=stage.name,
                                        process=process_name, agent=user, tool=tool),
                                    "warning"))
    return problems
