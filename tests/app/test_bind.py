"""Issue 23, point 6: ``bees app`` holds its port on both loopback addresses, so no other
program answers for its name (browsers resolve ``bees-….localhost`` to ``::1`` first)."""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from bees_cli.app import serve
from bees_cli.app.serve import bind
from bees_cli.errors import UserError


@contextmanager
def held(socks: list[socket.socket]) -> Iterator[list[socket.socket]]:
    try:
        yield socks
    finally:
        for sock in socks:
            sock.close()


def try_bind(family: socket.AddressFamily, host: str, port: int) -> int:
    """Bind ``host:port`` as another program would (SO_REUSEADDR); return 0 or the errno."""
    with socket.socket(family, socket.SOCK_STREAM) as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            other.bind((host, port))
        except OSError as error:
            return error.errno or -1
        return 0


def test_the_app_holds_its_port_on_127_0_0_1_and_on_ipv6_loopback() -> None:
    with held(bind(0)) as socks:
        names = [(sock.family, sock.getsockname()[:2]) for sock in socks]
        port = names[0][1][1]
        assert names == [(socket.AF_INET, ("127.0.0.1", port)),
                         (socket.AF_INET6, ("::1", port))]
        assert [try_bind(socket.AF_INET6, "::1", port), try_bind(socket.AF_INET6, "::", port),
                try_bind(socket.AF_INET, "127.0.0.1", port)] == [errno.EADDRINUSE] * 3


def test_a_port_taken_on_ipv6_loopback_is_refused_in_words() -> None:
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as other:
        other.bind(("::1", 0))
        other.listen(1)
        port = other.getsockname()[1]
        with pytest.raises(UserError) as caught:
            bind(port)
        assert (caught.value.message, caught.value.hint) == (
            f"cannot listen on [::1]:{port}: Address already in use",
            "pick another --port, or leave it out for a free one")
        assert try_bind(socket.AF_INET, "127.0.0.1", port) == 0  # its 127.0.0.1 side let go


def test_a_free_port_taken_on_ipv6_loopback_is_passed_over(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real, tried = serve._listen, []

    def listen(family: socket.AddressFamily, host: str, port: int) -> socket.socket:
        tried.append((family, port))
        if family == socket.AF_INET6 and len(tried) == 2:  # the first free port's ::1
            raise OSError(errno.EADDRINUSE, "Address already in use")
        return real(family, host, port)

    monkeypatch.setattr(serve, "_listen", listen)
    with held(bind(0)) as socks:
        assert [family for family, _ in tried] == [socket.AF_INET, socket.AF_INET6,
                                                   socket.AF_INET, socket.AF_INET6]
        assert [port for _, port in tried][::2] == [0, 0]
        assert [sock.getsockname()[1] for sock in socks] == [tried[3][1]] * 2


@pytest.mark.parametrize("missing", [errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT])
def test_without_ipv6_loopback_the_app_listens_on_127_0_0_1_alone(
        monkeypatch: pytest.MonkeyPatch, missing: int) -> None:
    real = serve._listen

    def listen(family: socket.AddressFamily, host: str, port: int) -> socket.socket:
        if family == socket.AF_INET6:
            raise OSError(missing, "no IPv6 here")
        return real(family, host, port)

    monkeypatch.setattr(serve, "_listen", listen)
    with held(bind(0)) as socks:
        assert [sock.family for sock in socks] == [socket.AF_INET]
