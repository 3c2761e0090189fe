"""The head deadline holds with either HTTP parser: httptools (what serve runs) and h11."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bees_cli.cloud.server.protocol import head_deadline
from tests.servers import uvicorn_in_thread

from .test_slow_body import DEADLINE, _trickle


@pytest.fixture(params=["httptools", "h11"])
def parser_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, int]]:
    """The full ASGI stack with a 0.5 s head deadline on the parser of this parametrisation."""
    from bees_cli.cloud.server.app import asgi, bind
    from bees_cli.cloud.server.storage import Storage

    storage = Storage(f"sqlite:///{tmp_path / 'parsers.db'}")
    protocol = head_deadline(DEADLINE, parser=request.param)
    with uvicorn_in_thread(asgi(storage), bind("127.0.0.1", 0), http=protocol) as address:
        yield address
    storage.close()


def test_the_protocol_is_the_asked_parser() -> None:
    assert head_deadline(1.0, parser="httptools").__mro__[1].__name__ == "HttpToolsHeadDeadline"
    assert head_deadline(1.0, parser="h11").__mro__[1].__name__ == "HeadDeadline"
    assert head_deadline(1.0).__mro__[1].__name__ == "HttpToolsHeadDeadline"
    assert head_deadline(1.0).head_seconds == 1.0


def test_trickling_headers_are_cut_off(parser_server: tuple[str, int]) -> None:
    head = b"POST /v1/record/push HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100 + b"\r\n\r\n"
    answer, sent, took = _trickle(parser_server, head[:1], [head[i : i + 1] for i in range(1, 200)])
    assert answer == b""
    assert DEADLINE - 0.05 <= took < DEADLINE + 2.0
    assert 2 <= sent < 40


def test_two_pipelined_requests_are_both_answered(parser_server: tuple[str, int]) -> None:
    """A pipelined request's head is already in when the first answer ends: not cut off."""
    import socket

    request = b"GET /v1/time HTTP/1.1\r\nHost: x\r\n\r\n"
    with socket.create_connection(parser_server, timeout=10) as client:
        client.sendall(request + request.replace(b"Host: x", b"Host: x\r\nConnection: close"))
        answer = b""
        while chunk := client.recv(4096):
            answer += chunk
    assert answer.count(b"HTTP/1.1 401 Unauthorized\r\n") == 2
