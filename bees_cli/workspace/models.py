"""Pydantic models of the workspace's YAML kinds; strict: unknown keys are errors.

One file per object: ``bees.yaml`` (:class:`WorkspaceConfig`), ``processes/NAME.yaml``
(:class:`Process`), ``agents/NAME.yaml`` (:class:`Agent`), ``schedules/NAME.yaml``
(:class:`Schedule`), ``folders/NAME.yaml`` (:class:`Folder`), ``addons/NAME.yaml``
(:class:`Addon`). An object's name is its file name without ``.yaml``.

The models check each file on its own (types, closed sets, patterns, cron and time zone
syntax). Checks that span files (references, stage order) live in
:mod:`bees_cli.workspace.checks`.
"""

from __future__ import annotations

import re
import string
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    field_validator,
    model_validator,
)

from bees_cli.ids import EMAIL_PATTERN as EMAIL_PATTERN  # the one email rule (issue 15)
from bees_cli.rules import GATED_KINDS as GATED_KINDS  # re-exported for older imports
from bees_cli.rules import (
    MCP_CALL_SECONDS,
    MCP_START_SECONDS,
    MODEL_CALL_MOST_SECONDS,
    MODEL_CALL_SECONDS,
    MODEL_READ_SECONDS,
    MODEL_REPLY_BYTES,
    MODEL_TOOL_CALLS,
)

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
"""Names of objects, stages and actions: safe as file names and ids, no dots (dots join
``addon.action`` and ``process.stage``)."""

NAME_RE = re.compile(NAME_PATTERN)

TOOL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\.[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
URL_PATTERN = r"^https?://[^\s/?#]+[^\s]*$"
TIME_PATTERN = r"^([01]?[0-9]|2[0-3]):[0-5][0-9]$"

Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
ToolRef = Annotated[str, StringConstraints(pattern=TOOL_PATTERN)]
"""An add-on action named as ``ADDON.ACTION``."""
EnvName = Annotated[str, StringConstraints(pattern=ENV_NAME_PATTERN)]
"""The name of an environment variable, e.g. ``OPENAI_API_KEY``."""
Url = Annotated[str, StringConstraints(pattern=URL_PATTERN)]
Text = Annotated[str, StringConstraints(min_length=1)]

StageKind = Literal["work", "review", "done"]
ActionKind = Literal["read", "write", "send", "post", "delete", "pay"]

Weekday = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

TITLE_FIELDS: tuple[str, ...] = ("schedule", "date", "time")
"""Placeholders a schedule's ``title`` may use: ``{schedule}`` (its name), ``{date}``
(``YYYY-MM-DD``) and ``{time}`` (``HH:MM``), both in the schedule's time zone."""

CRON_MACROS: frozenset[str] = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
"""Cron shorthands accepted besides five-field expressions."""


class Strict(BaseModel):
    """Base of every workspace model: unknown keys are rejected, values are not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


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
    max_piece_depth: Annotated[int, Field(ge=0)] = Field(
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


class Process(Strict):
    """``processes/NAME.yaml``: an ordered list of stages ending in one ``done`` stage."""

    title: str | None = Field(default=None, description="A title for people.")
    description: str | None = Field(default=None, description="What the process is for.")
    stages: list[Stage] = Field(min_length=1, description="The stages, in order.")


class CommandRunner(Strict):
    """Runs a local program: ``command`` (argv) with ``env`` added.

    In ``command``, ``${BEES_WORKSPACE}`` is the workspace folder and ``${BEES_PYTHON}`` the
    Python that runs Bees.
    """

    command: list[Text] = Field(
        min_length=1, description="The program and its arguments, run in the stage's folder."
    )
    env: dict[EnvName, str] = Field(
        default_factory=dict, description="Environment variables added for the program."
    )


class Prices(Strict):
    """What a model costs, per million tokens, in the agent's own currency (for estimates)."""

    input_per_million: Annotated[float, Field(ge=0)] = Field(
        description="Price of one million prompt (input) tokens."
    )
    output_per_million: Annotated[float, Field(ge=0)] = Field(
        description="Price of one million completion (output) tokens."
    )

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Return the estimated price of ``prompt_tokens`` in and ``completion_tokens`` out."""
        return (prompt_tokens * self.input_per_million
                + completion_tokens * self.output_per_million) / 1_000_000


class ModelSpec(Strict):
    """A model behind an HTTP API (OpenAI-style chat completions).

    ``api_key_env`` is the *name* of the environment variable holding the key, never the
    key itself; local servers (Ollama, llama.cpp, ``bees model serve``) need none.
    """

    base_url: Url = Field(
        description="The API's base URL, to which /chat/completions is added, "
        "e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1"
    )
    name: Text = Field(description="The model's name as the server knows it.")
    api_key_env: EnvName | None = Field(
        default=None,
        description="Name of the environment variable holding the API key (never the key); "
        "omit for a local server that needs none.",
    )
    prices: Prices | None = Field(
        default=None, description="Prices per million tokens, for cost estimates."
    )
    timeout_seconds: Annotated[float, Field(gt=0)] = Field(
        default=MODEL_READ_SECONDS,
        description="Seconds allowed for connecting, and for each read and write of one call.",
    )
    deadline_seconds: Annotated[float, Field(gt=0, le=MODEL_CALL_MOST_SECONDS)] = Field(
        default=MODEL_CALL_SECONDS,
        description="Seconds one call may take in all, from sending to the reply's last "
        "byte; a slower call is cut off and tried again.",
    )
    max_reply_bytes: Annotated[int, Field(ge=1)] = Field(
        default=MODEL_REPLY_BYTES,
        description="A reply larger than this many bytes is cut off and fails the stage.",
    )


ToolMode = Literal["native", "json"]
"""How a model agent asks for tools: ``native`` tool calls, or ``json``: one JSON object
per step (``{"tool": …, "arguments": …}`` or ``{"final": …}``) through ``response_format``,
which small local models follow more reliably."""


class ModelRunner(Strict):
    """Thinks with a model over HTTP and acts only through its tools (the loop is issue 13's)."""

    model: ModelSpec
    tool_mode: ToolMode = Field(
        default="native",
        description="'native': the protocol's tool calls; 'json': each step is a JSON object "
        "asked for through response_format (for small local models).",
    )
    max_turns: Annotated[int, Field(ge=1)] = Field(
        default=20, description="At most this many model calls per stage; then the stage fails."
    )
    token_budget: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description="At most this many tokens (prompt plus completion, summed over the "
        "stage's calls); then the stage fails (default: no budget).",
    )
    max_reply_tokens: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description="Sent as max_tokens: at most this many tokens in one reply "
        "(default: the server's). In json mode it also bounds the answer's strings, so a "
        "grammar-following server always closes the JSON within it.",
    )
    max_tool_calls: Annotated[int, Field(ge=1)] = Field(
        default=MODEL_TOOL_CALLS,
        description="A reply asking for more tool calls than this runs none of them; the "
        "model is told once, then the stage fails.",
    )
    file_tools: bool = Field(
        default=True,
        description="Offer the built-in read_file and write_file tools.",
    )
    attach: list[Name] = Field(
        default_factory=list,
        description="Folders whose text files are given in the task message: folders the "
        "stage reads, or earlier stages (e.g. Draft); a small model then needs no tool to read.",
    )
    required_tools: list[ToolRef] = Field(
        default_factory=list,
        description="Add-on actions (in the agent's tools) the agent calls once each before "
        "its final answer, in either tool mode: a final answer before they ran is told back "
        "once, then fails the stage. In json mode the step schema also offers the final "
        "answer only after them, and never one of them again.",
    )


