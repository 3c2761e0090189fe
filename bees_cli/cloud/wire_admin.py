"""Wire models of the Bees Cloud admin API (``/v1/admin/...``), shared by the server and the CLI.

Every admin request carries ``Authorization: Bearer <admin token>``: the token the server
wrote at its first start (``bees cloud serve`` prints where), never a person's token::

    POST /v1/admin/teams          AdminTeam   -> AdminTeamAnswer    create a team (or find it)
    POST /v1/admin/people         AdminPerson -> AdminPersonAnswer  add a person, new token
    POST /v1/admin/people/revoke  AdminPerson -> AdminRevokeAnswer  revoke a person's tokens
    POST /v1/admin/runners        AdminRunner -> AdminRunnerAnswer  add a runner, new token

Errors are the API's usual ``{"error": {"code", "message", "hint"}}``: 401 for a missing or
wrong admin token, 404 for no such team or person, 422 for a bad name or email.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

from bees_cli.cloud.wire import Id, Wire

ADMIN_TOKEN_PREFIX = "bees-admin"
"""First part of the admin token: ``bees-admin.<16 hex token id>.<secret>``."""

EmailText = Annotated[str, StringConstraints(min_length=1, max_length=320)]
"""An email address as sent; the server checks it (:func:`bees_cli.ids.check_email`)."""


class AdminTeam(Wire):
    """Create team ``name`` (an id: letters, digits and ``. _ : @ + = -``)."""

    name: Id


class AdminTeamAnswer(Wire):
    """The team, and whether this request created it (False: it existed already)."""

    team: str
    created: bool


class AdminPerson(Wire):
    """A person of a team, by email (any case; stored in lower case)."""

    email: EmailText
    team: Id


class AdminPersonAnswer(Wire):
    """The person added and their new bearer token (shown this once; only its hash is kept)."""

    email: str
    team: str
    token: str


class AdminRevokeAnswer(Wire):
    """The person whose tokens were revoked and how many were live."""

    email: str
    team: str
    revoked: int


class AdminRunner(Wire):
    """Add runner ``name`` of ``pool`` to ``team`` (each an id)."""

    name: Id
    pool: Id
    team: Id


class AdminRunnerAnswer(Wire):
    """The runner added and its token (shown this once; only its hash is kept)."""

    name: str
    pool: str
    team: str
    token: str
