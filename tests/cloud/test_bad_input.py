"""Bad input over real HTTP: a 4xx with a JSON message, never a 500, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import Team

GOOD_KEY = {
    "schedule_id": "weekly",
    "scheduled_time": "2025-01-06T09:00:00Z",
    "machine_id": "laptop",
    "computer_name": "Maya's laptop",
}
GOOD_CLAIM = {"item_id": "item-1", "machine_id": "laptop", "computer_name": "laptop"}


def _with(base: dict[str, object], **changes: object) -> bytes:
    return json.dumps(base | changes).encode()


def _change(fields: bytes) -> bytes:
    """A push of one change whose fields are the raw JSON ``fields``."""
    return (
        b'{"changes": [{"item_id": "i", "origin_time": "2025-01-06T09:00:00Z",'
        b' "machine_id": "m", "fields": ' + fields + b"}]}"
    )


CASES = [
    ("malformed json", "POST", "/v1/keys/claim", b'{"schedule_id": ', 400, "bad_json"),
    ("not an object", "POST", "/v1/keys/claim", b"[1, 2]", 422, "invalid"),
    ("wrong type", "POST", "/v1/keys/claim", _with(GOOD_KEY, schedule_id=7), 422, "invalid"),
    (
        "number for time",
        "POST",
        "/v1/keys/claim",
        _with(GOOD_KEY, scheduled_time=1),
        422,
        "invalid",
    ),
    ("unknown field", "POST", "/v1/keys/claim", _with(GOOD_KEY, priority=1), 422, "invalid"),
    ("missing field", "POST", "/v1/owners/claim", b'{"item_id": "x"}', 422, "invalid"),
    (
        "time without zone",
        "POST",
        "/v1/keys/claim",
        _with(GOOD_KEY, scheduled_time="2025-01-06T09:00:00"),
        422,
        "invalid",
    ),
    ("slash in id", "POST", "/v1/owners/claim", _with(GOOD_CLAIM, item_id="a/b"), 422, "invalid"),
    ("dots in id", "POST", "/v1/owners/claim", _with(GOOD_CLAIM, item_id="a..b"), 422, "invalid"),
    ("dot-dot id", "POST", "/v1/owners/claim", _with(GOOD_CLAIM, item_id=".."), 422, "invalid"),
    ("nul in id", "POST", "/v1/owners/claim", _with(GOOD_CLAIM, item_id="a\x00b"), 422, "invalid"),
    (
        "newline in name",
        "POST",
        "/v1/owners/claim",
        _with(GOOD_CLAIM, computer_name="a\nb"),
        422,
        "invalid",
    ),
    ("empty id", "POST", "/v1/owners/claim", _with(GOOD_CLAIM, item_id=""), 422, "invalid"),
    ("long id", "POST", "/v1/owners/claim", _with(GOOD_CLAIM, item_id="x" * 201), 422, "invalid"),
    ("control char in path", "GET", "/v1/owners/a%01b", b"", 422, "invalid"),
    ("dots in path", "GET", "/v1/owners/a..b/history", b"", 422, "invalid"),
    ("encoded slash in path", "GET", "/v1/owners/a%2Fb", b"", 404, "not_found"),
    (
        "bad sha",
        "POST",
        "/v1/owners/item-1/release",
        b'{"machine_id": "laptop", "checkpoint_sha256": "xyz"}',
        422,
        "invalid",
    ),
    (
        "epoch as string",
        "POST",
        "/v1/owners/item-1/release",
        json.dumps({"machine_id": "laptop", "checkpoint_sha256": "a" * 64, "epoch": "1"}).encode(),
        422,
        "invalid",
    ),
    (
        "fields not an object",
        "POST",
        "/v1/record/push",
        b'{"changes": [{"item_id": "i", "fields": [1], "origin_time": "2025-01-06T09:00:00Z",'
        b' "machine_id": "m"}]}',
        422,
        "invalid",
    ),
    (
        "too many changes",
        "POST",
        "/v1/record/push",
        json.dumps(
            {
                "changes": [
                    {
                        "item_id": f"i{n}",
                        "fields": {},
                        "origin_time": "2025-01-06T09:00:00Z",
                        "machine_id": "m",
                    }
                    for n in range(1001)
                ]
            }
        ).encode(),
        422,
        "invalid",
    ),
    ("negative cursor", "GET", "/v1/record/pull?since=-1", b"", 422, "invalid"),
    ("cursor past 64 bits", "GET", f"/v1/record/pull?since={2**64}", b"", 422, "invalid"),
    ("limit past 64 bits", "GET", f"/v1/record/pull?limit={2**70}", b"", 422, "invalid"),
    (
        "epoch past 64 bits",
        "POST",
        "/v1/owners/item-1/release",
        json.dumps(
            {"machine_id": "laptop", "checkpoint_sha256": "a" * 64, "epoch": 2**64}
        ).encode(),
        422,
        "invalid",
    ),
    (
        "first day of the calendar, far east",
        "POST",
        "/v1/keys/claim",
        _with(GOOD_KEY, scheduled_time="0001-01-01T00:00:00+23:59"),
        422,
        "invalid",
    ),
    (
        "last day of the calendar, far west",
        "POST",
        "/v1/keys/claim",
        _with(GOOD_KEY, scheduled_time="9999-12-31T23:59:59.999999-23:59"),
        422,
        "invalid",
    ),
    (
        "lone surrogate in a name",
        "POST",
        "/v1/owners/claim",
        b'{"item_id": "i", "machine_id": "m", "computer_name": "a\\ud800"}',
        422,
        "invalid",
    ),
    (
        "lone surrogate in fields",
        "POST",
        "/v1/record/push",
        _change(b'{"a": "\\udc00"}'),
        422,
        "invalid",
    ),
    (
        "lone surrogate in a key",
        "POST",
        "/v1/record/push",
        _change(b'{"\\ud800": 1}'),
        422,
        "invalid",
    ),
    (
        "integer past 64 bits in fields",
        "POST",
        "/v1/record/push",
        _change(b'{"n": 18446744073709551616}'),
        422,
        "invalid",
    ),
    ("infinity in fields", "POST", "/v1/record/push", _change(b'{"n": Infinity}'), 422, "invalid"),
    (
        "fields nested deeply",
        "POST",
        "/v1/record/push",
        _change(b'{"a": ' + b"[" * 17 + b"]" * 17 + b"}"),
        422,
        "invalid",
    ),
    (
        "fields nested very deeply",
        "POST",
        "/v1/record/push",
        _change(b'{"a": ' + b"[" * 200000 + b"]" * 200000 + b"}"),
        400,
        "bad_request",
    ),
    ("text cursor", "GET", "/v1/record/pull?since=abc", b"", 422, "invalid"),
    ("oversized body", "POST", "/v1/record/push", b" " * (1024 * 1024 + 1), 413, "too_large"),
]


def _request(team: Team, method: str, path: str, body: bytes) -> httpx.Response:
    return httpx.request(
        method,
        team.url + path,
        content=body or None,
        headers={
            "authorization": f"Bearer {team.tokens['maya']}",
            "content-type": "application/json",
        },
        timeout=30,
    )


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_bad_input_is_a_4xx_with_a_message(
    team: Team, method: str, path: str, body: bytes, status: int, code: str
) -> None:
    response = _request(team, method, path, body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code
    assert error["message"]
    with team.client() as api:  # nothing was written
        assert api.list_owners() == []
        assert api.pull(0).changes == []
        assert api.claim_key(_key_claim("other-machine")).machine_id == "other-machine"


def _key_claim(machine: str):  # type: ignore[no-untyped-def]
    from bees_cli.cloud import wire

    return wire.KeyClaim.model_validate(GOOD_KEY | {"machine_id": machine})


def test_oversized_streamed_body_is_413(team: Team) -> None:
    def chunks():  # type: ignore[no-untyped-def]
        for _ in range(20):
            yield b" " * 65536

    response = httpx.post(
        f"{team.url}/v1/record/push",
        content=chunks(),
        headers={"authorization": f"Bearer {team.tokens['maya']}"},
        timeout=30,
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
endpoints = st.sampled_from(
    ["/v1/keys/claim", "/v1/owners/claim", "/v1/record/push", "/v1/owners/x/release"]
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    path=endpoints,
    body=st.one_of(
        json_values.map(lambda v: json.dumps(v).encode()),
        st.dictionaries(
            st.sampled_from(
                [
                    "item_id",
                    "machine_id",
                    "computer_name",
                    "schedule_id",
                    "scheduled_time",
                    "changes",
                    "checkpoint_sha256",
                    "epoch",
                ]
            ),
            json_values,
        ).map(lambda v: json.dumps(v).encode()),
        st.binary(max_size=64),
    ),
)
def test_random_bodies_never_cause_a_500(team: Team, path: str, body: bytes) -> None:
    response = _request(team, "POST", path, body)
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert set(response.json()["error"]) >= {"code", "message", "hint"}


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", "/v1/keys/claim", "POST"),
        ("PUT", "/v1/owners/item-1", "GET"),
        ("GET", "/v1/record/push", "POST"),
    ],
)
def test_405_names_the_allowed_methods(team: Team, method: str, path: str, allow: str) -> None:
    response = _request(team, method, path, b"")
    assert response.status_code == 405
    assert response.headers["allow"] == allow
    assert response.json()["error"]["code"] == "method_not_allowed"


def test_a_body_that_arrives_too_slowly_is_cut_off(tmp_path: Path) -> None:
    """A sender that stops halfway through its body gets 408 once the deadline passes."""
    import socket
    import threading
    import time

    import uvicorn

    from bees_cli.cloud.server.app import asgi, bind
    from bees_cli.cloud.server.storage import Storage

    storage = Storage(f"sqlite:///{tmp_path / 'slow.db'}")
    sock = bind("127.0.0.1", 0)
    config = uvicorn.Config(
        asgi(storage, body_seconds=0.3), log_level="warning", access_log=False, lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        with socket.create_connection(sock.getsockname()[:2], timeout=10) as client:
            client.sendall(
                b"POST /v1/record/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100\r\n\r\n" + b'{"changes": ['
            )
            answer = b""
            while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
                chunk = client.recv(4096)
                if not chunk:
                    break
                answer += chunk
    finally:
        server.should_exit = True
        thread.join(10)
        storage.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ")
    assert json.loads(body)["error"]["code"] == "too_slow"
