"""Did-you-mean suggestions for near names (difflib, standard library)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return `` — did you mean 'X'?`` for the closest of ``choices`` to ``name``, or ``""``.

    Closeness is difflib's ratio, cut off at 0.6; case is ignored when comparing.
    """
    options = {choice.lower(): choice for choice in choices}
    match = difflib.get_close_matches(name.lower(), list(options), n=1, cutoff=0.6)
    return f" — did you mean '{options[match[0]]}'?" if match else ""
