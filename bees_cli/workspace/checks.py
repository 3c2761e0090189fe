"""Checks across files: references between objects, stage order, names unique under case folding."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bees_cli.rules import GATED_KINDS, UNDECLARED_KIND
from bees_cli.suggest import did_you_mean
from bees_cli.workspace.models import Agent, Process, Schedule, WorkspaceConfig
from bees_cli.workspace.problems import Problem, field_path
from bees_cli.workspace.yamlio import Document

RESERVED_NAMES = frozenset(
    {"con", "prn", "aux", "nul"}
    | {f"com{i}" for i in range(1, 10)}
    | {f"lpt{i}" for i in range(1, 10)}
)
"""Names Windows refuses as file names (any case); object and stage names become file names."""

LABELS = {
    "processes": "process",
    "agents": "agent",
    "schedules": "schedule",
    "folders": "folder",
    "addons": "add-on",
}
"""Singular word for each kind, used in messages."""

CRON_DAYS_WARNING = (
    "both day-of-month and day-of-week are restricted: Bees follows cron's rule and fires "
    "on a day that matches either (not only on days that match both, as Temporal's "
    "calendars do)"
)
"""Warning on a cron whose day-of-month and day-of-week fields are both restricted (issue 11,
point 9): cron, and Bees, fire when either matches."""


def cron_days_either(cron: str) -> bool:
    """Tell whether a five-field ``cron`` restricts both day-of-month and day-of-week, so it
    fires on days matching either (cron's rule); a field starting with ``*`` is unrestricted,
    and shorthands such as ``@daily`` never restrict both."""
    fields = cron.split()
    return len(fields) == 5 and not fields[2].startswith("*") and not fields[4].startswith("*")


@dataclass
class Source:
    """Where an object came from: its file (relative to the workspace) and parsed document."""

    rel: str
    document: Document

    def at(self, path: tuple[str | int, ...], message: str) -> Problem:
        """A problem on the value at ``path`` of this file."""
        line, column = self.document.positions.value(path)
        return Problem(self.rel, line, column, field_path(path), message)


@dataclass
class Loaded:
    """Every object that validated on its own, with sources; ``broken`` names failed files."""

    config: WorkspaceConfig | None
    config_source: Source | None
    objects: dict[str, dict[str, Any]]
    sources: dict[str, dict[str, Source]]
    broken: dict[str, set[str]] = field(default_factory=dict)
    root: Path | None = None
    """The workspace folder (None: files are not looked at, e.g. a schema a check names)."""
    unvalidated: dict[str, dict[str, Source]] = field(default_factory=dict)
    """Per kind, the files that parsed but failed their own fields' checks: their names of
    other objects are still checked (:func:`_check_raw_process`), so one typo does not hide
    the rest of the file's problems."""


def cross_check(loaded: Loaded) -> list[Problem]:
    """Return every problem between files of ``loaded``.

    References to an object whose own file is broken are not reported again: that file
    already has its problems.
    """
    problems: list[Problem] = []
    config, source = loaded.config, loaded.config_source
    if config is not None and source is not None:
        if config.default_agent is not None:
            problems += _ref(loaded, "agents", config.default_agent, source, ("default_agent",))
        if config.run_folder is not None:
            problems += _ref(loaded, "folders", config.run_folder, source, ("run_folder",))
    for name, process in loaded.objects.get("processes", {}).items():
        problems += _check_process(loaded, process, loaded.sources["processes"][name])
    for source in loaded.unvalidated.get("processes", {}).values():
        problems += _check_raw_process(loaded, source)
    for name, agent in loaded.objects.get("agents", {}).items():
        problems += _check_agent(loaded, agent, loaded.sources["agents"][name])
    for name, schedule in loaded.objects.get("schedules", {}).items():
        problems += _check_schedule(loaded, schedule, loaded.sources["schedules"][name])
    from bees_cli.workspace.grounded_checks import check_grounded

    for name, addon in loaded.objects.get("addons", {}).items():
        problems += _unique(
            list(addon.actions), loaded.sources["addons"][name], ("actions",), "action"
        )
        problems += check_grounded(loaded, name, addon, loaded.sources["addons"][name])
    return problems


def _ref(
    loaded: Loaded, kind: str, name: str, source: Source, path: tuple[str | int, ...]
) -> list[Problem]:
    known: Mapping[str, Any] = loaded.objects.get(kind, {})
    if name in known or name in loaded.broken.get(kind, set()):
        return []
    label = LABELS[kind]
    hint = did_you_mean(name, known)
    if not hint:
        hint = f": there is no {kind}/{name}.yaml"
    return [source.at(path, f"unknown {label} '{name}'{hint}")]


RAW_REFERENCES = (("agents", "agents"), ("reads", "folders"), ("writes", "folders"))
"""The keys of a stage that name other objects (key, kind of object named)."""


def _check_raw_process(loaded: Loaded, source: Source) -> list[Problem]:
    """Return the unknown names in a process file whose own fields failed (a stage's
    agents, reads and writes, a review's ``reviews``), read from its plain data: only the
    values that are text where text belongs, so nothing its field problems said is said
    again."""
    data = source.document.data
    stages = data.get("stages") if isinstance(data, dict) else None
    if not isinstance(stages, list):
        return []
    names = [s.get("name") if isinstance(s, dict) else None for s in stages]
    problems: list[Problem] = []
    for index, stage in enumerate(stages):
        if not isinstance(stage, dict):
            continue
        here: tuple[str | int, ...] = ("stages", index)
        for key, kind in RAW_REFERENCES:
            values = stage.get(key)
            for position, value in enumerate(values if isinstance(values, list) else []):
                if isinstance(value, str):
                    problems += _ref(loaded, kind, value, source, (*here, key, position))
        reviews = stage.get("reviews")
        if isinstance(reviews, str) and reviews not in names:
            earlier = [n for n in names[:index] if isinstance(n, str)]
            problems.append(source.at((*here, "reviews"), f"unknown stage '{reviews}'"
                                      f"{did_you_mean(reviews, earlier)}"))
    return problems


def _unique(
    names: list[str], source: Source, path: tuple[str | int, ...], label: str
) -> list[Problem]:
    """Names that equal an earlier one under case folding."""
    seen: dict[str, str] = {}
    problems: list[Problem] = []
    for index, name in enumerate(names):
        folded = name.casefold()
        if folded in seen:
            first = seen[folded]
            same = "repeats" if first == name else "differs only in case from"
            where = (*path, name) if path == ("actions",) else (*path, index, "name")
            problems.append(
                source.at(where, f"{label} '{name}' {same} '{first}'; names must be unique")
            )
        else:
            seen[folded] = name
    return problems


def _check_process(loaded: Loaded, process: Process, source: Source) -> list[Problem]:
    problems = _unique([stage.name for stage in process.stages], source, ("stages",), "stage")
    stages = process.stages
    by_name = {stage.name: index for index, stage in enumerate(stages)}
    done_at = [index for index, stage in enumerate(stages) if stage.kind == "done"]
    for index, stage in enumerate(stages):
        here: tuple[str | int, ...] = ("stages", index)
        if stage.name.casefold() in RESERVED_NAMES:
            message = f"'{stage.name}' is a reserved file name on Windows; choose another name"
            problems.append(source.at((*here, "name"), message))
        for position, agent in enumerate(stage.agents):
            problems += _ref(loaded, "agents", agent, source, (*here, "agents", position))
        for position, folder in enumerate(stage.reads):
            problems += _ref(loaded, "folders", folder, source, (*here, "reads", position))
        for position, folder in enumerate(stage.writes):
            problems += _ref(loaded, "folders", folder, source, (*here, "writes", position))
        if stage.kind == "done":
            if index != done_at[0]:
                message = (
                    f"a second 'done' stage (after '{stages[done_at[0]].name}'); "
                    "a process has exactly one, at the end"
                )
                problems.append(source.at((*here, "kind"), message))
            elif len(done_at) == 1 and index != len(stages) - 1:
                message = (
                    "the 'done' stage must be the last stage; "
                    f"'{stages[index + 1].name}' comes after it"
                )
                problems.append(source.at((*here, "kind"), message))
            for key in ("agents", "reads", "writes"):
                if getattr(stage, key):
                    problems.append(
                        source.at((*here, key), f"a 'done' stage runs nothing; remove '{key}'")
                    )
            if stage.approval == "required":
                problems.append(
                    source.at((*here, "approval"), "a 'done' stage runs nothing; remove 'approval'")
                )
        if stage.kind != "done" and stage.approval != "required":
            problems += _ungated_senders(loaded, stage, source, here)
        if stage.checks or stage.output is not None:
            problems += check_stage_checks(loaded.root, stage, source, here)
        if stage.kind == "review":
            problems += _check_review(stages, by_name, index, source)
        elif stage.reviews is not None:
            problems.append(
                source.at(
                    (*here, "reviews"),
                    f"'reviews' belongs on a review stage; this stage is '{stage.kind}'",
                )
            )
    if not done_at:
        problems.append(source.at(("stages",), "no 'done' stage; a process ends with exactly one"))
    elif all(stage.kind == "done" for stage in stages):
        problems.append(source.at(("stages",), "a process needs a work stage before 'done'"))
    return problems


UNGATED_WARNING = ("agent '{agent}'{default} holds {tools} but stage '{stage}' has no "
                   "'approval: required': it runs without a person's approval")
"""Warning on a stage without approval whose agent holds a send, post, delete or pay tool
(issue 25, point 5: no side doors)."""


def gated_tools(loaded: Loaded, agent: Agent) -> list[tuple[str, str]]:
    """Return ``(ADDON.ACTION, kind)`` for each tool of ``agent`` whose declared kind is send,
    post, delete or pay (a script action's ``kind``, an MCP tool's ``kinds:`` entry; an MCP
    tool whose kind is known only from its server is not judged here)."""
    addons = loaded.objects.get("addons", {})
    found: list[tuple[str, str]] = []
    for tool in agent.tools:
        addon_name, _, name = tool.partition(".")
        addon = addons.get(addon_name)
        if addon is None:
            continue
        action = addon.actions.get(name)
        kind = action.kind if action is not None else addon.kinds.get(name)
        if kind in GATED_KINDS and kind != UNDECLARED_KIND:
            found.append((tool, kind))
    return found


def _ungated_senders(loaded: Loaded, stage: Any, source: Source,
                     here: tuple[str | int, ...]) -> list[Problem]:
    """Warn for each agent of ``stage`` (those it names, else the workspace's default agent)
    holding a send, post, delete or pay tool, the stage not marked ``approval: required``."""
    agents = loaded.objects.get("agents", {})
    named: list[tuple[str, tuple[str | int, ...], str]] = [
        (agent, (*here, "agents", position), "") for position, agent in enumerate(stage.agents)]
    config = loaded.config
    if not named and config is not None and config.default_agent is not None:
        named = [(config.default_agent, here, " (the default agent)")]
    problems: list[Problem] = []
    for agent, path, default in named:
        if agent not in agents:
            continue
        tools = gated_tools(loaded, agents[agent])
        if tools:
            message = UNGATED_WARNING.format(
                agent=agent, default=default, stage=stage.name,
                tools=", ".join(f"{tool} ({kind})" for tool, kind in tools))
            line, column = source.document.positions.value(path)
            problems.append(Problem(source.rel, line, column, field_path(path), message,
                                    "warning"))
    return problems


def _check_review(
    stages: list[Any], by_name: dict[str, int], index: int, source: Source
) -> list[Problem]:
    stage = stages[index]
    here: tuple[str | int, ...] = ("stages", index)
    if stage.reviews is None:
        return [
            source.at(
                here,
                "a review stage needs 'reviews: STAGE', naming the earlier work stage it checks",
            )
        ]
    target = by_name.get(stage.reviews)
    at = (*here, "reviews")
    if target is None:
        hint = did_you_mean(stage.reviews, [s.name for s in stages[:index] if s.kind == "work"])
        return [source.at(at, f"unknown stage '{stage.reviews}'{hint}")]
    if target == index:
        return [source.at(at, "a stage cannot review itself")]
    if target > index:
        return [
            source.at(
                at,
                f"'{stage.reviews}' comes after this stage; a review stage checks an "
                "earlier work stage",
            )
        ]
    if stages[target].kind != "work":
        return [
            source.at(
                at,
                f"'{stage.reviews}' is a {stages[target].kind} stage; a review stage "
                "checks a work stage",
            )
        ]
    return []


def _check_agent(loaded: Loaded, agent: Agent, source: Source) -> list[Problem]:
    problems: list[Problem] = []
    addons = loaded.objects.get("addons", {})
    for index, tool in enumerate(agent.tools):
        addon_name, action = tool.split(".", 1)
        path: tuple[str | int, ...] = ("tools", index)
        if addon_name not in addons:
            if addon_name not in loaded.broken.get("addons", set()):
                hint = did_you_mean(addon_name, addons) or f": there is no addons/{addon_name}.yaml"
                problems.append(source.at(path, f"unknown add-on '{addon_name}'{hint}"))
            continue
        if addons[addon_name].mcp is not None:
            continue  # an MCP server's tools are known live: eligibility checks them here
        actions = addons[addon_name].actions
        if action not in actions:
            hint = did_you_mean(action, actions)
            if not hint:
                hint = f" (it has {', '.join(sorted(actions))})"
            problems.append(
                source.at(path, f"add-on '{addon_name}' has no action '{action}'{hint}")
            )
    return problems


def _check_schedule(loaded: Loaded, schedule: Schedule, source: Source) -> list[Problem]:
    problems = _ref(loaded, "processes", schedule.process, source, ("process",))
    for index, agent in enumerate(schedule.agents):
        problems += _ref(loaded, "agents", agent, source, ("agents", index))
    for index, folder in enumerate(schedule.folders):
        problems += _ref(loaded, "folders", folder, source, ("folders", index))
    if schedule.cron is not None and cron_days_either(schedule.cron):
        line, column = source.document.positions.value(("cron",))
        problems.append(Problem(source.rel, line, column, "cron", CRON_DAYS_WARNING, "warning"))
    return problems


def check_stage_checks(root: Path | None, stage: Any, source: Source,
                       here: tuple[str | int, ...]) -> list[Problem]:
    """Return the problems of a stage's ``checks:`` and ``output:`` (issue 26, point 5):
    only a review stage has checks, only a work stage an output; a schema (a file of the
    workspace under ``root``, or inline) must be a valid JSON schema."""
    from bees_cli.workspace.stage_checks import JsonSchema, load_schema

    problems: list[Problem] = []
    if stage.output is not None:
        if stage.kind != "work":
            problems.append(source.at((*here, "output"), "'output' belongs on a work stage; "
                                      f"this stage is '{stage.kind}'"))
        elif stage.output.schema_ is not None and (root is not None
                                                   or not isinstance(stage.output.schema_, str)):
            error = load_schema(stage.output.schema_, root or Path("."))[1]
            if error is not None:
                problems.append(source.at((*here, "output", "schema"), error))
    if not stage.checks:
        return problems
    if stage.kind != "review":
        return [*problems, source.at(
            (*here, "checks"), f"'checks' belong on a review stage; this stage is '{stage.kind}'")]
    for position, check in enumerate(stage.checks):
        if not isinstance(check, JsonSchema):
            continue
        where = (*here, "checks", position, "json_schema", "schema")
        schema = check.json_schema.schema_
        if isinstance(schema, str) and root is None:
            continue
        error = load_schema(schema, root or Path("."))[1]
        if error is not None:
            problems.append(source.at(where, error))
    return problems
