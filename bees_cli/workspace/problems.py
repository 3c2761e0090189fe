"""One problem found in a workspace: where it is (file, line, column, field) and what is wrong."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True, order=True)
class Problem:
    """A problem (or warning) at a place in a workspace file.

    Args:
        file: path relative to the workspace folder, with ``/`` separators.
        line: 1-based line; 1 when the problem concerns the whole file.
        column: 1-based column.
        field: dotted path of the offending field, e.g. ``stages[0].agents[0]``; ``""``
            when the problem is about the file itself.
        message: one human line, e.g. ``unknown agent 'writr' — did you mean 'writer'?``.
        severity: ``"error"`` (the workspace is invalid) or ``"warning"`` (it still loads).
    """

    file: str
    line: int
    column: int
    field: str
    message: str
    severity: Literal["error", "warning"] = "error"

    def format(self) -> str:
        """Return ``FILE:LINE:COL  field  message`` (the field part left out when empty)."""
        where = f"{self.file}:{self.line}:{self.column}"
        message = self.message if self.severity == "error" else f"warning: {self.message}"
        return f"{where}  {self.field}  {message}" if self.field else f"{where}  {message}"

    def to_json(self) -> dict[str, Any]:
        """Return ``{"file", "line", "column", "field", "message", "severity"}``."""
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "field": self.field,
            "message": self.message,
            "severity": self.severity,
        }


def field_path(path: tuple[str | int, ...]) -> str:
    """Render a path of keys and indexes as ``stages[0].agents[1]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out