RUNNER_TAGS: dict[str, type[Strict]] = {
    "command-runner": CommandRunner,
    "model-runner": ModelRunner,
}
"""Tag of each runner model (pydantic puts the tag in error locations; the loader drops it)."""


def _runner_tag(value: Any) -> str | None:
    """Pick the runner model from its keys: ``command`` or ``model``, exactly one (a runner
    already made, when dumping: from its type, else pydantic warns on every ModelRunner)."""
    if isinstance(value, ModelRunner):
        return "model-runner"
    if not isinstance(value, dict):
        return "command-runner"
    has_command, has_model = "command" in value, "model" in value
    if has_command == has_model:
        return None
    return "command-runner" if has_command else "model-runner"


Runner = Annotated[
    Annotated[CommandRunner, Tag("command-runner")] | Annotated[ModelRunner, Tag("model-runner")],
    Discriminator(
        _runner_tag,
        custom_error_type="runner_kind",
        custom_error_message="a runner needs exactly one of 'command' (a program to run) "
        "or 'model' (a model over HTTP)",
    ),
]


class Agent(Strict):
    """``agents/NAME.yaml``: an AI worker."""

    enabled: bool = Field(
        default=True, description="A disabled agent is never picked, and work for it waits."
    )
    instructions: str = Field(
        default="", description="What the agent is told to do (a model agent's system prompt)."
    )
    model: str | None = Field(default=None, description="A label for people; not used to run.")
    max_concurrent_runs: Annotated[int, Field(ge=1)] | None = Field(
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


class Calendar(Strict):
    """Calendar fields of a schedule: on ``days`` at ``time`` (``H:MM``, 24 h, in its time zone)."""

    days: list[Weekday] = Field(min_length=1, description="Weekdays on which it fires.")
    time: Annotated[str, StringConstraints(pattern=TIME_PATTERN)] = Field(
        description="Wall-clock time, H:MM on 24 hours, in the schedule's time zone."
    )


class Schedule(Strict):
    """``schedules/NAME.yaml``: creates a work item at set times; owned by one person.

    Exactly one of ``cron`` (five fields, or a shorthand such as ``@daily``) and
    ``calendar`` is given; ``timezone`` is an IANA name such as ``Europe/Paris``.
    """

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["cron"]}, {"required": ["calendar"]}]}
    )

    process: Name = Field(description="The process each new item follows.")
    owner: Annotated[str, StringConstraints(pattern=EMAIL_PATTERN)] = Field(
        description="The person (email) whose computers fire this schedule."
    )
    cron: str | None = Field(
        default=None, description="Five cron fields or a shorthand such as @daily."
    )
    calendar: Calendar | None = Field(default=None, description="Days and a time, instead of cron.")
    timezone: str = Field(description="IANA time zone name, e.g. Europe/Paris.")
    title: str = Field(
        default="{schedule} {date}",
        description="Item title; {schedule}, {date}, {time} are filled in.",
    )
    agents: list[Name] = Field(
        default_factory=list, description="Agents named on each new item (first choice)."
    )
    folders: list[Name] = Field(
        default_factory=list, description="Folders each new item reads (must be linked to fire)."
    )
    enabled: bool = Field(default=True, description="A disabled schedule does not fire.")

    @field_validator("cron")
    @classmethod
    def _cron_parses(cls, value: str | None) -> str | None:
        if value is not None:
            check_cron(value)
        return value

    @field_validator("timezone")
    @classmethod
    def _zone_exists(cls, value: str) -> str:
        check_timezone(value)
        return value

    @field_validator("title")
    @classmethod
    def _title_fields(cls, value: str) -> str:
        check_title(value)
        return value

    @model_validator(mode="after")
    def _one_timing(self) -> Schedule:
        if (self.cron is None) == (self.calendar is None):
            raise ValueError("give exactly one of 'cron' or 'calendar'")
        return self


