"""The admin routes of Bees Cloud (``/v1/admin/...``): teams and people, behind the admin token.

See :mod:`bees_cli.cloud.wire_admin` for the calls. The storage's user errors become refusals
here: no such team or person -> 404 (``not_found``), a bad name or email -> 422 (``invalid``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from fastapi import Depends, FastAPI, Request
from fastapi.responses import Response

from bees_cli.cloud import wire
from bees_cli.cloud.server import refusals
from bees_cli.cloud.server.admin_tokens import AdminTokens
from bees_cli.cloud.server.storage import Storage
from bees_cli.cloud.wire_admin import (
    AdminPerson,
    AdminPersonAnswer,
    AdminRevokeAnswer,
    AdminRunner,
    AdminRunnerAnswer,
    AdminTeam,
    AdminTeamAnswer,
)
from bees_cli.cloud.wire_runners import AdminRunnerRetire, RunnerRetired
from bees_cli.errors import NotFound, UserError

T = TypeVar("T")


@contextmanager
def _as_refusals() -> Iterator[None]:
    """Turn the storage's :class:`NotFound` / :class:`UserError` into 404 / 422 refusals."""
    try:
        yield
    except NotFound as error:
        raise refusals.NotFound("not_found", error.message, hint=error.hint) from None
    except UserError as error:
        raise refusals.Invalid("invalid", error.message, hint=error.hint) from None


def register(app: FastAPI, storage: Storage, responses: dict[int | str, dict[str, Any]]) -> None:
    """Add the admin routes to ``app`` over ``storage``.

    Args:
        app: the Bees Cloud app (its handlers turn refusals into answers).
        storage: the data (its ``db`` holds the admin token).
        responses: the error answers to document on each route.
    """

    def admin_token(request: Request) -> None:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        AdminTokens(storage.db).check(token.strip() if scheme.lower() == "bearer" else "")

    guard = [Depends(admin_token)]

    def answer(model: Any) -> Response:
        return Response(content=model.model_dump_json(), media_type="application/json")

    def run(work: Callable[[], T]) -> T:
        with _as_refusals():
            return work()

    @app.post("/v1/admin/teams", response_model=AdminTeamAnswer, responses=responses,
              dependencies=guard)
    def add_team(body: AdminTeam) -> Response:
        """Create a team (``created`` is False when it existed already). Admin token only."""
        created = run(lambda: storage.add_team(body.name))
        return answer(AdminTeamAnswer(team=body.name, created=created))

    @app.post("/v1/admin/people", response_model=AdminPersonAnswer, responses=responses,
              dependencies=guard)
    def add_person(body: AdminPerson) -> Response:
        """Add a person to a team and return a new bearer token (shown once). Admin token only."""
        email = run(lambda: _email(body.email))
        token = run(lambda: storage.add_person(email, body.team))
        return answer(AdminPersonAnswer(email=email, team=body.team, token=token))

    @app.post("/v1/admin/people/revoke", response_model=AdminRevokeAnswer, responses=responses,
              dependencies=guard)
    def revoke_person(body: AdminPerson) -> Response:
        """Revoke every token of a person (owners and keys stay on record). Admin token only."""
        email = body.email.strip().lower()
        count = run(lambda: storage.revoke_person(email, body.team))
        return answer(AdminRevokeAnswer(email=email, team=body.team, revoked=count))

    @app.post("/v1/admin/runners", response_model=AdminRunnerAnswer, responses=responses,
              dependencies=guard)
    def add_runner(body: AdminRunner) -> Response:
        """Add a runner to a pool of a team and return its token (shown once). Admin token
        only."""
        token = run(lambda: storage.add_runner(body.name, body.pool, body.team))
        return answer(AdminRunnerAnswer(name=body.name, pool=body.pool, team=body.team,
                                        token=token))

    @app.post("/v1/admin/runners/retire", response_model=RunnerRetired, responses=responses,
              dependencies=guard)
    def retire_runner(body: AdminRunnerRetire) -> Response:
        """Retire a runner: its token and machine id revoked first (fenced), then its items
        offered back to its pool. Admin token only."""
        return answer(run(lambda: storage.retire_runner(body.name, body.team)))


def _email(value: str) -> str:
    try:
        return wire.check_email(value)
    except ValueError as error:
        raise UserError(f"bad email {value!r}: {error}") from None
