"""Serving the Bees app on loopback: one per computer, bind (127.0.0.1 and ::1), announce the
first URL, serve until a signal."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import signal
import socket
from collections.abc import Callable, Generator
from pathlib import Path
from types import FrameType

import uvicorn

from bees_cli.app.instance import Serving, claim, forget_serving, note_serving
from bees_cli.app.security import Guard
from bees_cli.app.server import create_app
from bees_cli.errors import UserError
from bees_cli.usecases.bees import Bees

HOST = "127.0.0.1"
"""The IPv4 address the app listens on (APP_CONTRACT.md: loopback only)."""

HOST6 = "::1"
"""The IPv6 loopback address, held on the same port: browsers resolve the app's name
(``bees-….localhost``) to ``::1`` as well as ``127.0.0.1``, and Chromium tries ``::1``
first, so no other program may listen there on the app's port (issue 23, point 6)."""

BIND_TRIES = 20
"""Free ports tried (``--port 0``) before giving up when each one's ``::1`` side is taken."""


def _listen(family: socket.AddressFamily, host: str, port: int) -> socket.socket:
    """Return a listening TCP socket on ``host:port``; OSError when it cannot be had."""
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _no_ipv6(error: OSError) -> bool:
    """True when ``error`` says this computer has no IPv6 loopback (then no program can
    listen there, and browsers reach the app on 127.0.0.1)."""
    return error.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT)


def bind(port: int) -> list[socket.socket]:
    """Return listening TCP sockets on ``127.0.0.1:port`` and ``[::1]:port`` (0: a free port,
    the same on both); only the first when this computer has no IPv6 loopback.

    Why both: the app's name resolves to both addresses in the browser; a program holding
    the other one on the app's port would receive the first URL's secret and the session.

    Raises:
        UserError: the port cannot be bound on either address (taken, or not allowed).
    """
    for _ in range(BIND_TRIES if port == 0 else 1):
        try:
            four = _listen(socket.AF_INET, HOST, port)
        except OSError as error:
            raise UserError(f"cannot listen on {HOST}:{port}: {error.strerror or error}",
                            hint="pick another --port, or leave it out for a free one"
                            ) from None
        chosen = four.getsockname()[1]
        try:
            six = _listen(socket.AF_INET6, HOST6, chosen)
        except OSError as error:
            if _no_ipv6(error):
                return [four]
            four.close()
            if port != 0:
                raise UserError(f"cannot listen on [{HOST6}]:{port}: "
                                f"{error.strerror or error}",
                                hint="pick another --port, or leave it out for a free one"
                                ) from None
            continue  # another program holds this free port on ::1: draw another
        return [four, six]
    raise UserError(f"found no port free on both {HOST} and [{HOST6}] in {BIND_TRIES} tries",
                    hint="give one with --port")


class _Server(uvicorn.Server):
    """uvicorn's server, leaving signals to :func:`stopped_by_signals` (uvicorn's own
    handling raises the signal again after it stopped, and starts only once it serves)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        """Take no signals here (:func:`stopped_by_signals` took them first)."""
        yield


@contextlib.contextmanager
def stopped_by_signals(server: uvicorn.Server) -> Generator[None, None, None]:
    """Within it, SIGINT and SIGTERM ask ``server`` to stop (exit 0 afterwards); the
    handlers before are restored after. Outside the main thread (a test) it takes none."""

    def stop(_sig: int, _frame: FrameType | None) -> None:
        server.should_exit = True

    try:
        before = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


async def serve(bees: Bees, *, port: int, workspace: Path | None,
                announce: Callable[[Guard], None],
                already: Callable[[Serving], None]) -> None:
    """Serve the Bees app over ``bees`` on ``127.0.0.1:port`` and ``[::1]:port``, under its
    own name (:class:`Guard`), until SIGINT or SIGTERM; or, when a ``bees app`` serves this
    computer already, tell ``already`` and return.

    One app per computer (:mod:`bees_cli.app.instance`): it holds ``<data>/app.lock`` while
    it serves and writes its URL to ``<data>/app.json`` (removed when it stops). The signals
    are taken before the URL is announced, so a signal as soon as the URL is read still
    stops the app cleanly (exit 0).

    Args:
        bees: this computer's application.
        port: the port, 0 for a free one.
        workspace: the workspace for schedules, doctor and continue (None: the default).
        announce: called once the sockets listen, with the guard (its URL holds the secret).
        already: called instead, with the record of the app that serves this computer.

    Raises:
        UserError: the port cannot be bound (:func:`bind`).
        Refused: another app holds the lock but says no URL (it is still starting).
    """
    data = bees.computer.data_dir
    held = await asyncio.to_thread(claim, data)
    if isinstance(held, Serving):
        already(held)
        return
    try:
        socks = bind(port)
        guard = Guard(port=socks[0].getsockname()[1])
        app = create_app(bees, guard, workspace=workspace)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=2)
        server = _Server(config)
        try:
            with stopped_by_signals(server):
                note_serving(data, url=guard.url(), port=guard.port, workspace=workspace)
                announce(guard)
                await server.serve(sockets=socks)
        finally:
            for sock in socks:
                sock.close()
    finally:
        forget_serving(data)
        held.release()
