"""The local record for async callers: each call of :class:`LocalRecord` run in a thread.

Why: the record is SQLite; a call waits for the write lock up to its busy timeout (5 s), so
made from a coroutine it would hold the event loop (``bees run``'s worker, the Bees app)
meanwhile. The use cases await :class:`AsyncRecord` (``Bees.async_record``) and never call
the synchronous record themselves (``tests/usecases/test_no_blocking_record.py`` checks it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from bees_cli.record.local import LocalRecord

P = ParamSpec("P")
T = TypeVar("T")


def _in_thread(method: Callable[Concatenate[LocalRecord, P], T]
               ) -> Callable[Concatenate[AsyncRecord, P], Coroutine[Any, Any, T]]:
    """Return ``method`` of :class:`LocalRecord` as a coroutine method of
    :class:`AsyncRecord`: same arguments, same result, run by ``asyncio.to_thread``."""

    async def call(self: AsyncRecord, /, *args: P.args, **kwargs: P.kwargs) -> T:
        import asyncio  # here: building Bees (bees status) imports no event loop

        return await asyncio.to_thread(method, self.sync, *args, **kwargs)

    return functools.wraps(method)(call)


class AsyncRecord:
    """One computer's local record, awaited: every public method of :class:`LocalRecord`
    (but :meth:`~LocalRecord.step`, :meth:`~LocalRecord.reading` and
    :meth:`~LocalRecord.close`) under the same name and arguments, each one call of it in a
    worker thread; :meth:`run` runs a synchronous function of several calls (a
    :meth:`~LocalRecord.step`, a :meth:`~LocalRecord.reading`) the same way.

    Args:
        record: the synchronous record (its connections are per thread, so any thread may
            call it).
    """

    def __init__(self, record: LocalRecord) -> None:
        self.sync = record
        """The synchronous record, for code that runs in a thread (never call it from a
        coroutine)."""

    @property
    def path(self) -> Path:
        """The database file."""
        return self.sync.path

    @property
    def replaced(self) -> int:
        """How many times the file was found gone and started again empty
        (:attr:`LocalRecord.replaced`)."""
        return self.sync.replaced

    async def run(self, function: Callable[Concatenate[LocalRecord, P], T], /,
                  *args: P.args, **kwargs: P.kwargs) -> T:
        """Return ``function(record, *args, **kwargs)`` run in a worker thread: a synchronous
        helper that reads or writes the record several times (in one step, say)."""
        import asyncio

        return await asyncio.to_thread(function, self.sync, *args, **kwargs)

    # -- items and history (LocalRecord) --------------------------------------------------
    add_item = _in_thread(LocalRecord.add_item)
    remove_item = _in_thread(LocalRecord.remove_item)
    restart_item = _in_thread(LocalRecord.restart_item)
    set_state = _in_thread(LocalRecord.set_state)
    add_fact = _in_thread(LocalRecord.add_fact)
    relay_fact = _in_thread(LocalRecord.relay_fact)
    items = _in_thread(LocalRecord.items)
    item = _in_thread(LocalRecord.item)
    events = _in_thread(LocalRecord.events)
    # -- approvals, journal, intents (ApprovalsAndJournal) --------------------------------
    put_approval = _in_thread(LocalRecord.put_approval)
    approval = _in_thread(LocalRecord.approval)
    approvals = _in_thread(LocalRecord.approvals)
    add_journal = _in_thread(LocalRecord.add_journal)
    journal = _in_thread(LocalRecord.journal)
    journal_hit = _in_thread(LocalRecord.journal_hit)
    add_intent = _in_thread(LocalRecord.add_intent)
    open_intent = _in_thread(LocalRecord.open_intent)
    end_intent = _in_thread(LocalRecord.end_intent)
    # -- slots and controls (SlotsAndControls) --------------------------------------------
    acquire_slot = _in_thread(LocalRecord.acquire_slot)
    release_slot = _in_thread(LocalRecord.release_slot)
    free_stale_slots = _in_thread(LocalRecord.free_stale_slots)
    slots = _in_thread(LocalRecord.slots)
    queue_control = _in_thread(LocalRecord.queue_control)
    queue_decision = _in_thread(LocalRecord.queue_decision)
    queued_controls = _in_thread(LocalRecord.queued_controls)
    queued_payloads = _in_thread(LocalRecord.queued_payloads)
    claim_controls = _in_thread(LocalRecord.claim_controls)
    # -- pieces (PiecesPart) ----------------------------------------------------------------
    put_piece = _in_thread(LocalRecord.put_piece)
    piece = _in_thread(LocalRecord.piece)
    pieces = _in_thread(LocalRecord.pieces)
    saved_piece = _in_thread(LocalRecord.saved_piece)
    live_pieces = _in_thread(LocalRecord.live_pieces)
    update_piece = _in_thread(LocalRecord.update_piece)
    update_live_piece = _in_thread(LocalRecord.update_live_piece)
