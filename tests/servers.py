"""An ASGI app served by a real uvicorn on a loopback socket, in a thread, for tests."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.support.wait import until_sync


@contextmanager
def uvicorn_in_thread(app: Any, sock: socket.socket, **config: Any) -> Iterator[tuple[str, int]]:
    """Serve ``app`` on the bound ``sock`` until the block ends; yield ``(host, port)``.

    Args:
        app: an ASGI application.
        sock: a socket already bound (port 0 picks a free port).
        config: more ``uvicorn.Config`` settings (``lifespan``, ``http``…); logging is quiet.

    Raises:
        AssertionError: the server did not start (:data:`tests.support.wait.CAP`).
    """
    import uvicorn

    settings: dict[str, Any] = {"log_level": "warning", "access_log": False, "lifespan": "off"}
    server = uvicorn.Server(uvicorn.Config(app, **(settings | config)))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    until_sync(lambda: server.started, "uvicorn did not start", every=0.01)
    try:
        host, port = sock.getsockname()[:2]
        yield host, port
    finally:
        server.should_exit = True
        thread.join(10)
