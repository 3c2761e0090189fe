"""What a streamed model call shows while it streams (issue 26, point 2).

Each chunk heartbeats the activity with the tokens so far; at most every ``every`` seconds
the item's reason says ``turn 2, 180 tokens so far`` (``bees status``, ``bees item show``
and the app word it beside the stage: ``running: turn 2, 180 tokens so far``) and the text
that came since is appended to the transcript as a ``partial`` entry. The reply itself stays
the unit of durability (the activity's result and the transcript's ``reply``); the progress
is only shown, and cleared when the call ends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from temporalio import activity

from bees_cli.engine.model_models import TurnContext
from bees_cli.engine.transcript import append_entry
from bees_cli.record.local import LocalRecord
from bees_cli.record.states import Status
from bees_cli.utc import format_utc, utc_now

T = TypeVar("T")
PROGRESS_EVERY = 1.0
"""Most often (seconds) the record and the transcript are written while a reply streams."""


def progress_words(turn: int, tokens: int) -> str:
    """Return the reason a streaming call shows: ``turn 2, 180 tokens so far``."""
    return f"turn {turn}, {tokens} token{'' if tokens == 1 else 's'} so far"


class CallProgress:
    """The progress of one streamed model call: told each chunk (a
    :data:`~bees_cli.agents.model_stream.Progress`), shown at most every ``every`` s.

    Args:
        record: the local record (the item's row; a piece's call is not shown there).
        context: the call's stage, round and attempt.
        turn: the call's turn (1 first).
        path: the stage's transcript.
        every: the most often it writes, seconds (0: every chunk).
        clock: monotonic seconds.
    """

    def __init__(self, record: LocalRecord, context: TurnContext, turn: int, path: Path, *,
                 every: float = PROGRESS_EVERY,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.record, self.context, self.turn, self.path = record, context, turn, path
        self.every, self.clock = every, clock
        self.tokens, self.pending = 0, ""
        self.written: float | None = None
        self.shown = False

    async def __call__(self, text: str, tokens: int) -> None:
        """Take one chunk's text and the tokens so far."""
        self.tokens, self.pending = tokens, self.pending + text
        activity.heartbeat(tokens)
        now = self.clock()
        if self.written is None or now - self.written >= self.every:
            self.written = now
            await self._safely(self._write)

    def _write(self) -> None:
        """Append the text since the last write to the transcript; show the tokens so far."""
        context = self.context
        if self.pending:
            append_entry(self.path, {
                "kind": "partial", "round": context.round, "attempt": context.attempt,
                "turn": self.turn, "at": format_utc(utc_now()), "text": self.pending,
                "tokens": self.tokens})
            self.pending = ""
        if context.piece is None:
            self.record.set_state(context.item_id, status=Status.RUNNING, stage=context.stage,
                                  agent=context.agent,
                                  reason=progress_words(self.turn, self.tokens),
                                  only_if=frozenset({Status.RUNNING}))
            self.shown = True

    async def close(self) -> None:
        """The call ended (answered or failed): write the text not yet written, and clear
        what was shown (the item plainly ``running``)."""
        def clear() -> None:
            if self.pending:
                self._write()
            if self.shown:
                self.record.set_state(
                    self.context.item_id, status=Status.RUNNING, stage=self.context.stage,
                    agent=self.context.agent, only_if=frozenset({Status.RUNNING}))
        await self._safely(clear)

    @staticmethod
    async def _safely(write: Callable[[], None]) -> None:
        """Run ``write`` in a thread; a record or transcript that cannot be written is
        logged, never raised: what is shown must not cost the call its answer."""
        try:
            await asyncio.to_thread(write)
        except Exception:  # noqa: BLE001 - see above
            activity.logger.warning("could not show a model call's progress", exc_info=True)


async def heartbeating(work: Awaitable[T], every: float) -> T:
    """Await ``work``, heartbeating every ``every`` s (a model call or a tool call that waits);
    cancelled with the activity."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every)
            if done:
                return task.result()
            activity.heartbeat()
    finally:
        task.cancel()  # cancelled (the stage stops): the action's wait stops too
        # its error once cancelled (the update's wait cut short) is expected: read it, so
        # asyncio does not print "Task exception was never retrieved" with a traceback
        task.add_done_callback(_quiet)


def _quiet(task: asyncio.Future[Any]) -> None:
    """Read the outcome of a task this activity stopped waiting for (see :func:`heartbeating`)."""
    if not task.cancelled():
        task.exception()
