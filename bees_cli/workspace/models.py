"""Pydantic models of the workspace's YAML kinds; strict: unknown keys are errors.

One file per object: ``bees.yaml`` (:class:`WorkspaceConfig`), ``processes/NAME.yaml``
(:class:`Process`), ``agents/NAME.yaml`` (:class:`Agent`), ``schedules/NAME.yaml``
(:class:`Schedule`), ``folders/NAME.yaml`` (:class:`Folder`), ``addons/NAME.yaml``
(:class:`Addon`). An object's name is its file name without ``.yaml``.

The models check each file on its own (types, closed sets, patterns, cron and time zone
syntax). Checks that span files (references, stage order) live in
:mod:`bees_cli.workspace.checks`. The shared field types are in
:mod:`~bees_cli.workspace.fields`, an agent's runner in :mod:`~bees_cli.workspace.runners`
and the schedule in :mod:`~bees_cli.workspace.schedule`; this module re-exports them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StringConstraints, field_validator, model_validator

from bees_cli.ids import EMAIL_PATTERN as EMAIL_PATTERN  # the one email rule (issue 15)
from bees_cli.rules import GATED_KINDS as GATED_KINDS  # re-exported for older imports
from bees_cli.rules import MCP_CALL_SECONDS, MCP_START_SECONDS

# The shared field types, the runners and the schedule live in their own modules;
# models re-exports them, so ``models.X`` stays the one import path.
from bees_cli.workspace.fields import ENV_NAME_PATTERN as ENV_NAME_PATTERN
from bees_cli.workspace.fields import MOST_COUNT, MOST_PIECE_DEPTH, MOST_WAIT_SECONDS
from bees_cli.workspace.fields import NAME_PATTERN as NAME_PATTERN
from bees_cli.workspace.fields import NAME_RE as NAME_RE
from bees_cli.workspace.fields import TIME_PATTERN as TIME_PATTERN
from bees_cli.workspace.fields import TOOL_PATTERN as TOOL_PATTERN
from bees_cli.workspace.fields import URL_PATTERN as URL_PATTERN
from bees_cli.workspace.fields import EnvName as EnvName
from bees_cli.workspace.fields import Name as Name
from bees_cli.workspace.fields import Strict as Strict
from bees_cli.workspace.fields import Text as Text
from bees_cli.workspace.fields import ToolRef as ToolRef
from bees_cli.workspace.fields import Url as Url
from bees_cli.workspace.runners import RUNNER_TAGS as RUNNER_TAGS
from bees_cli.workspace.runners import CommandRunner as CommandRunner
from bees_cli.workspace.runners import ModelRunner as ModelRunner
from bees_cli.workspace.runners import ModelSpec as ModelSpec
from bees_cli.workspace.runners import Prices as Prices
from bees_cli.workspace.runners import Runner as Runner
from bees_cli.workspace.runners import ToolMode as ToolMode
from bees_cli.workspace.schedule import TITLE_FIELDS as TITLE_FIELDS
from bees_cli.workspace.schedule import Calendar as Calendar
from bees_cli.workspace.schedule import Schedule as Schedule
from bees_cli.workspace.schedule import check_cron as check_cron
from bees_cli.workspace.schedule import check_timezone as check_timezone
from bees_cli.workspace.schedule import check_title as check_title
from bees_cli.workspace.stage_checks import CHECK_TAGS as CHECK_TAGS
from bees_cli.workspace.stage_checks import Check as Check
from bees_cli.workspace.stage_checks import DeclaredOutput as DeclaredOutput

StageKind = Literal["work", "review", "done"]
ActionKind = Literal["read", "write", "send", "post", "delete", "pay"]


class WorkspaceConfig(Strict):
    """``bees.yaml``: the workspace itself."""

    name: Name
    team: Text | None = Field(
        default=None, description="The Bees Cloud team this workspace belongs to."
    )
    default_agent: Name | None = Field(
        default=None, description="Agent used when neither the item nor the stage names one."
    )
    cloud: Url | None = Field(
        default=None, description="Bees Cloud URL, e.g. https://cloud.example.com"
    )
    run_folder: Name | None = Field(
        default=None,
        description="A declared folder whose directory holds run folders "
        "(default: this computer's data dir).",
    )
    max_piece_depth: Annotated[int, Field(ge=0, le=MOST_PIECE_DEPTH)] = Field(
        default=2, description="How deep pieces may nest: an agent hands work to another agent "
        "(depth 1), which may hand work on (depth 2)… 0 turns delegation off.")


class Stage(Strict):
    """One step of a process.

    ``reviews`` is required on a ``review`` stage and only allowed there; it names an
    earlier ``work`` stage (checked across the process by ``bees validate``).
    """

    name: Name = Field(description="The stage's name, unique in its process.")
    kind: StageKind = Field(
        description="'work': an agent produces; 'review': an agent judges the stage named in "
        "reviews; 'done': the end (exactly one, last)."
    )
    agents: list[Name] = Field(
        default_factory=list, description="Agents for this stage, in order of preference."
    )
    reviews: Name | None = Field(
        default=None, description="On a review stage: the earlier work stage it judges."
    )
    approval: Literal["required", "none"] = Field(
        default="none",
        description="'required': a person must approve before the stage finishes, "
        "sends, posts, deletes or pays.",
    )
    reads: list[Name] = Field(
        default_factory=list,
        description="Folders this stage reads; a model agent's write_file may not change them.")
    writes: list[Name] = Field(
        default_factory=list, exclude_if=lambda v: not v,
        description="Folders this stage's model agent may change with write_file (each must "
        "be linked, like reads); on an approval stage only once a person approved.")
    checks: list[Check] = Field(
        default_factory=list, exclude_if=lambda v: not v,
        description="On a review stage: deterministic checks run before its reviewer, in "
        "order (file_exists, json_schema, command). A failed one sends the work back with its "
        "message as the change request, counted like a reviewer's, and the reviewer does not "
        "run.")
    output: DeclaredOutput | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="On a work stage: the file its agent must leave in the stage's folder "
        "(and its schema). Missing or invalid, a model agent is told once, then the stage "
        "fails; a command agent's stage fails with the reason.")


class Process(Strict):
    """``processes/NAME.yaml``: an ordered list of stages ending in one ``done`` stage."""

    title: str | None = Field(default=None, description="A title for people.")
    description: str | None = Field(default=None, description="What the process is for.")
    stages: list[Stage] = Field(min_length=1, description="The stages, in order.")


class Agent(Strict):
    """``agents/NAME.yaml``: an AI worker."""

    enabled: bool = Field(
        default=True, description="A disabled agent is never picked, and work for it waits."
    )
    instructions: str = Field(
        default="", description="What the agent is told to do (a model agent's system prompt)."
    )
    model: str | None = Field(default=None, description="A label for people; not used to run.")
    max_concurrent_runs: Annotated[int, Field(ge=1, le=MOST_COUNT)] | None = Field(
        default=None,
        description="At most this many runs at once on one computer (default: no cap).",
    )
    tools: list[ToolRef] = Field(
        default_factory=list, description="Add-on actions as ADDON.ACTION."
    )
    runner: Runner = Field(
        description="How the agent works: a command (CommandRunner) or a model over HTTP "
        "(ModelRunner)."
    )

    @model_validator(mode="after")
    def _required_tools_are_tools(self) -> Agent:
        if isinstance(self.runner, ModelRunner):
            missing = [t for t in self.runner.required_tools if t not in self.tools]
            if missing:
                raise ValueError(f"runner.required_tools {', '.join(missing)} not in tools")
        return self


class Folder(Strict):
    """``folders/NAME.yaml``: a logical folder; linked where it resolves to a directory."""

    description: str | None = Field(default=None, description="What the folder holds.")
    path: Text | None = Field(
        default=None,
        description="Default path; ~ and ${ENV} are expanded; a relative path starts "
        "at the workspace folder.",
    )


class Action(Strict):
    """One action of an add-on."""

    kind: ActionKind = Field(
        description="read, write, send, post, delete or pay; send, post, delete and pay wait "
        "for a person on an approval stage."
    )
    command: list[Text] = Field(
        min_length=1, description="The program run for the action; its input arrives on stdin."
    )
    description: str | None = Field(default=None, description="What the action does.")
    input: dict[str, Any] | None = Field(
        default=None,
        description="The action's input as a JSON Schema of an object (offered to model "
        "agents as the function's parameters). A property may take its allowed values from "
        "a folder: enum_from: {folder: bug-reports, glob: '*.md', field: id} (folder: one "
        "the item reads, else a folder of the run folder such as an earlier stage's; field: "
        "'name' for the file name without its extension, else a key of a .md file's YAML "
        "front matter or a .json file's top-level object); it is offered as the enum of the "
        "values there before each call, and a value not there is refused.",
    )

    @field_validator("input")
    @classmethod
    def _input_is_object_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None and value.get("type") != "object":
            raise ValueError('the input schema must describe an object ("type": "object")')
        return value


class Connection(Strict):
    """How to tell an add-on is connected here: every env var set and every file present."""

    env: list[EnvName] = Field(
        default_factory=list, description="Environment variables that must be set here."
    )
    files: list[Text] = Field(
        default_factory=list, description="Files that must exist here (~ and ${ENV} expanded)."
    )


HEADER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9-]{0,63}$"
"""An HTTP header's name, e.g. ``Authorization`` or ``X-Api-Key``."""


