"""uvicorn's HTTP/1.1 protocols with a deadline for the request line and headers.

uvicorn has no deadline of its own for a request's head: ``timeout_keep_alive`` runs only
while a kept-alive connection is idle and stops at the first byte of the next request, and
``h11_max_incomplete_event_size`` bounds the head's size, not its time. A client sending
its headers a byte at a time would hold its connection for good (a "slowloris"). The body
has its own deadline in the app (:class:`bees_cli.cloud.server.app.BodyLimit`).

:func:`head_deadline` gives the httptools protocol (uvicorn's fast C parser, from
``uvicorn[standard]``) with the deadline, or the h11 one when httptools is not installed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_SECONDS = 10.0
"""Seconds a request's line and headers may take to arrive, from the connection (or from
the end of the previous answer on a kept-alive connection); then the connection is closed."""


class _Deadline:
    """The head deadline's timer, shared by the h11 and httptools protocols.

    The timer is armed when a connection opens and after each answer; it is disarmed when
    a request's head is in. When it fires with no head in, the connection is closed (no
    answer is possible before a request is read).
    """

    head_seconds: float = HEAD_SECONDS
    _head_timer: asyncio.TimerHandle | None = None
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.head_seconds, self._head_late)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Start the head's deadline with the connection."""
        super().connection_made(transport)  # type: ignore[misc]
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the deadline with the connection."""
        self._disarm()
        super().connection_lost(exc)  # type: ignore[misc]


class HeadDeadline(_Deadline, H11Protocol):
    """:class:`H11Protocol` that closes a connection whose request head is not in after
    :attr:`head_seconds`."""

    def _head_late(self) -> None:
        if self.conn.their_state is h11.IDLE:
            super()._head_late()
        else:
            self._head_timer = None

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


def _httptools_protocol() -> type[Any] | None:
    """Return the httptools protocol with the head deadline, or None without httptools."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # pragma: no cover - uvicorn[standard] brings httptools
        return None

    class HttpToolsHeadDeadline(_Deadline, HttpToolsProtocol):
        """:class:`HttpToolsProtocol` that closes a connection whose request head is not
        in after :attr:`head_seconds`."""

        def on_headers_complete(self) -> None:
            """A request's head is in: stop the deadline, then go on as uvicorn does."""
            self._disarm()
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            """After an answer, the next request's head has the same deadline (unless a
            pipelined request, whose head is in, starts now)."""
            super().on_response_complete()
            if not self.transport.is_closing() and (
                self.cycle is None or self.cycle.response_complete
            ):
                self._arm()

    return HttpToolsHeadDeadline


def head_deadline(seconds: float = HEAD_SECONDS, *, parser: str = "auto") -> type[Any]:
    """Return the protocol class for ``uvicorn.Config(http=…)`` with a head deadline of
    ``seconds`` (tests pass a short one).

    Args:
        seconds: the deadline (:data:`HEAD_SECONDS`).
        parser: ``httptools``, ``h11``, or ``auto`` (httptools when installed).
    """
    base: type[Any] | None = HeadDeadline
    if parser != "h11":
        base = _httptools_protocol() or (HeadDeadline if parser == "auto" else None)
    if base is None:
        raise ValueError(f"HTTP parser {parser!r} is not installed")
    return type(base.__name__, (base,), {"head_seconds": seconds})
