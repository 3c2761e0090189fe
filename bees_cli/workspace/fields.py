"""The field types every workspace model shares: names, patterns, and the strict base model."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
"""Names of objects, stages and actions: safe as file names and ids, no dots (dots join
``addon.action`` and ``process.stage``)."""

NAME_RE = re.compile(NAME_PATTERN)

TOOL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\.[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
URL_PATTERN = r"^https?://[^\s/?#]+[^\s]*$"
TIME_PATTERN = r"^([01]?[0-9]|2[0-3]):[0-5][0-9]$"

MOST_COUNT = 1000
"""Most runs at once, model calls per stage or tool calls per reply a workspace may set.

Why: an unbounded count took any number (``99999999999999999999999999``); the run then failed
far from the file. A thousand is far above what any stage uses (defaults: 20 calls, 50 tool
calls)."""
MOST_REPLY_TOKENS = 1_048_576
"""Most ``max_reply_tokens`` (1 Mi tokens): above it servers refuse the call (HTTP 400), as
they do a number that does not fit their integers."""
MOST_CONTEXT_TOKENS = 2_097_152
"""Most ``context_tokens`` (2 Mi tokens): the longest context of any model served today."""
MOST_BUDGET_TOKENS = 1_000_000_000
"""Most ``token_budget`` of a stage (a billion tokens)."""
MOST_REPLY_BYTES = 1_073_741_824
"""Most ``max_reply_bytes`` (1 GiB): a reply is held in memory whole."""
MOST_PIECE_DEPTH = 10
"""Most ``max_piece_depth``: pieces nested deeper than this are a loop, not a plan."""
MOST_WAIT_SECONDS = 86_400.0
"""Most seconds an MCP server's start or tool call may be given (a day; ``.inf`` is refused)."""
SEED_RANGE = (-(2**63), 2**63 - 1)
"""A seed is sent as a 64-bit integer (OpenAI's and llama.cpp's ``seed``)."""

Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]
ToolRef = Annotated[str, StringConstraints(pattern=TOOL_PATTERN)]
"""An add-on action named as ``ADDON.ACTION``."""
EnvName = Annotated[str, StringConstraints(pattern=ENV_NAME_PATTERN)]
"""The name of an environment variable, e.g. ``OPENAI_API_KEY``."""
Url = Annotated[str, StringConstraints(pattern=URL_PATTERN)]
Text = Annotated[str, StringConstraints(min_length=1)]

class Strict(BaseModel):
    """Base of every workspace model: unknown keys are rejected, values are not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
