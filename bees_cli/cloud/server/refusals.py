"""Why Bees Cloud says no to a request: the storage's domain errors, mapped to HTTP by the app.

::

    CloudRefusal        a request the server refuses (code, message, hint, owner)
    ├── Unauthorized    no token, or one that is unknown or revoked      -> 401
    ├── Forbidden       the asker may not do this (not_owner,            -> 403
    │                   machine_not_yours, not_key_holder)
    ├── NotFound        the named thing does not exist in the team       -> 404
    │                   (no_owner, no_key)
    ├── Conflict        the state does not allow it (busy, key_has_item) -> 409
    └── Invalid         a value the wire models let through is unusable  -> 422

Only :mod:`bees_cli.cloud.server.answers` knows the status codes (``STATUS``); storage
raises these and never names a status. A record push is not refused whole: each
change that may not apply comes back in the answer (``wire.RefusedChange``).
"""

from __future__ import annotations

from bees_cli.cloud import wire


class CloudRefusal(Exception):
    """A request Bees Cloud refuses; the app answers ``{"error": …}`` with its status.

    Args:
        code: stable error code for clients, e.g. ``not_owner``.
        message: one line saying what was refused.
        hint: one line saying what to do, or None.
        owner: the owner row that holds the item (``not_owner``), or None.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        hint: str | None = None,
        owner: wire.Owner | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.owner = owner


class Unauthorized(CloudRefusal):
    """No bearer token, or a token that is unknown or revoked."""


class Forbidden(CloudRefusal):
    """The asker may not do this, e.g. release an item another machine owns."""


class NotFound(CloudRefusal):
    """The named thing does not exist in the asker's team, e.g. an item never claimed."""


class Conflict(CloudRefusal):
    """The current state does not allow it, e.g. a change to an item owned elsewhere."""


class Invalid(CloudRefusal):
    """A value that passed the wire models is still unusable, e.g. a bad id in a path."""
