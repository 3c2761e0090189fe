"""The shared record on this computer: push our item changes, pull the team's, every 15 s.

Rules (DESIGN.md, "Shared record"; post, "What Bees Cloud holds"): every
:data:`SYNC_EVERY` seconds a computer sends the stage, status and a run summary of its
items and fetches what the team sent. Per item the change of the later owner generation
wins (each claim after a release starts one: a new owner whose clock is behind still
overrides the owner before it), then the later origin time (the clock of the computer that
made it), ties broken by machine id, then by the SHA-256 of the fields — the same order
Bees Cloud applies (:class:`bees_cli.cloud.wire.RecordKey`), so every computer ends with the
same team table (issue 23, point 4).

The tables, the outbox and the team's rows live in :mod:`bees_cli.record.shared`;
this module runs the rounds: measure the skew, push the outbox, pull and apply.

A refused change is never dropped (issue 11, point 4; issue 23, point 4): it stays in the
outbox and is sent again each round until Bees Cloud takes it (a clock that was ahead has
been fixed, or the server's clock caught up) or a later change replaces it (one that lost
to a change of this computer stamped later, ``superseded``, waits for this clock to pass
it); meanwhile ``sync_refused`` says
why, and ``bees status`` and ``bees doctor`` show it (:mod:`bees_cli.record.sync_notes`).
The one exception: a refused change of an item another computer runs (relinquished here,
``free``, or ``waiting: owned by COMPUTER``) is dropped with a log line: its team row is
the truth.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bees_cli import rules
from bees_cli.errors import BeesError, CloudError, CloudRefused, CloudUnreachable
from bees_cli.record.shared import Refusal as Refusal
from bees_cli.record.shared import RefusalCode as RefusalCode
from bees_cli.record.shared import SharedRecord as SharedRecord
from bees_cli.record.shared import TeamItem as TeamItem
from bees_cli.record.shared import refusal_code as refusal_code
from bees_cli.record.shared import refusal_of as refusal_of
from bees_cli.record.shared import team_row as team_row
from bees_cli.record.shared import team_rows as team_rows
from bees_cli.utc import format_utc, parse_utc

if TYPE_CHECKING:
    import asyncio

    from bees_cli.cloud import wire
    from bees_cli.cloud.client import AsyncCloudClient
    from bees_cli.machine.computer import Computer

log = logging.getLogger(__name__)

SYNC_EVERY = rules.SYNC_EVERY.total_seconds()
"""Seconds between sync rounds (DESIGN.md: every 15 s)."""
SKEW_WARN = 5.0
"""Seconds of clock skew against Bees Cloud above which status and doctor warn."""


PUSH_TARGET_SECONDS = 1.0
"""Seconds one push batch should take: a fifth of the client's 5 s timeout."""
FIRST_BATCH = 100
"""Changes in the first push batch, before any batch was timed."""


