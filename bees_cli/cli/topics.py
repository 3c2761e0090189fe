"""The help topics ``bees help json`` and ``bees help exit-codes``: one source for the terminal
and for docs/ci.md's exit-code table (tests/cli/test_help.py), importable without typer."""

from __future__ import annotations

import textwrap

EXIT_CODES: list[tuple[int, str]] = [
    (0, "done"),
    (1, "failed: something not found, an I/O error, the engine, Bees Cloud or a model "
        "failed; `item create --wait` and `item watch`: the item failed"),
    (2, "bad usage or an invalid workspace (`bees validate` and `bees doctor` agree)"),
    (3, "refused: not the owner, key taken, checkpoint invalid, wrong state; "
        "`item create --wait` and `item watch --until-waiting`: the item waits for a person"),
    (130, "interrupted (Ctrl-C); but a Ctrl-C (or SIGTERM) is how `bees run` and `bees app` "
          "are stopped: one that stops cleanly exits 0"),
    (141, "the reader of the output went away (`bees item show \"$ITEM\" | head -1`): the "
          "command stops there quietly, as a program SIGPIPE stopped does; `set -o pipefail` "
          "sees it"),
]
"""Each exit code of ``bees`` and when a command ends with it (the values of
:class:`bees_cli.cli.boundary.ExitCode`), code written as in markdown."""

JSON: list[str] = [
    "Every command that prints data or changes state takes --json, but bees action (an "
    "agent's call: it prints the add-on's own output and exits with its code) and the "
    "long-running bees run, bees cloud serve and bees model serve (log lines). stdout then "
    "holds one "
    "JSON object with \"version\": 1 (bees item watch --json: one object per line); lists "
    "sit under a named key (items, approvals...), an item's id is always item_id, and times "
    "are RFC 3339 UTC ending in Z. Talk and progress go to stderr. Data holds machine "
    "values (status, reason codes with their values), never the sentences the text view "
    "makes of them. Each command's JSON Schema is in schemas/output/.",
    "An error in JSON mode is on stdout too:",
    '{"version": 1, "error": {"code": "...", "message": "...", "hint": "..."}}',
    "code is a stable word (not_found, refused, usage...), or Bees Cloud's own reason when "
    "it said no (not_owner, key_has_item...), with the HTTP status. The exit code says what "
    "kind of end it was: bees help exit-codes.",
]
"""The ``json`` topic's paragraphs; one that starts with ``{`` is shown as it is."""

TOPICS = {"json": "JSON output and errors (--json):",
          "exit-codes": "Exit codes of every bees command:"}
"""Each topic's name and its first line."""


def _plain(text: str) -> str:
    """``text`` without markdown: code marks dropped, an escaped ``|`` plain."""
    return text.replace("`", "").replace("\\|", "|")


def exit_codes_markdown() -> str:
    """The exit-code table as docs/ci.md holds it (a markdown table, ``|`` escaped)."""
    rows = ["| code | meaning |", "|---|---|"]
    rows += [f"| {code} | {meaning.replace('|', chr(92) + '|')} |" for code, meaning in EXIT_CODES]
    return "\n".join(rows) + "\n"


def render(topic: str, columns: int) -> str:
    """The text of ``topic`` (a key of :data:`TOPICS`) laid out in ``columns``, without the
    final newline.

    Raises:
        KeyError: ``topic`` is not a topic.
    """
    from bees_cli.cli.roothelp import INDENT, _definitions

    lines = [TOPICS[topic], ""]
    if topic == "exit-codes":
        lines += _definitions([(str(code), _plain(meaning)) for code, meaning in EXIT_CODES],
                              columns, names=3)
        return "\n".join(lines)
    for i, paragraph in enumerate(JSON):
        if i:
            lines.append("")
        if paragraph.startswith("{"):
            lines.append(" " * INDENT + paragraph)
        else:
            lines += textwrap.wrap(paragraph, columns, initial_indent=" " * INDENT,
                                   subsequent_indent=" " * INDENT, break_on_hyphens=False)
    return "\n".join(lines)
