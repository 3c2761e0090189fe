"""Handover: ``bees relinquish ITEM`` on the owner, ``bees continue ITEM`` on another computer."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bees_cli.errors import Ambiguous, CloudUnreachable, EngineError, NotFound, Refused
from bees_cli.handover.continue_ import Continued, Say
from bees_cli.handover.takeover import continued_words, keep_aside
from bees_cli.record.events import Continued as ContinuedFact

if TYPE_CHECKING:
    from bees_cli.engine.models import JournalEntry
    from bees_cli.handover.checkpoint import Progress
    from bees_cli.handover.relinquish import Relinquished
    from bees_cli.handover.repair import Repaired
    from bees_cli.machine.computer import Computer
    from bees_cli.record.local import LocalRecord
    from bees_cli.record.pieces import Piece
    from bees_cli.record.story import Story
    from bees_cli.usecases.bees import Bees


def _still_releasing(bees: Bees, item_id: str, timeout: float | None = None) -> None:
    """Raise what a relinquish that timed out while its handover waits for Bees Cloud says,
    or, when ``--timeout`` (``timeout`` seconds) ended the wait before that, what it says.

    Raises:
        EngineError: the item waits for Bees Cloud to release it, or its run still stops
            (the handover goes on in the run either way).
    """
    from bees_cli.record.states import RELEASE_WAIT_TEXT, WaitKind

    if bees.record.item(item_id).wait == WaitKind.RELEASE_PENDING:
        raise EngineError(f"item {item_id} is not handed over yet: {RELEASE_WAIT_TEXT}",
                          hint="it goes on by itself while bees run is up; bees status shows "
                               "it free once Bees Cloud answers")
    if timeout is not None:
        raise EngineError(f"item {item_id} is not handed over yet: --timeout {timeout:g} s "
                          "ended the wait while its run stops and writes its checkpoint",
                          hint="it goes on by itself while bees run is up; bees status shows "
                               "it free once Bees Cloud took the release")


UPDATE_LEAST = 1.0
"""Seconds at least to wait for the run's answer to the relinquish when little of
``--timeout`` is left (time for the run to take the request)."""


OWNER_RETRY_FIRST = 1.0
"""Seconds before the second look at the item's owner while Bees Cloud is unreachable;
doubled after each (1, 2, 4, 8), at most :data:`OWNER_RETRY_MAX`."""
OWNER_RETRY_MAX = 15.0
"""Most seconds between two looks at the owner: the release's own retry cadence (README,
"Cloud down")."""

Sleep = Callable[[float], Awaitable[None]]


async def owned_here(bees: Bees, item_id: str, *, timeout: float | None = None,
                     sleep: Sleep = asyncio.sleep, clock: Callable[[], float] = time.monotonic,
                     first: float = OWNER_RETRY_FIRST) -> Any:
    """Return the item's row once Bees Cloud confirms this computer owns it
    (:func:`~bees_cli.handover.relinquish.relinquishable`), waiting while the cloud is
    unreachable: relinquishing must tell Bees Cloud (DESIGN.md, Handover), so the command
    waits for it, as the release step does, instead of failing at once. Each wait is said
    (``bees.say``); nothing has changed while it waits, so Ctrl-C leaves the item running.

    Args:
        bees: this computer's Bees.
        item_id: the item (or a unique prefix).
        timeout: most seconds to wait for the cloud (None: until it answers or Ctrl-C);
            each HTTP try is bounded by what is left of them.
        sleep: how to wait between looks (tests pass a fast one).
        clock: a monotonic clock in seconds.
        first: seconds before the second look; doubled each time up to
            :data:`OWNER_RETRY_MAX`.

    Raises:
        CloudUnreachable: still unreachable after ``timeout`` seconds (nothing changed).
        Refused, NotFound, CloudError: as :func:`relinquishable` (the cloud answered).
    """
    from bees_cli.handover.relinquish import relinquishable

    started = clock()
    delay = first
    while True:
        left_now = None if timeout is None else max(0.0, timeout - (clock() - started))
        try:
            return await asyncio.to_thread(relinquishable, bees.computer, item_id,
                                           within=left_now)
        except CloudUnreachable as error:
            waited = clock() - started
            left = None if timeout is None else timeout - waited
            if left is not None and left <= 0:
                raise CloudUnreachable(
                    f"item {item_id} was not relinquished: Bees Cloud unreachable for "
                    f"{waited:.0f} s ({error.message}); nothing changed, it runs on here",
                    hint=f"bees relinquish {item_id} again once Bees Cloud answers") from None
            pause = delay if left is None else min(delay, left)
            bees.say(f"relinquish {item_id}: waiting for Bees Cloud (unreachable: "
                     f"{error.message}); trying again in {pause:.1f} s; nothing has changed "
                     "yet (Ctrl-C stops)")
            await sleep(pause)
            delay = min(delay * 2, OWNER_RETRY_MAX)


async def _relinquish(bees: Bees, item_id: str, *, timeout: float | None = None,
                     clock: Callable[[], float] = time.monotonic) -> Relinquished:
    """Relinquish item ``item_id`` on this computer (DESIGN.md, Handover): the run stops
    with all its pieces, writes its checkpoint and tells Bees Cloud the item is free.

    Everything that can refuse is checked before the stage stops (:func:`check_fits`: the
    run folder against the post's limits; the owner in Bees Cloud; the item's state): a
    refused relinquish leaves the item running exactly as it was. While Bees Cloud cannot
    be reached for the owner check it waits (:func:`owned_here`), changing nothing; once
    the stage stopped, a release that cannot reach the cloud (or whose answer is lost)
    waits in the run (``waiting: relinquishing``, tried again by the run: a release the
    cloud applied is answered the same) and the item shows free only once Bees Cloud took
    the release. ``timeout`` bounds the whole command (docs/rules.md, Handover: "or
    ``--timeout SECONDS`` ends it"): each HTTP try of the owner check within what is left,
    then the wait for the run's answer (at least :data:`UPDATE_LEAST`); None: the owner
    check waits until the cloud answers or Ctrl-C, the run's answer ``RELINQUISH_TIMEOUT``.

    Args:
        bees: this computer's Bees.
        item_id: the item (or a unique prefix).
        timeout: most seconds for the whole command, or None.
        clock: a monotonic clock in seconds (tests pass their own).

    Raises:
        Refused: another computer owns the item (exit 3, naming it); it is free, done,
            cancelled or not started; the run folder breaks a limit or holds what cannot
            travel (the reason names the file and the limit; the item goes on running); the
            checkpoint could not be written after all (the folder changed while the stage
            stopped: its stage then waits, failed, for a retry, its attempts and earlier
            stages kept).
        NotFound: no such item here (and none in Bees Cloud).
        EngineError: ``bees run`` is not up on this computer; or the handover still
            waits for Bees Cloud (or its run still stops) after ``timeout`` seconds, else
            ``RELINQUISH_TIMEOUT`` (it goes on by itself in the run).
        CloudUnreachable: the cloud was not reached in ``timeout`` seconds for the owner
            check (nothing changed).
        CloudError: the cloud answered with an error (nothing changed).
    """
    from bees_cli.engine.handover_models import RELINQUISH_UPDATE, HandoverOutput
    from bees_cli.engine.models import PersonInput
    from bees_cli.handover.relinquish import RELINQUISH_TIMEOUT, Relinquished
    from bees_cli.record.local import now_utc
    from bees_cli.usecases.control import NOT_UP, start_hint

    started = clock()
    row = await owned_here(bees, item_id, timeout=timeout, clock=clock)
    await asyncio.to_thread(check_fits, bees, row)
    address = await asyncio.to_thread(bees.worker_address)
    if address is None:
        raise EngineError(NOT_UP, hint=start_hint(f"bees relinquish {row.id}"))
    person = PersonInput(who=bees.who(), at=now_utc())
    engine = await bees.engine(address)
    wait = (RELINQUISH_TIMEOUT if timeout is None
            else max(UPDATE_LEAST, timeout - (clock() - started)))
    try:
        answer = await engine.update(row.id, RELINQUISH_UPDATE, person, HandoverOutput,
                                     timeout=wait)
    except EngineError:
        await asyncio.to_thread(_still_releasing, bees, row.id, timeout)
        raise
    assert isinstance(answer, HandoverOutput)
    if not answer.ok:
        raise Refused(f"item {row.id} was not relinquished: {answer.reason}",
                      hint=f"its stage waits, failed: fix the run folder, then bees retry "
                           f"{row.id}")
    assert answer.checkpoint is not None and answer.checkpoint_sha256 is not None
    return Relinquished(item=row.id, stage=answer.stage,
                        restart_stages=dict(answer.restart_stages),
                        checkpoint=answer.checkpoint,
                        checkpoint_sha256=answer.checkpoint_sha256, files=answer.files,
                        total_bytes=answer.total_bytes, released=answer.released)


async def _repair_release(bees: Bees, item_id: str) -> Repaired:
    """``bees relinquish ITEM --repair`` (:func:`bees_cli.handover.repair.repair_release`):
    the computer that released the item last verifies its run folder and re-sends the
    release with that folder's checkpoint digest. Needs no ``bees run``.

    Raises:
        Refused, CheckpointInvalid, CloudError: see
            :func:`~bees_cli.handover.repair.repair_release`.
    """
    from bees_cli.handover.repair import repair_release as repair

    return await asyncio.to_thread(repair, bees.computer, item_id)


ITEM_JSON_ROOM = 4096
"""Bytes kept for ``RUN/item.json`` when checking a run folder before a handover (it holds
the id, title, process, run and created of the item: a few hundred bytes)."""


def check_fits(bees: Bees, row: Any) -> None:
    """Refuse, before anything stops, a relinquish whose checkpoint could not be written.

    Args:
        bees: this computer's Bees.
        row: the item's local record row (:class:`~bees_cli.record.local.ItemRow`).

    Raises:
        Refused: the run folder breaks a limit or holds a symlink, a special file or a name
            that cannot travel (exit 3; the item goes on running, untouched).
    """
    from bees_cli.engine.models import ItemInput
    from bees_cli.engine.snapshot_store import SnapshotMissing, load_snapshot
    from bees_cli.handover.checkpoint import canonical_json
    from bees_cli.handover.fits import DoesNotFit
    from bees_cli.handover.fits import check_fits as fits
    from bees_cli.handover.limits import DEFAULT_LIMITS
    from bees_cli.handover.store import ITEM_NAME, SNAPSHOT_NAME

    adds = {ITEM_NAME: ITEM_JSON_ROOM + len(row.title.encode("utf-8"))}
    try:
        digest = ItemInput.model_validate_json(row.input).snapshot_digest if row.input else None
        snapshot = load_snapshot(bees.record, row.id, digest)
    except SnapshotMissing as error:
        raise Refused(f"item {row.id} was not relinquished: {error.message}",
                      hint="it goes on running here, untouched") from None
    adds[SNAPSHOT_NAME] = len(canonical_json(snapshot.model_dump(mode="json")))
    try:
        fits(Path(row.run_folder), adds=adds)
    except DoesNotFit as error:
        raise Refused(f"item {row.id} was not relinquished: {error}",
                      hint="it goes on running here, untouched; make its run folder fit "
                           f"({DEFAULT_LIMITS.describe()}, no symlinks), then bees "
                           f"relinquish {row.id} again") from None


def seed_pieces(record: LocalRecord, pieces: list[Piece]) -> None:
    """Keep a checkpoint's pieces in this computer's local record, the way its journal is
    seeded (issue 14, point 3): a finished piece's saved result answers the same ask of the
    restarted stage (:func:`~bees_cli.usecases.delegate.saved_result`), so it is not run
    again; an unfinished one is kept as it stopped and runs again when asked. A piece this
    record has already (the item comes back to a computer it ran on) is left as it is.
    """
    for piece in pieces:
        if record.piece(piece.item_id, piece.stage, piece.piece) is None:
            record.put_piece(piece)


async def _continue_item(bees: Bees, item_id: str, *, from_dir: Path | None = None,
                        digest: str | None = None, workspace_path: Path | None = None,
                        title: str | None = None,
                        progress: Progress | None = None) -> Continued:
    """Continue relinquished item ``item_id`` on this computer (DESIGN.md, Handover): verify
    the checkpoint and every file, check eligibility, claim it, record the next run
    (:func:`record_next_run`: the checkpoint's story first, so the item keeps its history,
    created time and review count), and start it now when ``bees run``
    is up here (else ``bees run`` starts it).

    One continue of an item at a time on this computer: the whole of it holds the item's
    continue lock (:func:`~bees_cli.handover.lock.continue_lock`); a second one is refused
    at once while the first runs, and, once it ended, as continued here already.

    Raises:
        Refused: owned elsewhere, checkpoint invalid, not eligible, claimed first elsewhere;
            a continue of the item is under way here, or it was continued here already.
        NotFound, UserError, CloudError: no such item, bad ``--from``, cloud unreachable.
    """
    from bees_cli.handover.lock import continue_lock
    from bees_cli.usecases.run import start_pending

    with continue_lock(bees.computer.record_path.parent, item_id):
        done = await asyncio.to_thread(
            record_next_run, item_id, from_dir=from_dir, digest=digest,
            workspace_path=workspace_path, title=title, computer=bees.computer,
            progress=progress, say=bees.say)
        address = await asyncio.to_thread(bees.worker_address)
        if address is None:
            bees.say("the engine is not running: the item starts when `bees run` starts")
            return done
        engine = await bees.engine(address)
        await start_pending(engine, bees.async_record, bees.computer, only=done.item)
    bees.say("started; bees run picks it up")
    return replace(done, started=True)


def record_next_run(item_id: str, *, from_dir: Path | None = None, digest: str | None = None,
                  workspace_path: Path | None = None, title: str | None = None,
                  computer: Computer, progress: Progress | None = None,
                  say: Say) -> Continued:
    """Continue relinquished item ``item_id`` on this computer (see the module docstring).

    Args:
        item_id: the item's full id.
        from_dir: a copy of the run folder: verified, copied into this computer's run
            folder of the item and verified again; the new run uses the copy.
        digest: the checkpoint's expected SHA-256 (needed without a cloud on a computer
            that did not relinquish the item).
        workspace_path: this computer's workspace (its ``run_folder``, and the one the run
            uses), default: found from the current folder.
        title: the item's title when neither ``RUN/item.json``, this computer nor the team
            knows it (default: the process's).
        computer: this computer.
        progress: ``progress(bytes_done, bytes_total)`` while hashing.
        say: one line of talk per step.

    Returns:
        The :class:`Continued` outcome.

    Raises:
        Refused: see :func:`prepare_continue`; or another computer claimed it first.
        NotFound, UserError, CloudError: see :func:`prepare_continue`.
    """
    from bees_cli.handover.adopt import say_copied
    from bees_cli.handover.continue_ import prepare_continue
    from bees_cli.record.fires import FireLog
    from bees_cli.record.local import LocalRecord

    here = computer
    ready = prepare_continue(item_id, from_dir=from_dir, digest=digest,
                             workspace_path=workspace_path, computer=here, progress=progress)
    item_id, restart, sha256 = ready["item"], ready["restart"], ready["sha256"]
    carried = _carried_and_claimed(here, ready)
    aside = keep_aside(ready, say)
    if ready["copied"] is not None and from_dir is not None:  # said once the copy is used
        say_copied(item_id, from_dir, ready["copied"], say)
    say(f"{item_id}: checkpoint {sha256[:12]}… valid; eligible to restart at {restart}")
    record = LocalRecord(here.record_path)
    run = _record_the_run(record, here, ready, carried, title)
    _seed_history(record, here, ready, carried, run, aside)
    FireLog(here.record_path).set_claim(item_id, "owner" if here.login else "no_cloud",
                                        computer=here.computer, detail=None,
                                        tried=datetime.now(UTC), epoch=carried.epoch)
    return Continued(item=item_id, run_folder=str(ready["folder"]), stage=restart,
                     checkpoint_sha256=sha256, journal=len(carried.journal), run=run,
                     started=False)


@dataclass(frozen=True)
class _Carried:
    """What a verified checkpoint carries into the next run: its journal, its story (format
    2: history, created, review rounds), its pieces (format 3: unfinished ones restart,
    finished ones keep their saved results), and the owner generation the claim was
    granted (None without a cloud)."""

    journal: list[JournalEntry]
    story: Story | None
    pieces: list[Piece]
    epoch: int | None


def _carried_and_claimed(here: Computer, ready: dict[str, Any]) -> _Carried:
    """Read what the checkpoint of ``ready`` (:func:`prepare_continue`'s) carries, then
    claim the item (step 5). A refusal undoes the ``--from`` copy: the disk stays as it was.

    Raises:
        Refused: the journal is not readable, or another computer claimed the item first.
        CloudUnreachable, CloudError: see :func:`~bees_cli.handover.continue_.claim_here`.
    """
    from bees_cli.engine.models import JournalEntry
    from bees_cli.handover.checkpoint_pieces import seeded_piece
    from bees_cli.handover.continue_ import claim_here
    from bees_cli.record.story import Story

    item_id, checkpoint, copied = ready["item"], ready["checkpoint"], ready["copied"]
    try:
        try:
            journal = [JournalEntry.model_validate(e) for e in checkpoint["journal"]]
        except ValueError as error:
            raise Refused(f"checkpoint.json: its journal is not readable ({error})") from None
        # format 2: the item's story (history, created, review rounds); verified with the file
        story = (Story.model_validate(checkpoint["story"])
                 if checkpoint.get("story") is not None else None)
        # format 3: the run's pieces (unfinished: restart; finished: their saved results)
        pieces = [seeded_piece(entry, item_id=item_id, run_folder=ready["folder"])
                  for entry in checkpoint.get("pieces") or []]
        return _Carried(journal, story, pieces, claim_here(here, item_id))
    except BaseException:
        if copied is not None:  # a refused continue leaves the disk as it was
            copied.undo()
        raise


def _record_the_run(record: LocalRecord, here: Computer, ready: dict[str, Any],
                    carried: _Carried, title: str | None) -> int:
    """Record the item as its next run, starting at the restart stage from the top: made
    afresh on a computer that never had it (created as the story says), else restarted;
    return the run number (the item's last run here + 1; a computer that never saw the
    item counts from ``RUN/item.json``'s run, else the relinquished run as 1)."""
    from bees_cli.engine.items import item_input, make_item
    from bees_cli.engine.models import ItemInput, ReviewRounds
    from bees_cli.handover.next_run import continued_title, next_attempts, previous_outputs
    from bees_cli.handover.store import read_item

    item_id, folder, snapshot = ready["item"], ready["folder"], ready["snapshot"]
    restart, story = ready["restart"], carried.story
    try:
        row = record.item(item_id)
    except Ambiguous:
        raise
    except NotFound:
        row = None
    previous = (ItemInput.model_validate_json(row.input)
                if row is not None and row.input else None)
    kept_run = read_item(folder).get("run")
    run = (previous.run if previous is not None
           else kept_run if isinstance(kept_run, int) else 1) + 1
    item_title = continued_title(here, item_id, folder, row, title, snapshot)
    given = {"start_stage": restart, "journal": carried.journal, "run": run,
             "previous": previous_outputs(folder, snapshot, restart),
             "attempts": next_attempts(ready["checkpoint"]),
             "reviews": (ReviewRounds.model_validate(story.reviews.model_dump())
                         if story is not None else None)}
    if row is None:
        make_item(record, snapshot, item_id=item_id, title=item_title, run_folder=folder,
                  workspace=snapshot.workspace_root, stage=restart,
                  created=story.created if story is not None else None,
                  created_on=story.created_on if story is not None else None, **given)
    else:
        item = item_input(record, snapshot, item_id=item_id, title=item_title,
                          run_folder=folder, **given)
        record.restart_item(item_id, input=item.model_dump_json(), run_folder=str(folder),
                            stage=restart)
    return run


def _seed_history(record: LocalRecord, here: Computer, ready: dict[str, Any],
                  carried: _Carried, run: int, aside: Path | None = None) -> None:
    """Keep what the checkpoint carries in this computer's record: the earlier runs'
    history first, then the journal, the pieces and the ``continued`` fact of this run."""
    from bees_cli.record.story import import_story

    item_id, checkpoint, sha256 = ready["item"], ready["checkpoint"], ready["sha256"]
    if carried.story is not None:  # the earlier runs' history first, then this run's facts
        import_story(record, item_id, carried.story, machine_id=here.machine_id,
                     computer=here.computer, run_folder=str(ready["folder"]))
    for entry in carried.journal:
        record.add_journal(item_id, entry.model_dump(mode="json"))
    seed_pieces(record, carried.pieces)
    record.add_fact(item_id, ContinuedFact(
        stage=ready["restart"], from_computer=checkpoint["computer"], checkpoint_sha256=sha256,
        restart_stages=dict(checkpoint["restart_stages"]), files=len(checkpoint["files"]),
        journal=len(carried.journal), pieces=len(carried.pieces), run=run,
        **continued_words(ready, aside)),
        key=f"continued:{sha256}")

