"""A request that trickles in, body or headers, is cut off at its deadline, over a raw socket.

uvicorn has no deadline of its own for a request (``timeout_keep_alive`` runs only between
requests on an idle connection; the h11 limit bounds the size of the headers, not their
time), so the cut-offs are Bees': :class:`bees_cli.cloud.server.app.BodyLimit` for the body,
:mod:`bees_cli.cloud.server.protocol` for the headers. A sender that keeps the connection
busy with one byte at a time must not hold it past the deadline. The deadlines are injected
short (0.5 s) and bytes trickle every 0.1 s: no long sleep.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import uvicorn_in_thread

DEADLINE = 0.5
"""Seconds the test's server allows a body (the real one allows BODY_SECONDS)."""
TRICKLE = 0.1
"""Seconds between two bytes of the trickling body."""


@pytest.fixture
def slow_server(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """uvicorn serving the full ASGI stack with 0.5 s head and body deadlines, in a thread."""
    from bees_cli.cloud.server.app import asgi, bind
    from bees_cli.cloud.server.protocol import head_deadline
    from bees_cli.cloud.server.storage import Storage

    storage = Storage(f"sqlite:///{tmp_path / 'slow.db'}")
    with uvicorn_in_thread(asgi(storage, body_seconds=DEADLINE), bind("127.0.0.1", 0),
                           http=head_deadline(DEADLINE)) as address:
        yield address
    storage.close()


def _trickle(
    address: tuple[str, int], head: bytes, pieces: list[bytes]
) -> tuple[bytes, int, float]:
    """Send ``head``, then one piece every :data:`TRICKLE` s until the server answers or
    closes; return the answer, how many pieces were sent, and the seconds it took."""
    sent = 0
    stop = threading.Event()
    with socket.create_connection(address, timeout=10) as client:
        client.sendall(head)
        started = time.monotonic()

        def drip() -> None:
            nonlocal sent
            for piece in pieces:
                if stop.wait(TRICKLE):
                    return
                try:
                    client.sendall(piece)
                except OSError:
                    return
                sent += 1

        dripper = threading.Thread(target=drip, daemon=True)
        dripper.start()
        answer = b""
        while True:
            try:
                chunk = client.recv(4096)
            except ConnectionResetError:
                # A byte sent after the server closed draws a reset, which can discard its
                # answer before it is read (a loaded machine): the cut-off still happened.
                break
            if not chunk:
                break  # the server closed the connection after its answer
            answer += chunk
        took = time.monotonic() - started
        stop.set()
        dripper.join(5)
    return answer, sent, took


BODY = b'{"changes": []}' + b" " * 85  # 100 bytes, valid JSON once whole


@pytest.mark.parametrize(
    ("framing", "head", "pieces"),
    [
        (
            "content-length",
            b"Content-Length: 100\r\n\r\n",
            [BODY[i : i + 1] for i in range(100)],
        ),
        (
            "chunked",
            b"Transfer-Encoding: chunked\r\n\r\n",
            [b"1\r\n" + BODY[i : i + 1] + b"\r\n" for i in range(100)] + [b"0\r\n\r\n"],
        ),
    ],
)
def test_a_body_trickling_in_a_byte_at_a_time_is_cut_off_at_the_deadline(
    slow_server: tuple[str, int], framing: str, head: bytes, pieces: list[bytes]
) -> None:
    request = (
        b"POST /v1/record/push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n"
        b"Content-Type: application/json\r\n" + head
    )
    answer, sent, took = _trickle(slow_server, request, pieces)
    # cut off near the deadline, long before the 100 pieces (10 s) were all sent
    assert DEADLINE - 0.05 <= took < DEADLINE + 2.0, framing
    assert 2 <= sent < 40
    if answer:  # else a reset discarded it (see _trickle); the stalled-body test reads it
        status, _, rest = answer.partition(b"\r\n")
        headers, _, body = rest.partition(b"\r\n\r\n")
        assert status == b"HTTP/1.1 408 Request Timeout"
        assert b"connection: close" in headers.lower()
        assert json.loads(body)["error"] == {
            "code": "too_slow",
            "message": f"the request body did not arrive within {DEADLINE:g} s",
            "hint": "check the network and try again",
        }


def test_a_body_that_arrives_in_time_is_answered(slow_server: tuple[str, int]) -> None:
    """The same trickle, short enough: the deadline does not cut a sender that finishes."""
    body = b'{"changes": []}'
    request = (
        b"POST /v1/record/push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n"
        b"Connection: close\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:-3]
    )
    answer, sent, _took = _trickle(slow_server, request, [body[-3:-2], body[-2:-1], body[-1:]])
    assert sent == 3
    # past the body deadline stage: the token is what is refused now
    assert answer.startswith(b"HTTP/1.1 401 ")
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["code"] == "unauthorized"


def test_headers_trickling_in_a_byte_at_a_time_are_cut_off_at_the_deadline(
    slow_server: tuple[str, int],
) -> None:
    head = b"POST /v1/record/push HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100 + b"\r\n\r\n"
    answer, sent, took = _trickle(slow_server, head[:1], [head[i : i + 1] for i in range(1, 200)])
    assert answer == b""  # no request was read, so there is nothing to answer
    assert DEADLINE - 0.05 <= took < DEADLINE + 2.0
    assert 2 <= sent < 40


def test_a_kept_alive_connection_gives_the_next_request_the_same_head_deadline(
    slow_server: tuple[str, int],
) -> None:
    first = b"GET /v1/time HTTP/1.1\r\nHost: x\r\n\r\n"
    with socket.create_connection(slow_server, timeout=10) as client:
        client.sendall(first)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.endswith(b"}"):
            answer += client.recv(4096)
        assert answer.startswith(b"HTTP/1.1 401 ")  # answered, connection kept alive
        client.sendall(b"GET /v1/t")  # the start of a second request, then nothing
        started = time.monotonic()
        assert client.recv(4096) == b""  # closed by the server
        took = time.monotonic() - started
    assert DEADLINE - 0.05 <= took < DEADLINE + 2.0
