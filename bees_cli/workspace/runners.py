"""The runner of an agent (``runner:`` in ``agents/NAME.yaml``): a command, or a model over HTTP.

:mod:`bees_cli.workspace.models` re-exports these models (``models.CommandRunner``, ...).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from bees_cli.rules import (
    MODEL_CALL_MOST_SECONDS,
    MODEL_CALL_SECONDS,
    MODEL_READ_SECONDS,
    MODEL_REPLY_BYTES,
    MODEL_TOOL_CALLS,
)
from bees_cli.workspace.fields import (
    MOST_BUDGET_TOKENS,
    MOST_CONTEXT_TOKENS,
    MOST_COUNT,
    MOST_REPLY_BYTES,
    MOST_REPLY_TOKENS,
    SEED_RANGE,
    EnvName,
    Name,
    Strict,
    Text,
    ToolRef,
    Url,
)


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

    input_per_million: Annotated[float, Field(ge=0, allow_inf_nan=False)] = Field(
        description="Price of one million prompt (input) tokens."
    )
    output_per_million: Annotated[float, Field(ge=0, allow_inf_nan=False)] = Field(
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
    timeout_seconds: Annotated[float, Field(gt=0, le=MODEL_CALL_MOST_SECONDS)] = Field(
        default=MODEL_READ_SECONDS,
        description="Seconds allowed for connecting, and for each read and write of one call.",
    )
    deadline_seconds: Annotated[float, Field(gt=0, le=MODEL_CALL_MOST_SECONDS)] = Field(
        default=MODEL_CALL_SECONDS,
        description="Seconds one call may take in all, from sending to the reply's last "
        "byte; a slower call is cut off and tried again.",
    )
    max_reply_bytes: Annotated[int, Field(ge=1, le=MOST_REPLY_BYTES)] = Field(
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
    max_turns: Annotated[int, Field(ge=1, le=MOST_COUNT)] = Field(
        default=20, description="At most this many model calls per stage; then the stage fails."
    )
    token_budget: Annotated[int, Field(ge=1, le=MOST_BUDGET_TOKENS)] | None = Field(
        default=None,
        description="At most this many tokens (prompt plus completion, summed over the "
        "stage's calls); then the stage fails (default: no budget).",
    )
    max_reply_tokens: Annotated[int, Field(ge=1, le=MOST_REPLY_TOKENS)] | None = Field(
        default=None,
        description="Sent as max_tokens: at most this many tokens in one reply "
        "(default: the server's). In json mode it also bounds the answer's strings, so a "
        "grammar-following server always closes the JSON within it.",
    )
    max_tool_calls: Annotated[int, Field(ge=1, le=MOST_COUNT)] = Field(
        default=MODEL_TOOL_CALLS,
        description="A reply asking for more tool calls than this runs none of them; the "
        "model is told once, then the stage fails.",
    )
    # left out of a dump when unset: an older snapshot keeps its digest
    context_tokens: Annotated[int, Field(ge=256, le=MOST_CONTEXT_TOKENS)] | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="The model's context in tokens (default: what the server says, as "
        "llama.cpp's /props does, else 4096: set it for a larger model behind Ollama or a "
        "cloud API). When a request (estimated at 4 characters a token) nears it, less the "
        "reply's max_reply_tokens (else a quarter of it), the oldest tool results are "
        "shortened to a note; never the instructions, the task or the last turn.",
    )
    temperature: Annotated[float, Field(ge=0, le=2)] | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="Sampling temperature sent with each request, 0 to 2 (default: the "
        "server's); 0 with a seed makes runs repeatable on servers that honour them.",
    )
    seed: Annotated[int, Field(ge=SEED_RANGE[0], le=SEED_RANGE[1])] | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="Sampling seed sent with each request (default: the server's).",
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
