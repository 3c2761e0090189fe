"""uvicorn's HTTP/1.1 protocol with a deadline for the request line and headers.

uvicorn has no deadline of its own for a request's head: ``timeout_keep_alive`` runs only
while a kept-alive connection is idle and stops at the first byte of the next request, and
``h11_max_incomplete_event_size`` bounds the head's size, not its time. A client sending
its headers a byte at a time would hold its connection for good (a "slowloris"). The body
has its own deadline in the app (:class:`bees_cli.cloud.server.app.BodyLimit`).
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_SECONDS = 10.0
"""Seconds a request's line and headers may take to arrive, from the connection (or from
the end of the previous answer on a kept-alive connection); then the connection is closed."""


class HeadDeadline(H11Protocol):
    """:class:`H11Protocol` that closes a connection whose request head is not in after
    :attr:`head_seconds` (no answer is possible before a request is read)."""

    head_seconds: float = HEAD_SECONDS
    _head_timer: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.head_seconds, self._head_late)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the head's deadline with the connection."""
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the deadline with the connection."""
        self._disarm()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        """Read events as uvicorn does; stop the deadline once a request's head is in."""
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:
            self._disarm()

    def on_response_complete(self) -> None:
        """After an answer, the next request's head has the same deadline."""
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm()


def head_deadline(seconds: float = HEAD_SECONDS) -> type[HeadDeadline]:
    """Return the protocol class for ``uvicorn.Config(http=…)`` with a head deadline of
    ``seconds`` (tests pass a short one)."""
    return type("HeadDeadline", (HeadDeadline,), {"head_seconds": seconds})
