"""What an item id and a person's email look like: the one check of each that Bees makes."""

from __future__ import annotations

import re

from bees_cli.errors import UserError

ALPHABET = frozenset("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
"""The characters of an item id: Crockford's base 32 (digits and A-Z without I, L, O, U), as
``str(ULID())`` writes it; lower case is read as upper case."""

ITEM_ID_LENGTH = 26
"""Characters in a whole item id (a ULID: 48 bits of time and 80 random bits)."""

MIN_PREFIX = 6
"""The fewest characters of an id that name an item where a unique prefix is enough
(:meth:`bees_cli.record.local.LocalRecord.item`)."""

EXAMPLE = "01JH3QX5Z8KZ2W4M6N8P0R2T4V"
"""An item id as ``bees status`` shows it, for messages."""

SHAPE = (f"an item id is {ITEM_ID_LENGTH} letters and digits (0-9 and A-Z without I, L, O "
         f"or U), like {EXAMPLE}")
"""What an item id looks like, in words, for every message that refuses one."""

_SHOWN = 40  # characters of a refused id quoted in the message


def check_item_id(text: str, *, prefix: bool) -> str:
    """Return ``text`` as an item id (surrounding spaces dropped, upper case), or refuse it.

    DESIGN.md, Words: a work item's id is a sortable random id; this is the one place that
    says what one looks like, so a command refuses anything else before it touches the disk,
    and no id names a path outside the runs folder (an id has no ``/``, ``.`` or NUL).

    Args:
        text: the id as given (a command's argument, ``BEES_ITEM_ID``, a folder's name).
        prefix: True where a unique prefix of at least :data:`MIN_PREFIX` characters is
            enough (the command resolves it in the local record); False where only the
            whole id will do (``bees continue``, a run folder's name).

    Returns:
        The id in upper case, or its prefix.

    Raises:
        UserError: not an item id (exit 2); the message quotes at most 40 characters of it
            and says what an id looks like.
    """
    wanted = text.strip().upper()
    shortest = MIN_PREFIX if prefix else ITEM_ID_LENGTH
    if shortest <= len(wanted) <= ITEM_ID_LENGTH and all(c in ALPHABET for c in wanted):
        return wanted
    shown = repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")
    enough = (f"its first {MIN_PREFIX} or more are enough" if prefix
              else "give the whole id")
    raise UserError(f"not an item id: {shown}: {SHAPE}; {enough}",
                    hint="`bees status` lists the items and their ids")


_NOT_IN_EMAIL = (r"@\s/\\\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2064"
                 r"\ufeff")
EMAIL_PATTERN = rf"^[^{_NOT_IN_EMAIL}]{{1,100}}@[^{_NOT_IN_EMAIL}]{{1,200}}$"
"""A person's email address: one ``@`` with 1-100 characters before it and 1-200 after, none
a space, ``/``, ``\\``, a control or an invisible formatting character.

The one rule for every email Bees reads: a schedule's ``owner`` (the workspace models use the
pattern, so the JSON Schema states it too), this computer's person (``bees whoami
--set-person``) and the people of Bees Cloud. Written with escapes that Python's ``re``, the
Rust ``regex`` of pydantic-core and JSON Schema (ECMAScript) all read alike."""

_EMAIL_RE = re.compile(EMAIL_PATTERN)


def check_email(text: str) -> str:
    """Return ``text`` when it is an email address by :data:`EMAIL_PATTERN`.

    Why: the workspace, this computer and Bees Cloud once had three checks that disagreed
    (``maya/x@example.com`` was a schedule owner no Bees Cloud would take); now all three
    call this one.

    Raises:
        ValueError: not an email address.
    """
    if _EMAIL_RE.fullmatch(text) is None:  # fullmatch: ``$`` would allow a final newline
        raise ValueError("not an email address")
    return text
