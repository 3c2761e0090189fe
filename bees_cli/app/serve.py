"""Serving the Bees app on loopback: one per computer, bind, announce the first URL, serve
until a signal."""

from __future__ import annotations

import asyncio
import contextlib
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
"""The only address the app listens on (APP_CONTRACT.md: loopback only)."""


def bind(port: int) -> socket.socket:
    """Return a listening TCP socket on ``127.0.0.1:port`` (0: a free port).

    Raises:
        UserError: the port cannot be bound (taken, or not allowed).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        sock.listen(128)
    except OSError as error:
        sock.close()
        raise UserError(f"cannot listen on {HOST}:{port}: {error.strerror or error}",
                        hint="pick another --port, or leave it out for a free one") from None
    sock.set_inheritable(True)
    return sock


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
    """Serve the Bees app over ``bees`` on ``127.0.0.1:port`` until SIGINT or SIGTERM; or,
    when a ``bees app`` serves this computer already, tell ``already`` and return.

    One app per computer (:mod:`bees_cli.app.instance`): it holds ``<data>/app.lock`` while
    it serves and writes its URL to ``<data>/app.json`` (removed when it stops). The signals
    are taken before the URL is announced, so a signal as soon as the URL is read still
    stops the app cleanly (exit 0).

    Args:
        bees: this computer's application.
        port: the port, 0 for a free one.
        workspace: the workspace for schedules, doctor and continue (None: the default).
        announce: called once the socket listens, with the guard (its URL holds the secret).
        already: called instead, with the record of the app that serves this computer.

    Raises:
        UserError: the port cannot be bound.
        Refused: another app holds the lock but says no URL (it is still starting).
    """
    data = bees.computer.data_dir
    held = await asyncio.to_thread(claim, data)
    if isinstance(held, Serving):
        already(held)
        return
    try:
        sock = bind(port)
        guard = Guard(port=sock.getsockname()[1])
        app = create_app(bees, guard, workspace=workspace)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=2)
        server = _Server(config)
        try:
            with stopped_by_signals(server):
                note_serving(data, url=guard.url(), port=guard.port, workspace=workspace)
                announce(guard)
                await server.serve(sockets=[sock])
        finally:
            sock.close()
    finally:
        forget_serving(data)
        held.release()