CRON_HORIZON_YEARS = 8
"""A cron expression that does not fire within this many years is an error (``0 9 30 2 *``)."""


def check_cron(expression: str) -> None:
    """Check a cron expression: five fields (minute hour day month weekday) or a shorthand.

    It must also fire at least once in the next :data:`CRON_HORIZON_YEARS` years.

    Raises:
        ValueError: with a one-line human message.
    """
    text = expression.strip()
    if text.startswith("@"):
        if text not in CRON_MACROS:
            from bees_cli.suggest import did_you_mean

            raise ValueError(f"unknown cron shorthand '{text}'{did_you_mean(text, CRON_MACROS)}")
        return
    fields = text.split()
    if len(fields) != 5:
        raise ValueError(
            f"a cron expression has 5 fields (minute hour day month weekday), got {len(fields)}"
        )
    from croniter import CroniterBadDateError, croniter

    if not croniter.is_valid(text):
        raise ValueError(f"not a valid cron expression: '{expression}'")
    try:
        croniter(text, datetime.now(UTC), max_years_between_matches=CRON_HORIZON_YEARS).get_next()
    except CroniterBadDateError:
        raise ValueError(f"cron '{expression}' never fires") from None


def check_timezone(name: str) -> None:
    """Check an IANA time zone name such as ``Europe/Paris`` (zoneinfo, with tzdata).

    Raises:
        ValueError: unknown zone, with the nearest known name when there is one.
    """
    import zoneinfo

    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        from bees_cli.suggest import did_you_mean

        hint = did_you_mean(name, zoneinfo.available_timezones())
        raise ValueError(f"unknown time zone '{name}'{hint}") from None


def check_title(template: str) -> None:
    """Check a title template: only ``{schedule}``, ``{date}`` and ``{time}`` placeholders.

    Raises:
        ValueError: a broken brace or an unknown placeholder.
    """
    from bees_cli.suggest import did_you_mean

    try:
        parts = list(string.Formatter().parse(template))
    except ValueError:
        raise ValueError(
            "unbalanced '{' or '}' in the title; write '{{' or '}}' for a brace"
        ) from None
    for _text, field, spec, conversion in parts:
        if field is None:
            continue
        if field not in TITLE_FIELDS or spec or conversion:
            allowed = ", ".join("{" + name + "}" for name in TITLE_FIELDS)
            raise ValueError(
                f"unknown placeholder '{{{field}}}' in the title{did_you_mean(field, TITLE_FIELDS)}"
                f" (allowed: {allowed})"
            )


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
        "agents as the function's parameters).",
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
    ``${BEES_PYTHON}`` are expanded as in a runner's.
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
    start_seconds: Annotated[float, Field(gt=0)] = Field(
        default=MCP_START_SECONDS,
        description="Seconds allowed for starting or reaching the server and for each of its "
        "answers before a tool call (handshake, list of tools).",
    )
    call_seconds: Annotated[float, Field(gt=0)] = Field(
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
