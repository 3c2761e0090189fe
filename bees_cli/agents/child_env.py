"""The one environment Bees gives a child process: a small base, the ``BEES_*`` it calls
back with, and the names it declared; nothing else of ``bees run``'s (issue 25, point 4).

A command agent's program (a stage's or a piece's), a script add-on's program and an MCP
add-on's local server all start with :func:`child_environment`. So the model API key, an
agent's ``api_key_env`` or another add-on's token never reach a program that did not name
it: secrets stay where they belong.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["BASE_VARIABLES", "BEES_PREFIX", "BEES_WITHHELD", "child_environment"]

BASE_VARIABLES: tuple[str, ...] = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "LC_ALL",
    "LC_CTYPE", "TZ", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT", "VIRTUAL_ENV",
)
"""What every child gets from this process's environment when set: where programs are,
whose home, the language and time zone, the temporary folder (and ``VIRTUAL_ENV``, so a
``bees`` found on ``PATH`` runs as this one)."""

BEES_PREFIX = "BEES_"
"""Variables starting with it reach the child: its item, stage, folders, and how it calls
back (``BEES_HOME``, ``BEES_TEMPORAL_ADDRESS``) for ``bees action`` and ``bees delegate``."""

BEES_WITHHELD: frozenset[str] = frozenset({"BEES_TOKEN"})
"""``BEES_*`` variables never handed to a child: the person's Bees Cloud token."""

SIGN_IN_HALF = "BEES_CLOUD_URL"
"""Withheld too when the token is set in the environment (a runner signs in by both): a
child's own ``bees`` given the URL without the token refuses to start ("BEES_CLOUD_URL is
set but no token is"), so a runner's agent could not run ``bees action`` (issue 27)."""


def child_environment(environ: Mapping[str, str], declared: Iterable[str] = (), *,
                      bees: bool = True) -> dict[str, str]:
    """Return the environment of a child process Bees starts (issue 25, point 4).

    Args:
        environ: where values are read (``bees run``'s environment, or the stage's).
        declared: the names the child declared (an add-on's ``connection.env``, an MCP
            server's ``env``, the variables a command agent's ``runner.env`` sets).

    Returns:
        name → value: each of :data:`BASE_VARIABLES`, each ``BEES_*`` (with ``bees``; never
        :data:`BEES_WITHHELD`, nor :data:`SIGN_IN_HALF` with the token set) and each
        declared name that is set in ``environ``; nothing else, so never a model's API key
        unless the child itself declared it.
    """
    wanted = set(BASE_VARIABLES) | set(declared)
    withheld = BEES_WITHHELD | ({SIGN_IN_HALF} if BEES_WITHHELD & environ.keys() else set())
    return {name: value for name, value in environ.items()
            if name in wanted or (bees and name.startswith(BEES_PREFIX)
                                  and name not in withheld)}