class McpServer(Strict):
    """An MCP server whose tools are the add-on's actions: a local server Bees
    starts (``command``, spoken to over stdio) or a remote one (``url``, Streamable HTTP).

    ``env`` names the environment variables the local server is given (besides a minimal
    ``PATH``, ``HOME``…); ``headers`` maps a header to the *name* of the environment variable
    holding its value, never the value. In ``command``, ``${BEES_WORKSPACE}`` and
    ``${BEES_PYTHON}`` are expanded as in a runner's. ``bees run`` starts a local server
    once per stage (in the stage's folder), reuses it for the stage's tool calls, and stops
    it when the stage ends, is cancelled or relinquished; see docs/add-ons.md.
    """

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["command"]}, {"required": ["url"]}]}
    )

    command: list[Text] | None = Field(
        default=None, min_length=1,
        description="The program starting a local server and its arguments (stdio).",
    )
    env: list[EnvName] = Field(
        default_factory=list,
        description="Environment variables passed to the local server (names; their values "
        "come from this computer's environment).",
    )
    url: Url | None = Field(
        default=None, description="The endpoint of a remote server (Streamable HTTP)."
    )
    headers: dict[Annotated[str, StringConstraints(pattern=HEADER_PATTERN)], EnvName] = Field(
        default_factory=dict,
        description="Headers sent to the remote server: header name → the name of the "
        "environment variable holding its value (never the value).",
    )
    start_seconds: Annotated[float, Field(gt=0, le=MOST_WAIT_SECONDS)] = Field(
        default=MCP_START_SECONDS,
        description="Seconds allowed for starting or reaching the server and for each of its "
        "answers before a tool call (handshake, list of tools).",
    )
    call_seconds: Annotated[float, Field(gt=0, le=MOST_WAIT_SECONDS)] = Field(
        default=MCP_CALL_SECONDS, description="Seconds allowed for one tool call's answer."
    )

    @model_validator(mode="after")
    def _one_transport(self) -> McpServer:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of 'command' (a server run here, over stdio) "
                             "or 'url' (a remote server, over Streamable HTTP)")
        if self.env and self.command is None:
            raise ValueError("'env' goes with 'command'; a remote server gets 'headers'")
        if self.headers and self.url is None:
            raise ValueError("'headers' go with 'url'; a local server gets 'env'")
        return self


