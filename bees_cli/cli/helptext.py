"""A command's help as a person reads it: an ``Example:`` paragraph shown as a command to paste,
never wrapped inside a word or a path (issue 28, point 3)."""

from __future__ import annotations

import inspect
import re
from typing import Any

from typer.core import TyperCommand, TyperGroup

EXAMPLE = "Example:"
CONTINUED = " \\"
_CHUNK = re.compile(r"""(?:"[^"]*"|'[^']*'|\S)+""")


def _chunks(command: str) -> list[str]:
    """``command`` cut where a line may break: before each option (a word starting with
    ``-``) and before ``&&`` or ``|``; quoted words stay whole."""
    chunks: list[str] = []
    for word in _CHUNK.findall(command):
        if chunks and not (word.startswith("-") or word in ("&&", "|")):
            chunks[-1] += " " + word
        else:
            chunks.append(word)
    return chunks


def example_lines(command: str, width: int) -> list[str]:
    """The lines that show ``command`` within ``width`` columns: whole when it fits, else cut
    before options with a shell continuation (`` \\``), continuation lines indented by 4.

    A chunk (an option and its value) longer than a line stays whole: a path is never cut.
    """
    if len(command) <= width:
        return [command]
    lines: list[str] = []
    for chunk in _chunks(command):
        if not lines:
            lines.append(chunk)
        elif len(lines[-1]) + 1 + len(chunk) + len(CONTINUED) <= width:
            lines[-1] += " " + chunk
        else:
            lines[-1] += CONTINUED
            lines.append("    " + chunk)
    return lines


def with_examples(text: str, width: int) -> str:
    """``text`` (a help text) with each ``Example:`` paragraph made a no-rewrap block (click's
    ``\\b``): ``Example:`` on its own line, then the command indented by 2 and laid out by
    :func:`example_lines` for ``width - 2`` columns."""
    paragraphs = []
    for paragraph in text.split("\n\n"):
        rows = [row.strip() for row in paragraph.strip("\n").splitlines()]
        if rows and rows[0].startswith(EXAMPLE):
            command = " ".join([rows[0].removeprefix(EXAMPLE), *rows[1:]]).strip()
            block = ["\b", EXAMPLE, *("  " + line for line in example_lines(command, width - 2))]
            paragraphs.append("\n".join(block))
        else:
            paragraphs.append(paragraph)
    return "\n\n".join(paragraphs)


def format_help_text(command: Any, ctx: Any, formatter: Any) -> None:
    """Write ``command``'s help text as click does, its examples through
    :func:`with_examples`."""
    text = inspect.cleandoc(command.help).partition("\f")[0] if command.help else ""
    if text:
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(with_examples(text, formatter.width - formatter.current_indent))


class HelpCommand(TyperCommand):
    """A leaf command whose help shows its examples whole (:func:`with_examples`)."""

    def format_help_text(self, ctx: Any, formatter: Any) -> None:
        """Write the help text with its examples whole."""
        format_help_text(self, ctx, formatter)


class HelpGroup(TyperGroup):
    """A command group whose help shows its examples whole (:func:`with_examples`)."""

    def format_help_text(self, ctx: Any, formatter: Any) -> None:
        """Write the help text with its examples whole."""
        format_help_text(self, ctx, formatter)