class BatchSizer:
    """Sizes record push batches by time (issue 29, point 2): each batch aims at
    :data:`PUSH_TARGET_SECONDS`, so a slow server or link gets smaller batches and never
    meets the client's timeout, a fast one bigger ones (fewer round trips).

    After each answered batch the next size is the rate just measured times the target,
    at most twice the last size (one fast answer does not jump to the cap), between
    ``least`` and ``most``; a batch that failed to be answered (a timeout, a dropped
    connection) halves it.

    Args:
        target: seconds a batch should take.
        first: changes in the first batch.
        least: fewest changes in a batch (≥ 1).
        most: most changes in a batch (at most :data:`bees_cli.cloud.wire.MAX_BATCH`,
            which Bees Cloud refuses past).
    """

    def __init__(self, *, target: float = PUSH_TARGET_SECONDS, first: int = FIRST_BATCH,
                 least: int = 1, most: int | None = None) -> None:
        from bees_cli.cloud import wire

        self.target = target
        self.least = max(1, least)
        self.most = min(wire.MAX_BATCH, most or wire.MAX_BATCH)
        self.size = self._bound(first)

    def _bound(self, size: float) -> int:
        return max(self.least, min(self.most, int(size)))

    def took(self, count: int, seconds: float) -> None:
        """Note that a batch of ``count`` changes was answered in ``seconds``."""
        rate = count / max(seconds, 1e-6)
        self.size = self._bound(min(rate * self.target, 2 * max(count, self.size)))

    def failed(self) -> None:
        """Note that a batch was not answered: the next one is half as big."""
        self.size = self._bound(self.size // 2)


@dataclass(frozen=True)
class SyncResult:
    """One sync round: changes pushed (sent, refused ones included), entries pulled, skew
    (server minus local, seconds), the new cursor and how many pushed changes Bees Cloud
    refused (kept in the outbox)."""

    pushed: int
    pulled: int
    skew: float
    cursor: int
    refused: int = 0



class Syncer:
    """Runs sync rounds for one computer against its Bees Cloud.

    The outbox is pushed in batches sized by time (:class:`BatchSizer`), each marked sent
    (or refused) as soon as Bees Cloud answers it, so a round cut by a timeout or a dropped
    connection leaves only the unanswered batches for the next round (issue 29, point 2).
    A batch sent again whose first answer was lost changes nothing on Bees Cloud: an exact
    repeat of the change an item holds is neither written nor refused.

    Args:
        computer: this computer (needs a sign-in).
        client: an async cloud client to use (kept open by the caller); None makes one
            with two retries at the first round and keeps it for the syncer's life (each
            new one loaded the certificate bundle, issue 29 point 4); :meth:`aclose`
            closes it.
        clock: this computer's clock (UTC), for the skew.
        interval: seconds between rounds in :meth:`run`.
        batches: sizes the push batches (kept across rounds); default :class:`BatchSizer`.
        timer: monotonic seconds, to time each batch.
    """

    def __init__(self, computer: Computer, *, client: AsyncCloudClient | None = None,
                 clock: Callable[[], datetime] | None = None,
                 interval: float = SYNC_EVERY, batches: BatchSizer | None = None,
                 timer: Callable[[], float] = time.monotonic) -> None:
        self.computer = computer
        self.client = client
        self.clock = clock
        self.interval = interval
        self.batches = batches or BatchSizer()
        self.timer = timer
        self.shared = SharedRecord(computer.record_path)
        self._kept: AsyncCloudClient | None = None

    async def aclose(self) -> None:
        """Close the client this syncer made and kept (not one given as ``client``)."""
        kept, self._kept = self._kept, None
        if kept is not None:
            await kept.aclose()

    async def sync_once(self) -> SyncResult:
        """Measure the skew, push the outbox batch by batch, pull the team's changes since
        the cursor.

        Raises:
            CloudError: the cloud could not be reached or refused (the batches answered
                before it are marked sent; the rest stay in the outbox).
        """
        import asyncio  # here: bees status reads this module without an event loop

        from bees_cli.cloud import wire
        from bees_cli.cloud.client import cloud_for

        if self.client is None and self._kept is None:
            self._kept = cloud_for(self.computer, retries=2)
        client = self.client or self._kept
        assert client is not None, "sync needs a Bees Cloud sign-in"
        skew = await client.skew()
        if skew.me.runner is not None:  # a runner's sync vouches for it (issue 27, 4)
            await client.runner_heard(self.computer.machine_id)
        changes = await asyncio.to_thread(self.shared.outbox, self.computer)
        refused = 0
        start = 0
        while start < len(changes):
            part = changes[start:start + self.batches.size]
            records = [wire.RecordChange(item_id=item_id, fields=fields,
                                         origin_time=parse_utc(origin),
                                         machine_id=self.computer.machine_id)
                       for item_id, origin, fields in part]
            began = self.timer()
            try:
                refusals = await self._push(client, records, {i: o for i, o, _ in part})
            except CloudUnreachable:
                self.batches.failed()
                raise
            self.batches.took(len(part), self.timer() - began)
            # marked as answered: a cut round resumes after the last answered batch
            await asyncio.to_thread(self._keep, part, refusals)
            refused += len(refusals)
            start += len(part)
        cursor = await asyncio.to_thread(lambda: self.shared.cursor)
        pulled = await client.pull_all(cursor)
        await asyncio.to_thread(self.shared.apply, list(pulled.changes), pulled.cursor)
        runners = await self._runners(client)
        await asyncio.to_thread(self.shared.set_meta, skew=f"{skew.skew_seconds:.3f}",
                                last_sync=format_utc(self._now()), error=None, error_code=None,
                                **({} if runners is None else {"runners": runners}))
        return SyncResult(len(changes), len(pulled.changes), skew.skew_seconds,
                          pulled.cursor, refused)

    @staticmethod
    async def _runners(client: AsyncCloudClient) -> str | None:
        """The team's runners as JSON (``RunnerList``) for ``bees status``, or None when
        Bees Cloud does not answer them (an older server: the last list is kept)."""
        try:
            return (await client.runners()).model_dump_json()
        except CloudError:
            return None

    def _now(self) -> datetime:
        return self.clock() if self.clock else datetime.now(UTC)

    async def _push(self, client: AsyncCloudClient, records: list[wire.RecordChange],
                    origins: dict[str, str]) -> list[Refusal]:
        """Push; return the changes Bees Cloud refused, each with its reason.

        A server that answers ``refused`` per change (:class:`Refusal`) is read as it is;
        an older one that refuses the whole batch (an item owned elsewhere) is asked one
        change at a time, and each refused change is kept with the server's message.
        """
        at = format_utc(self._now())
        try:
            answer = await client.push(records)
        except CloudRefused:
            refusals = []
            for record in records:
                try:
                    await client.push([record])
                except CloudRefused as error:
                    refusals.append(Refusal(item_id=record.item_id,
                                            origin=origins[record.item_id],
                                            code=refusal_code(error.code),
                                            message=error.message, at=at))
            return refusals
        return [refusal_of(r, origins[r.item_id], at)
                for r in getattr(answer, "refused", ()) if r.item_id in origins]

    def _keep(self, changes: list[tuple[str, str, dict[str, Any]]],
              refusals: list[Refusal]) -> None:
        """After a push: drop what was sent, keep (and note) what was refused."""
        refused = {r.item_id for r in refusals}
        self.shared.sent([(i, o) for i, o, _ in changes if i not in refused])
        gone = set(self.shared.elsewhere_items(sorted(refused))) if refused else set()
        for refusal in refusals:
            log.warning("shared record: %s not sent (%s): %s", refusal.item_id,
                        refusal.code, refusal.message)
        if gone:  # another computer runs them: the team row is the truth now
            log.info("shared record: dropped the refused changes of %s (run elsewhere)",
                     ", ".join(sorted(gone)))
            self.shared.drop(sorted(gone))
        self.shared.refuse([r for r in refusals if r.item_id not in gone])

    async def run(self, stop: asyncio.Event, say: Callable[[str], None] | None = None, *,
                  on_retired: Callable[[CloudError], None] | None = None) -> None:
        """Sync every :attr:`interval` seconds until ``stop`` is set; failures are noted
        (``sync_meta.error``, one line said when it changes) and never end the loop, but
        one: a retired runner's sync refused with ``runner_retired`` is handed to
        ``on_retired`` (``bees run --runner`` stops) and ends it (issue 27, retire)."""
        import asyncio

        from bees_cli.errors import is_retired

        last_error: str | None = None
        while not stop.is_set():
            try:
                await self.sync_once()
                if last_error is not None and say:
                    say("shared record: synced again")
                last_error = None
            except asyncio.CancelledError:
                raise
            except CloudError as error:
                if on_retired is not None and is_retired(error):
                    on_retired(error)
                    return
                last_error = await self._failed(error, last_error, say)
            except Exception as error:  # noqa: BLE001 - the loop must survive anything
                last_error = await self._failed(error, last_error, say)
            try:
                await asyncio.wait_for(stop.wait(), self.interval)
            except TimeoutError:
                pass

    async def _failed(self, error: Exception, last_error: str | None,
                      say: Callable[[str], None] | None) -> str:
        """Note a failed round (said once while it stays the same); return its text."""
        import asyncio

        text = error.message if isinstance(error, CloudError) else repr(error)
        if text != last_error and say:
            say(f"shared record: sync failed: {text}")
        # a Bees error is news, said once above; anything else is a bug: keep its
        # traceback in the log
        if isinstance(error, BeesError):
            log.debug("shared record sync failed: %s", text)
        else:
            log.warning("shared record sync failed: %s", text, exc_info=True)
        code = error.code if isinstance(error, BeesError) else "error"
        try:
            await asyncio.to_thread(self.shared.set_meta, error=text, error_code=code)
        except Exception:  # noqa: BLE001
            pass
        return text


