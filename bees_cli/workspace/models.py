"""Pydantic models of the workspace's YAML kinds; strict: unknown keys are errors.

One file per object: ``bees.yaml`` (:class:`WorkspaceConfig`), ``processes/NAME.yaml``
(:class:`Process`), ``agents/NAME.yaml`` (:class:`Agent`), ``schedules/NAME.yaml``
(:class:`Schedule`), ``folders/NAME.yaml`` (:class:`Folder`), ``addons/NAME.yaml``
(:class:`Addon`). An object's name is its file name without ``.yaml``.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
"""Names of objects, stages and actions: safe as file names and ids, no dots (dots join
``addon.action`` and ``process.stage``)."""

NAME_RE = re.compile(NAME_PATTERN)

Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
ToolRef = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\.[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")]
"""An add-on action named as ``ADDON.ACTION``."""

StageKind = Literal["work", "review", "done"]
ActionKind = Literal["read", "write", "send", "post", "delete", "pay"]
GATED_KINDS: frozenset[str] = frozenset({"send", "post", "delete", "pay"})
"""Action kinds held until a person approves on a stage with ``approval: required``."""

Weekday = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


class Strict(BaseModel):
    """Base of every workspace model: unknown keys are rejected, values are not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class WorkspaceConfig(Strict):
    """``bees.yaml``: the workspace itself."""

    name: Name
    team: str | None = None
    default_agent: Name | None = None
    cloud: str | None = Field(default=None, description="Bees Cloud URL, e.g. https://cloud.example.com")
    run_folder: Name | None = Field(
        default=None,
        description="A declared folder whose directory holds run folders (default: this computer's data dir).",
    )


class Stage(Strict):
    """One step of a process."""

    name: Name
    kind: StageKind
    agents: list[Name] = Field(default_factory=list, description="Agents for this stage, in order of preference.")
    reviews: Name | None = Field(default=None, description="On a review stage: the earlier work stage it judges.")
    approval: Literal["required", "none"] = "none"
    reads: list[Name] = Field(default_factory=list, description="Folders this stage reads.")


class Process(Strict):
    """``processes/NAME.yaml``: an ordered list of stages ending in one ``done`` stage."""

    title: str | None = None
    description: str | None = None
    stages: list[Stage] = Field(min_length=1)


class CommandRunner(Strict):
    """Runs a local program: ``command`` (argv) with ``env`` added.

    In ``command``, ``${BEES_WORKSPACE}`` is the workspace folder and ``${BEES_PYTHON}`` the
    Python that runs Bees.
    """

    command: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)


class ModelSpec(Strict):
    """A model behind an HTTP API (OpenAPI-style chat completions)."""

    base_url: str
    name: str
    api_key_env: str


class ModelRunner(Strict):
    """Calls a model over HTTP (executed in a later issue; validated now)."""

    model: ModelSpec


class Agent(Strict):
    """``agents/NAME.yaml``: an AI worker."""

    enabled: bool = True
    instructions: str = ""
    model: str | None = None
    max_concurrent_runs: Annotated[int, Field(ge=1)] | None = None
    tools: list[ToolRef] = Field(default_factory=list, description="Add-on actions as ADDON.ACTION.")
    runner: CommandRunner | ModelRunner


class Calendar(Strict):
    """Calendar fields of a schedule: on ``days`` at ``time`` (``H:MM``, 24 h, local to the time zone)."""

    days: list[Weekday] = Field(min_length=1)
    time: Annotated[str, StringConstraints(pattern=r"^([01]?[0-9]|2[0-3]):[0-5][0-9]$")]


class Schedule(Strict):
    """``schedules/NAME.yaml``: creates a work item at set times; owned by one person."""

    process: Name
    owner: Annotated[str, StringConstraints(pattern=r"^[^@\s]+@[^@\s]+$")]
    cron: str | None = None
    calendar: Calendar | None = None
    timezone: str
    title: str = Field(default="{schedule} {date}", description="Item title; {schedule}, {date}, {time} are filled in.")
    agents: list[Name] = Field(default_factory=list)
    folders: list[Name] = Field(default_factory=list)
    enabled: bool = True

    @model_validator(mode="after")
    def _one_timing(self) -> Schedule:
        if (self.cron is None) == (self.calendar is None):
            raise ValueError("give exactly one of 'cron' or 'calendar'")
        return self


class Folder(Strict):
    """``folders/NAME.yaml``: a logical folder; linked on a computer when it resolves to a directory."""

    description: str | None = None
    path: str | None = Field(default=None, description="Default path; ~ and ${ENV} are expanded; a relative path starts at the workspace folder.")


class Action(Strict):
    """One action of an add-on."""

    kind: ActionKind
    command: list[str] = Field(min_length=1)
    description: str | None = None


class Connection(Strict):
    """How to tell an add-on is connected on a computer: every env var set and every file present."""

    env: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)


class Addon(Strict):
    """``addons/NAME.yaml``: a connection offering actions."""

    description: str | None = None
    actions: dict[Name, Action] = Field(min_length=1)
    connection: Connection = Field(default_factory=Connection)


KINDS: dict[str, type[Strict]] = {
    "processes": Process,
    "agents": Agent,
    "schedules": Schedule,
    "folders": Folder,
    "addons": Addon,
}
"""Folder name of each kind → its model (``bees.yaml`` is :class:`WorkspaceConfig`)."""
