"""The lean claim routes answer exactly as the FastAPI routes do, byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from bees_cli.cloud.server.app import BodyLimit, asgi, create_app
from bees_cli.cloud.server.claim_routes import ClaimRoutes, bearer_token
from bees_cli.cloud.server.storage import Storage

OWNER = {"item_id": "report-1", "machine_id": "laptop", "computer_name": "Maya's laptop"}
KEY = {
    "schedule_id": "weekly",
    "scheduled_time": "2025-01-06T09:00:00Z",
    "machine_id": "laptop",
    "computer_name": "Maya's laptop",
}
WALL = KEY | {"scheduled_time": "2025-01-13T09:00:00Z", "local_time": "2025-01-13T10:00"}
WALL |= {"zone": "Europe/Paris", "tz_version": "2025a"}


@pytest.fixture
def storage(tmp_path: Path) -> Any:
    storage = Storage(f"sqlite:///{tmp_path / 'routes.db'}")
    storage.add_team("acme")
    yield storage
    storage.close()


def _cases(maya: str, sam: str) -> list[tuple[str, str, dict[str, str], bytes]]:
    """(label, path, headers, body) of each request sent to both stacks."""
    import json

    def body(value: object) -> bytes:
        return json.dumps(value).encode()

    as_json = {"content-type": "application/json"}
    m = as_json | {"authorization": f"Bearer {maya}"}
    s = as_json | {"authorization": f"bearer  {sam} "}
    return [
        ("owner", "/v1/owners/claim", m, body(OWNER)),
        ("taken", "/v1/owners/claim", s, body(OWNER | {"machine_id": "desk"})),
        ("not yours", "/v1/owners/claim", s, body(OWNER | {"item_id": "other"})),
        ("key", "/v1/keys/claim", m, body(KEY)),
        ("wall key", "/v1/keys/claim", m, body(WALL)),
        ("key taken", "/v1/keys/claim", s, body(WALL | {"machine_id": "desk"})),
        ("no token", "/v1/owners/claim", as_json, body(OWNER)),
        ("bad token", "/v1/owners/claim", as_json | {"authorization": "Bearer x.y.z"}, body(OWNER)),
        ("basic", "/v1/keys/claim", as_json | {"authorization": f"Basic {maya}"}, body(KEY)),
        ("not json", "/v1/owners/claim", m, b"{nope"),
        ("missing field", "/v1/owners/claim", m, body({"item_id": "x"})),
        ("extra field", "/v1/keys/claim", m, body(KEY | {"more": 1})),
        ("bad id", "/v1/owners/claim", m, body(OWNER | {"item_id": "../x"})),
        ("a list", "/v1/owners/claim", m, body([OWNER])),
        ("text", "/v1/owners/claim", m | {"content-type": "text/plain"}, body(OWNER)),
        ("no type", "/v1/owners/claim", {"authorization": f"Bearer {maya}"}, body(OWNER)),
        (
            "charset",
            "/v1/owners/claim",
            m | {"content-type": "application/json; charset=utf-8"},
            body(OWNER),
        ),
    ]


async def test_each_claim_is_answered_as_fastapi_answers_it(storage: Storage) -> None:
    maya = storage.add_person("maya@example.com", "acme")
    sam = storage.add_person("sam@example.com", "acme")
    storage.claim_owner(maya, _owner_claim("other", "laptop-sam-cannot-use"))
    lean = asgi(storage)
    plain = BodyLimit(create_app(storage))
    passed_on = []
    assert isinstance(lean.app, ClaimRoutes)
    framework = lean.app.app

    async def spy(scope: Any, receive: Any, send: Any) -> None:
        passed_on.append(False)
        await framework(scope, receive, send)

    lean.app.app = spy  # type: ignore[assignment]
    answers = []
    for label, path, headers, body in _cases(maya, sam):
        got = []
        for stack in (lean, plain):
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=stack), base_url="http://x"
            ) as client:
                got.append(await client.post(path, headers=headers, content=body))
        first, second = got
        assert (first.status_code, first.content) == (second.status_code, second.content), label
        assert first.headers == second.headers, label
        answers.append((label, first.status_code))
    assert answers == [
        ("owner", 200),
        ("taken", 200),
        ("not yours", 403),
        ("key", 200),
        ("wall key", 200),
        ("key taken", 200),
        ("no token", 401),
        ("bad token", 401),
        ("basic", 401),
        ("not json", 400),
        ("missing field", 422),
        ("extra field", 422),
        ("bad id", 422),
        ("a list", 422),
        ("text", 422),
        ("no type", 422),
        ("charset", 200),
    ]
    # The framework saw only what the lean routes passed on: no token, bad bodies, and
    # the content types they leave to it.
    assert len(passed_on) == 9


def _owner_claim(item: str, machine: str) -> Any:
    from bees_cli.cloud import wire

    return wire.OwnerClaim(item_id=item, machine_id=machine, computer_name="c")


def test_bearer_token_reads_the_header_as_the_app_does() -> None:
    assert bearer_token([(b"authorization", b"Bearer  t.o.k ")]) == "t.o.k"
    assert bearer_token([(b"authorization", b"BEARER x")]) == "x"
    assert bearer_token([(b"authorization", b"Basic x")]) is None
    assert bearer_token([(b"authorization", b"Bearer ")]) is None
    assert bearer_token([(b"accept", b"*/*")]) is None
