"""Handover: ``bees relinquish ITEM`` on the owner, ``bees continue ITEM`` on another computer."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from bees_cli.errors import EngineError, Refused

if TYPE_CHECKING:
    from bees_cli.handover.checkpoint import Progress
    from bees_cli.handover.continue_ import Continued
    from bees_cli.handover.relinquish import Relinquished
    from bees_cli.usecases.bees import Bees


async def relinquish(bees: Bees, item_id: str) -> Relinquished:
    """Relinquish item ``item_id`` on this computer (DESIGN.md, Handover): the run stops
    with all its pieces, writes its checkpoint and tells Bees Cloud the item is free.

    Raises:
        Refused: another computer owns the item (exit 3, naming it); it is free, done,
            cancelled or not started; the checkpoint could not be written (the reason names
            the file and the limit; the stage then waits, failed, for a retry).
        NotFound: no such item here (and none in Bees Cloud).
        EngineError: ``bees run`` is not up on this computer.
        CloudError: the cloud cannot be reached (nothing changed).
    """
    from bees_cli.engine.handover_models import RELINQUISH_UPDATE, HandoverOutput
    from bees_cli.engine.models import PersonInput
    from bees_cli.handover.relinquish import RELINQUISH_TIMEOUT, Relinquished, relinquishable
    from bees_cli.record.local import now_utc
    from bees_cli.usecases.control import NOT_UP, start_hint

    row = await asyncio.to_thread(relinquishable, bees.computer, item_id)
    address = await asyncio.to_thread(bees.worker_address)
    if address is None:
        raise EngineError(NOT_UP, hint=start_hint(f"bees relinquish {row.id}"))
    person = PersonInput(who=bees.who(), at=now_utc())
    engine = await bees.engine(address)
    answer = await engine.update(row.id, RELINQUISH_UPDATE, person, HandoverOutput,
                                 timeout=RELINQUISH_TIMEOUT)
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


async def continue_item(bees: Bees, item_id: str, *, from_dir: Path | None = None,
                        digest: str | None = None, workspace_path: Path | None = None,
                        title: str | None = None,
                        progress: Progress | None = None) -> Continued:
    """Continue relinquished item ``item_id`` on this computer (DESIGN.md, Handover): verify
    the checkpoint and every file, check eligibility, claim it, record the next run
    (:func:`bees_cli.handover.continue_.continue_item`), and start it now when ``bees run``
    is up here (else ``bees run`` starts it).

    Raises:
        Refused: owned elsewhere, checkpoint invalid, not eligible, claimed first elsewhere.
        NotFound, UserError, CloudError: no such item, bad ``--from``, cloud unreachable.
    """
    from bees_cli.handover.continue_ import continue_item as make_next_run
    from bees_cli.usecases.run import start_pending

    done = await asyncio.to_thread(
        make_next_run, item_id, from_dir=from_dir, digest=digest,
        workspace_path=workspace_path, title=title, computer=bees.computer,
        progress=progress, say=bees.say)
    address = await asyncio.to_thread(bees.worker_address)
    if address is None:
        bees.say("bees run is not running here: the item starts when `bees run` starts")
        return done
    engine = await bees.engine(address)
    await start_pending(engine, bees.record, bees.computer, only=done.item)
    bees.say("started; bees run picks it up")
    return replace(done, started=True)
