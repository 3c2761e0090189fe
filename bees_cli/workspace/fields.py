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
