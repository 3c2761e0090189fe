"""Property-based fuzzing of the whole Bees Cloud HTTP API with schemathesis: no 5xx.

Every operation of the OpenAPI document gets generated requests, valid and invalid,
sent over real HTTP to the app on a fresh SQLite database; no answer may be a 5xx.
Bounded in examples per operation so the whole run takes well under a minute.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.schemas import APIOperation

from bees_cli.cloud.server.storage import Storage
from tests.servers import uvicorn_in_thread

EXAMPLES = 25
"""Generated requests per operation and generation mode."""


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """The app on uvicorn in a thread over a fresh SQLite file: (URL, a member's token, the
    admin token)."""
    from bees_cli.cloud.server.admin_tokens import AdminTokens
    from bees_cli.cloud.server.app import asgi, bind

    folder: Path = tmp_path_factory.mktemp("fuzz")
    storage = Storage(f"sqlite:///{folder / 'fuzz.db'}")
    storage.add_team("fuzz")
    token = storage.add_person("maya@fuzz.example", "fuzz")
    AdminTokens(storage.db).ensure(folder / "admin.token")
    admin = (folder / "admin.token").read_text().strip()
    with uvicorn_in_thread(asgi(storage), bind("127.0.0.1", 0), lifespan="on") as (_, port):
        yield f"http://127.0.0.1:{port}", token, admin
    storage.close()


def _document() -> dict[str, Any]:
    """The app's OpenAPI document (made without a database: it only describes the routes)."""
    from bees_cli.cloud.server.app import create_app

    return create_app(cast(Storage, None)).openapi()


schema = schemathesis.openapi.from_dict(_document())
MODES = [schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE]
OPERATIONS: list[APIOperation] = [
    result.ok() if isinstance(result, Ok) else pytest.fail(str(result.err()))
    for result in schema.get_all_operations()
]
"""Every operation of the document, one test each. Not ``@schema.parametrize()``: its tests
all share one node id, and pytest-xdist (which keys its work by node id) would run only one."""


@pytest.mark.parametrize("operation", OPERATIONS, ids=[op.label for op in OPERATIONS])
def test_no_request_makes_a_server_error(
    operation: APIOperation, live: tuple[str, str, str]
) -> None:
    url, token, admin = live
    if operation.path.startswith("/v1/admin/"):  # the admin routes (their own token) get past it
        token = admin

    @given(case=st.one_of([operation.as_strategy(generation_mode=mode) for mode in MODES]))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    def no_server_error(case: schemathesis.Case) -> None:
        response = case.call(base_url=url, headers={"authorization": f"Bearer {token}"},
                             timeout=30)
        case.validate_response(response, checks=[not_a_server_error])
        assert response.status_code < 500, response.text

    no_server_error()
