"""Waiting for a state in a test: the one poller, for async tests and for plain ones.

A test that waits on something running on its own (``bees run``, a worker, a server thread,
a child process) polls a check until it holds. The cap is a guard against a hang, never the
thing under test: when it runs out the failure names the state not reached (``what``), not a
time. A rule about time (a re-check every 15 s, a week-long wait) is tested with Temporal's
time-skipping server or an injected clock, never by waiting here.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

CAP = 60.0
"""Seconds before a wait gives up: far above what any state takes on a loaded 2-core machine."""

EVERY = 0.05
"""Seconds between two looks."""

What = str | Callable[[], str] | None
"""What the wait is for, said when it gives up: a sentence, a function that words the last
state seen (``lambda: f"item stayed {row.status_text}"``), or None for the check's own source
line."""


def _said(what: What, check: Callable[[], object]) -> str:
    if callable(what):
        return what()
    if what is not None:
        return what
    try:
        return f"not reached: {inspect.getsource(check).strip()}"
    except (OSError, TypeError):
        return f"not reached: {check!r}"


async def until(check: Callable[[], T | Awaitable[T]], what: What = None, *,
                cap: float = CAP, every: float = EVERY) -> T:
    """Await until ``check()`` returns something true; return it.

    Args:
        check: called with no argument each look; may return an awaitable (an ``async``
            function, or ``lambda: asyncio.to_thread(f)`` for a blocking look).
        what: the state waited for, worded in the failure (see :data:`What`).
        cap: seconds before giving up (a hang guard, not an assertion on time).
        every: seconds between looks.

    Returns:
        The first true value ``check`` gave.

    Raises:
        AssertionError: ``check`` stayed false for ``cap`` seconds; the message is ``what``.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + cap
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if loop.time() >= deadline:
            raise AssertionError(_said(what, check))
        await asyncio.sleep(every)


def until_sync(check: Callable[[], T], what: What = None, *,
               cap: float = CAP, every: float = EVERY) -> T:
    """Block until ``check()`` returns something true; return it (as :func:`until`, for a test
    or thread with no event loop).

    Raises:
        AssertionError: ``check`` stayed false for ``cap`` seconds; the message is ``what``.
    """
    deadline = time.monotonic() + cap
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(_said(what, check))
        time.sleep(every)
