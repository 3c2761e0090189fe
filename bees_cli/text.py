"""A work item's title checked, and any text made safe to print on a terminal."""

from __future__ import annotations

import unicodedata

MOST_TITLE_CHARS = 200
"""Longest title of a work item (characters). Why: a title is one cell of ``bees status``
and one line of ``bees item show``; 9,000 characters is a paste gone wrong, not a title."""

BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Unicode's bidirectional embeddings, overrides and isolates (U+202A–U+202E,
U+2066–U+2069): they reorder the text after them, so a title could show other words than
it holds ("Trojan Source")."""

REPLACEMENT = "\ufffd"
"""What :func:`printable` shows for a control character (U+FFFD, the replacement character)."""


def _control(char: str) -> bool:
    return unicodedata.category(char) == "Cc"


def title_problem(title: str) -> str | None:
    """Return why ``title`` cannot be a work item's title, or None when it can.

    A title is one line of plain text: not empty (nor only spaces), no control character
    (category Cc: tab, line breaks, ESC, BEL…), no bidi control (:data:`BIDI_CONTROLS`), at
    most :data:`MOST_TITLE_CHARS` characters. Positions count from 1.
    """
    if not title.strip():
        return "--title is empty; leave it out to use the process's title"
    for position, char in enumerate(title, start=1):
        kind = ("control characters" if _control(char)
                else "bidi controls" if char in BIDI_CONTROLS else None)
        if kind is not None:
            return (f"a title cannot hold {kind}: U+{ord(char):04X} at character "
                    f"{position}; write it on one line of plain text")
    if len(title) > MOST_TITLE_CHARS:
        return f"a title is at most {MOST_TITLE_CHARS} characters; this one has {len(title)}"
    return None


def printable(text: str) -> str:
    """Return ``text`` safe to print on a terminal: tabs and line breaks become spaces,
    every other control character and bidi control becomes U+FFFD.

    Why: text that reaches this computer from elsewhere (the shared record, an older
    version's row, an agent's stderr) is not checked here; an ESC in it would drive the
    terminal.
    """
    if text.isprintable() and not BIDI_CONTROLS.intersection(text):
        return text  # the common case, without a pass per character
    return "".join(" " if char in "\t\r\n" else REPLACEMENT
                   if _control(char) or char in BIDI_CONTROLS else char for char in text)