class Addon(Strict):
    """``addons/NAME.yaml``: a connection offering actions.

    Either scripts (``actions``: each a program with its kind) or an MCP server (``mcp``),
    whose tools are the actions; ``kinds`` gives an MCP tool its kind (a tool not named
    there is ``read`` only when the server marks it read-only, else it is gated: held for
    approval on an approval stage like ``send``).
    """

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["actions"]}, {"required": ["mcp"]}]}
    )

    description: str | None = Field(default=None, description="What the add-on connects to.")
    # the fields an add-on of one type leaves empty are left out of its dump, so a stored
    # snapshot of a script add-on keeps its JSON (and digest) and an MCP one reloads
    actions: dict[Name, Action] = Field(
        default_factory=dict, min_length=1, exclude_if=lambda v: not v,
        description="Its actions, by name (a script add-on).")
    mcp: McpServer | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="An MCP server whose tools are the actions (an MCP add-on).",
    )
    kinds: dict[Name, ActionKind] = Field(
        default_factory=dict, exclude_if=lambda v: not v,
        description="An MCP add-on's tools by name → kind. A tool not named here is read only "
        "when the server marks it read-only (readOnlyHint), otherwise it waits for approval "
        "on an approval stage like send.",
    )
    connection: Connection = Field(
        default_factory=Connection, description="How to tell it is connected on a computer."
    )

    @model_validator(mode="after")
    def _scripts_or_server(self) -> Addon:
        if self.actions and self.mcp is not None:
            raise ValueError("give either 'actions' (a script per action) or 'mcp' (a server "
                             "whose tools are the actions), not both")
        if not self.actions and self.mcp is None:
            raise ValueError("give 'actions' (a script per action) or 'mcp' (a server whose "
                             "tools are the actions)")
        if self.kinds and self.mcp is None:
            raise ValueError("'kinds' go with 'mcp': a script action declares its own kind")
        return self


KINDS: dict[str, type[Strict]] = {
    "processes": Process,
    "agents": Agent,
    "schedules": Schedule,
    "folders": Folder,
    "addons": Addon,
}
"""Folder name of each kind → its model (``bees.yaml`` is :class:`WorkspaceConfig`)."""
